"""numguard on a GPU target: what this machine checks without a GPU (the CUDA
toolkit compiles, nothing runs) and, marked ``gpu``, what needs a device.

The GPU reference is the model with every optional event skipped, each kernel
given dlight's Fallback schedule (``numguard.GpuFallback``) and the GPU lowering
the catalog requires; it must build and pass VerifyMemory (a required pass)."""

import os

import pytest
import tvm

import tvm_numguard as ng
from tvm_numguard.base.errors import PipelineError
from tvm_numguard.ir.instrument.catalog import GPU_REQUIRED_PASSES, is_required
from tvm_numguard.ir.model import load_model
from tvm_numguard.build.compile import BuildRequest, compile_model
from tvm_numguard.ir.targets import GPU_FALLBACK, NO_GPU, gpu_archs, parse_target, require_device
from clirun import assert_one_line_error, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
CUDA = '{"kind": "cuda", "arch": "sm_90"}'
HAS_GPU = bool(gpu_archs()) and tvm.get_global_func("device_api.cuda", allow_missing=True) is not None
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA device on this machine")


@pytest.fixture
def cuda_never_queried(monkeypatch):
    """Fail the test where anything asks the CUDA device (which initializes CUDA in this process)."""
    def refuse(self):
        raise AssertionError("a CUDA device was queried in numguard's own process")

    monkeypatch.setattr(type(tvm.cuda(0)), "exist", property(refuse))


# -- targets ----------------------------------------------------------------
def test_the_old_string_form_is_translated_with_a_note():
    spec = parse_target("cuda -arch=sm_90")
    assert spec.config == {"kind": "cuda", "arch": "sm_90"} and "JSON form" in spec.note
    assert str(spec.make().arch) == "sm_90"
    assert parse_target(CUDA).config == {"kind": "cuda", "arch": "sm_90"} and parse_target(CUDA).note == ""
    assert parse_target("llvm").config == "llvm"


def test_a_gpu_target_without_an_arch_gets_the_gpus_or_the_fallback_never_a_device_query():
    assert parse_target("cuda", archs=["sm_90"]).config == {"kind": "cuda", "arch": "sm_90"}
    assert parse_target("cuda", archs=[]).config == {"kind": "cuda", "arch": "sm_50"}
    with pytest.raises(PipelineError, match="JSON"):
        parse_target('{"kind": "cuda", ')


def test_no_gpu_is_one_line_and_exit_2_in_seconds(capsys):
    with pytest.raises(PipelineError, match="no CUDA device"):
        require_device(parse_target("cuda", archs=[]), archs=[])
    require_device(parse_target("llvm"), archs=[])  # a CPU target needs none
    if HAS_GPU:
        pytest.skip("this machine has a GPU")
    code, _, err = run_cli(capsys, "bisect", MLP, "--low", "0", "--high", "1", "--target", "cuda")
    assert_one_line_error(code, err, NO_GPU.format(kind="cuda"))


# -- the catalog and the GPU reference ---------------------------------------
def test_the_catalog_marks_the_gpu_scheduling_and_lowering_required():
    for name in (GPU_FALLBACK, "tirx.SplitHostDevice", "s_tir.ThreadSync", "s_tir.LowerThreadAllreduce",
                 "tirx.VerifyMemory"):
        assert name in GPU_REQUIRED_PASSES and is_required(name)
    assert not is_required("dlight.gpu.Reduction@fused_mean")  # the user's dlight: the reference uses Fallback instead


def test_passes_lists_the_gpu_reference_events_as_required(capsys, cuda_never_queried):
    code, out, err = run_cli(capsys, "passes", MLP, "--target", CUDA)
    assert code == 0, err
    rows = {line.split()[1]: line.split()[4] for line in out.splitlines() if line[:6].strip().isdigit()}
    assert rows[f"{GPU_FALLBACK}#0"] == "required" and rows["tirx.SplitHostDevice#0"] == "required"
    assert rows["ApplyDefaultSchedule#0"] == "wrapper"  # its rules, one event per kernel, are the optional ones
    assert rows["dlight.gpu.Reduction@matmul1#0"] == "optional"


def _reference(model, pipeline="default"):
    config = ng.CompileConfig(pipeline=pipeline, target=CUDA)
    build = compile_model(model.mod, config, BuildRequest(reference=True))
    assert build.ok, build.error
    skipped = {s.split("#")[0] for s in build.skip}
    assert "FuseOps" in skipped and [s for s in skipped if s.startswith("dlight.gpu.")]  # the user's schedules: skipped
    assert not skipped & GPU_REQUIRED_PASSES
    ran = " ".join(line for line in build.trace if line.startswith("BISECT: running"))
    assert f"{GPU_FALLBACK}#0" in ran and "tirx.VerifyMemory#0" in ran  # scheduled, and checked
    return build


def test_the_gpu_reference_of_the_mlp_builds_and_passes_verify_memory(cuda_never_queried):
    _reference(load_model(MLP))
    # zero has no scheduling of its own: the fallback schedules its kernels, so it builds for CUDA too
    config = ng.CompileConfig(pipeline="zero", target=CUDA)
    assert compile_model(load_model(MLP).mod, config).ok


@pytest.mark.slow  # SqueezeNet and a BERT block compile for CUDA in about a minute together
def test_the_gpu_reference_of_squeezenet_and_a_bert_block_builds_and_passes_verify_memory(tmp_path):
    from tvm_numguard.testing import light_model
    from tvm_numguard.testing.zoo.blocks import export, missing_requirements

    _reference(load_model(light_model("squeezenet", seed=0, directory=str(tmp_path))))
    if missing_requirements():
        pytest.skip(missing_requirements())
    _reference(load_model(export("bert-layer", str(tmp_path))))


# -- on a device -------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
def test_the_demo_on_cuda_names_to_mixed_precision():
    report = ng.bisect(MLP, ng.CompileConfig(pipeline="ToMixedPrecision,default", target="cuda"),
                       ng.Options(low=0.0, high=1.0))
    assert report.culprit == "ToMixedPrecision#0"
