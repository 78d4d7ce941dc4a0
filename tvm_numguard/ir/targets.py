"""Targets as the user types them, made without touching a device.

TVM 0.27 refuses the old string form with options (``cuda -arch=sm_90``:
"CLI target string form ... is no longer supported") and takes a JSON dict
(``{"kind": "cuda", "arch": "sm_90"}``). ``parse_target`` takes both, the plain
kind and the JSON text, and says how it translated the old form.

``Target("cuda")`` without an arch queries the GPU for one, which initializes
CUDA in the calling process; a process forked after that cannot use CUDA
(cudaErrorInitializationError), and numguard's workers are forked. So a GPU
target without an arch gets the arch of the first GPU from ``nvidia-smi`` (a
separate program: this process stays uninitialized), and whether a GPU is
present is asked the same way (``gpu_archs``), never through ``tvm.cuda(0)``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import shutil
import subprocess
from typing import Optional

import tvm

from ..base.errors import PipelineError

GPU_KINDS = ("cuda",)
GPU_FALLBACK = "numguard.GpuFallback"  # the pass name of ``gpu_fallback``: required on GPU targets
# the arch TVM falls back to when it finds no CUDA device (its target_kind.cc): a GPU
# target built where no GPU is (numguard passes, check) compiles for it
FALLBACK_ARCH = "sm_50"
CUDA_STARTED = ("CUDA was initialized in this process before numguard ran (a run on the GPU, torch.cuda, "
                "tvm.cuda().exist), and no worker forked from it could use the GPU: every build and run is made "
                "in this process (a crash inside TVM ends it; Ctrl-C waits for TVM's call in progress). Call "
                "numguard before anything touches the GPU, or run it from the command line, to have workers")
NO_GPU = ("no CUDA device on this machine (target {kind}): bisect, search, trace, fix and the guard run the "
          "model; numguard passes and check still work (they compile only)")


@dataclasses.dataclass(frozen=True)
class TargetSpec:
    """A target as TVM 0.27 takes it (``config``: a kind name or a dict), and
    ``note``: how the user's text was translated ("" when it was not)."""

    config: object
    note: str = ""

    @property
    def kind(self) -> str:
        return self.config["kind"] if isinstance(self.config, dict) else str(self.config)

    @property
    def is_gpu(self) -> bool:
        return self.kind in GPU_KINDS

    def make(self) -> tvm.target.Target:
        """The TVM Target (queries no device: a GPU target carries its arch)."""
        try:
            return tvm.target.Target(self.config)
        except Exception as err:  # TVM raises several types for a bad target
            raise PipelineError(f"unknown target {self.config!r}: "
                                f"{str(err).strip().splitlines()[-1][:200]}") from None


