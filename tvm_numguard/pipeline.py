"""Pipelines as replayable text: ``DecomposeOpsForInference,FastMathTransform,zero``.

A Relax pipeline is a comma-separated list of parts run in order:
  - ``zero`` or ``default`` (the target's optimizing pipeline, ending in VM lowering),
  - a ``tvm.relax.transform`` pass that needs no arguments (``FastMathTransform``),
  - ``module:callable`` or ``path/to/file.py:callable`` returning a Pass (called
    with the Target when it takes one argument).
When no part is ``default``, the VM lowering (``relax.get_pipeline("default")``,
the one ``tvm.compile`` uses) is appended so the result is buildable.

A TIR pipeline uses the same syntax with ``default`` meaning TVM's default TIR
pipeline, ``tvm.tirx.transform`` names as passes; parts before ``default`` see
TIR with blocks, parts after it see lowered, flattened TIR.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import os
import sys

import tvm
from tvm import relax

from .errors import PipelineError


@dataclasses.dataclass(frozen=True)
class CompileConfig:
    """Everything a compilation needs to be replayed, as text."""

    pipeline: str = "default"
    tir_pipeline: str = "default"
    target: str = "llvm"
    opt_level: int = 3

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def make_target(self) -> tvm.target.Target:
        return make_target(self.target)

    def relax_pass(self, target: tvm.target.Target) -> tvm.transform.Pass:
        return relax_pipeline(self.pipeline, target)

    def tir_pass(self, target: tvm.target.Target) -> str:
        return tir_pipeline(self.tir_pipeline, target)

    def validate(self) -> None:
        """Resolve every part once, so a typo fails before any work is done."""
        target = self.make_target()
        self.relax_pass(target)
        self.tir_pass(target)


def make_target(text: str) -> tvm.target.Target:
    try:
        target = tvm.target.Target(text)
    except Exception as err:
        raise PipelineError(f"unknown target '{text}': {str(err).strip().splitlines()[-1][:200]}") from None
    if not tvm.runtime.enabled(target.kind.name):
        raise PipelineError(f"target '{text}' is not available in this TVM build")
    if not target_device(target).exist:
        raise PipelineError(f"target '{text}' has no device on this machine")
    return target


def target_device(target: tvm.target.Target):
    """The device a build for ``target`` runs on."""
    kind = target.kind.name
    return tvm.cpu(0) if kind in ("llvm", "c") else tvm.device(kind, 0)


def _split(text: str, what: str) -> list:
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise PipelineError(f"empty part in {what} '{text}'")
    return parts


def relax_pipeline(text: str, target: tvm.target.Target) -> tvm.transform.Pass:
    parts = _split(text, "pipeline")
    passes = []
    for part in parts:
        if part == "zero":
            passes.append(relax.get_pipeline("zero"))
        elif part == "default":
            passes.append(relax.get_default_pipeline(target))
        elif ":" in part:
            passes.append(_import_pass(part, target))
        else:
            passes.append(_named_pass(part, relax.transform, "tvm.relax.transform"))
    if "default" not in parts:
        passes.append(relax.get_pipeline("default"))
    return tvm.transform.Sequential(passes)


def tir_pipeline(text: str, target: tvm.target.Target) -> str:
    """The name of a registered TIR pipeline that runs ``text``'s parts.

    ``tvm.tirx.build`` only takes a pipeline by name, so a pipeline with parts
    of its own is registered under a name derived from its text (the same text
    always registers the same factory, so this is idempotent). The finalize
    passes (LowerTVMBuiltin, LowerIntrin) stay TVM's default ones.
    """
    parts = _split(text, "TIR pipeline")
    if parts == ["default"]:
        return "default"
    # resolve every part now, so a typo fails before any build
    for part in parts:
        _tir_part(part, target)
    name = "numguard:" + text

    def factory():
        default_main, finalize_host, finalize_device = tvm.tirx.get_tir_pipeline("default")
        passes = [default_main if part == "default" else _tir_part(part, target) for part in parts]
        return tvm.transform.Sequential(passes), finalize_host, finalize_device

    tvm.tirx.register_tir_pipeline(name, factory)
    return name


def _tir_part(part: str, target: tvm.target.Target):
    if part == "default":
        return None
    if ":" in part:
        return _import_pass(part, target)
    return _named_pass(part, tvm.tirx.transform, "tvm.tirx.transform")


def _named_pass(name: str, namespace, label: str) -> tvm.transform.Pass:
    factory = getattr(namespace, name, None)
    if factory is None or not callable(factory) or name.startswith("_"):
        raise PipelineError(f"unknown pipeline part '{name}': not zero, default, module:callable, or a pass in {label}")
    try:
        result = factory()
    except TypeError:
        raise PipelineError(f"pass '{name}' needs arguments; wrap it in a module:callable part") from None
    if not isinstance(result, tvm.transform.Pass):
        raise PipelineError(f"'{name}' in {label} is not a pass")
    return result


def _import_from_cwd(module_name: str):
    """Import like ``python -m`` would: modules in the working directory count."""
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _import_pass(spec: str, target: tvm.target.Target) -> tvm.transform.Pass:
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise PipelineError(f"pipeline part '{spec}' must look like module:callable")
    try:
        if module_name.endswith(".py"):
            if not os.path.exists(module_name):
                raise PipelineError(f"pipeline part '{spec}': file {module_name} not found")
            name = "_numguard_pass_" + os.path.splitext(os.path.basename(module_name))[0]
            mspec = importlib.util.spec_from_file_location(name, module_name)
            module = importlib.util.module_from_spec(mspec)
            sys.modules[name] = module  # TVMScript in the file needs it
            mspec.loader.exec_module(module)
        else:
            module = _import_from_cwd(module_name)
    except PipelineError:
        raise
    except Exception as err:
        raise PipelineError(f"pipeline part '{spec}': cannot import {module_name} ({type(err).__name__}: {err})") from None
    factory = getattr(module, attr, None)
    if factory is None:
        raise PipelineError(f"pipeline part '{spec}': {module_name} has no attribute '{attr}'")
    if isinstance(factory, tvm.transform.Pass):
        return factory
    try:
        takes_target = len(inspect.signature(factory).parameters) >= 1
    except (TypeError, ValueError):
        takes_target = False
    result = factory(target) if takes_target else factory()
    if not isinstance(result, tvm.transform.Pass):
        raise PipelineError(f"pipeline part '{spec}' returned {type(result).__name__}, not a tvm.transform.Pass")
    return result