def parse_target(text: str, archs: Optional[list] = None) -> TargetSpec:
    """``text``: a kind (``llvm``, ``cuda``), TVM 0.27's JSON form, or the old
    string form with ``-key=value`` options (translated, with a note).
    ``archs``: the GPUs' archs (default: asked of nvidia-smi when needed)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            config = json.loads(text)
        except ValueError as err:
            raise PipelineError(f"target {text!r} is not valid JSON: {err}") from None
        if not isinstance(config, dict) or "kind" not in config:
            raise PipelineError(f"target {text!r} must be a JSON object with a \"kind\"")
        note = ""
    else:
        words = text.split()
        if not words:
            raise PipelineError("the target is empty: give a kind (llvm, cuda) or TVM's JSON form")
        config, note = {"kind": words[0]}, ""
        for word in words[1:]:
            key, sep, value = word.lstrip("-").partition("=")
            if not word.startswith("-") or not key:
                raise PipelineError(f"target {text!r}: option {word!r} must look like -key=value")
            config[key] = value if sep else True
        if len(words) > 1:
            note = (f"target {text!r} is TVM's old string form, which TVM 0.27 refuses; "
                    f"used its JSON form {json.dumps(config)}")
    if config["kind"] in GPU_KINDS and "arch" not in config:
        found = gpu_archs() if archs is None else archs
        config = {**config, "arch": found[0] if found else FALLBACK_ARCH}
    elif len(config) == 1:
        config = config["kind"]
    return TargetSpec(config, note)


def local_target(text: str) -> str:
    """The target of the builds numguard's own process makes and runs to
    diagnose (the float64 oracle, value captures, domain checks, the precision
    widening): ``text``, or plain ``llvm`` for a GPU target, whose device this
    process never initializes (``Workers.runs_in_workers``). Those builds ask
    what values a model computes, which a CPU build answers; the builds judged
    (the pipeline as written, the reference, a bisection's) run on the device,
    in workers."""
    return "llvm" if parse_target(text, archs=[]).is_gpu else text


def gpu_archs() -> list:
    """The archs (``sm_90``) of this machine's CUDA GPUs, asked of nvidia-smi in
    its own process (this one initializes nothing); [] where there is none."""
    program = shutil.which("nvidia-smi")
    if program is None:
        return []
    try:
        done = subprocess.run([program, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    archs = []
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        major, _, minor = line.strip().partition(".")
        if major.isdigit() and minor.isdigit():
            archs.append(f"sm_{major}{minor}")
    return archs


def cuda_started_here() -> bool:
    """Whether this process has initialized the CUDA driver (``cuInit``),
    asked without initializing it: until then every driver call, here
    ``cuCtxGetCurrent``, answers CUDA_ERROR_NOT_INITIALIZED (3). False where
    the driver library does not load (no GPU driver)."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    context = ctypes.c_void_p()
    return driver.cuCtxGetCurrent(ctypes.byref(context)) != 3


def require_device(spec: TargetSpec, archs: Optional[list] = None) -> None:
    """Raise PipelineError (one line) where ``spec`` needs a device this machine
    lacks: no GPU that nvidia-smi sees, or no CUDA runtime in this TVM (its
    device API registers only where the driver library loads). Neither question
    initializes CUDA in this process."""
    if not spec.is_gpu:
        return
    found = gpu_archs() if archs is None else archs
    if not found or tvm.get_global_func(f"device_api.{spec.kind}", allow_missing=True) is None:
        raise PipelineError(NO_GPU.format(kind=spec.kind))


def target_of(target) -> tvm.target.Target:
    """A TVM Target from a Target or the text a user gives (``parse_target``)."""
    return target if isinstance(target, tvm.target.Target) else parse_target(str(target)).make()


def is_gpu(target: tvm.target.Target) -> bool:
    return "gpu" in target.keys


def gpu_fallback() -> tvm.transform.Pass:
    """dlight's ``Fallback`` schedule for every kernel no earlier pass scheduled.

    A GPU kernel must bind its loops to blocks and threads or it does not build
    (``Did you forget to bind?``); dlight's ``ApplyDefaultSchedule`` skips the
    functions already marked ``tir.is_scheduled``. numguard appends this pass to
    every Relax pipeline it builds for a GPU target: after the user's own dlight
    pass it changes nothing; in the reference build, where the user's scheduling
    passes are skipped with every other optional event, it gives each kernel the
    plainest schedule there is (one loop nest, split over blocks and threads),
    the GPU counterpart of the CPU reference's unscheduled loops::

        # before: a legalized kernel, no thread binding
        for i, j in T.grid(4, 16): ...
        # after
        for i_j_fused_0 in T.thread_binding(1, thread="blockIdx.x"):
            for i_j_fused_1 in T.thread_binding(1024, thread="threadIdx.x"): ...
    """
    from tvm.s_tir import dlight

    @tvm.transform.module_pass(opt_level=0, name=GPU_FALLBACK)
    def fallback(mod, ctx):
        return dlight.ApplyDefaultSchedule(dlight.gpu.Fallback())(mod)

    return fallback


__all__ = ["FALLBACK_ARCH", "GPU_FALLBACK", "GPU_KINDS", "NO_GPU", "gpu_fallback", "is_gpu", "target_of", "TargetSpec",
           "gpu_archs", "parse_target", "require_device"]
