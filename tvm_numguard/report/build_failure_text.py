"""A pipeline that does not build, as text: which pass breaks it, the fix,
and a repro that needs TVM alone (and the model's frontend)."""

from __future__ import annotations

import dataclasses
import os

from .advice import CODE, NOTE, pipeline_code, setup_code, switch_off_lines, wrap_lines

BUILD_FAILURE_SCHEMA = "build-failure-schema.json"


def build_failure_document(failure, config, model, command: str, diagnostics=()) -> dict:
    """The JSON document of a ``BuildFailure`` (validated against its shipped schema)."""
    from .schemas import header, validate
    from .sections import environment

    data = {**header("build_failure"), "command": command,
            "verdict": "build_failure", "environment": environment(config.target), "model": model.to_json(),
            "configuration": config.to_json(),
            "build_failure": {**dataclasses.asdict(failure), "events": list(failure.events),
                              "repro": "\n".join(repro_code(model, config))}}
    data["build_failure"].pop("pipeline")
    if diagnostics:
        data["diagnostics"] = list(diagnostics)
    validate(data, BUILD_FAILURE_SCHEMA)
    return data


def unknown_intrinsic(error: str) -> str:
    """``tirx.atan`` of LLVM's code generator's ``unknown intrinsic tirx.atan``
    (``CodeGenLLVM::CreateIntrinsic``: a float16 atan, asin, sinh... on TVM 0.27), else ``""``."""
    _, marker, rest = (error or "").partition("unknown intrinsic ")
    words = rest.split()
    return words[0].strip("'\".,;:") if marker and words else ""


def build_failure_summary(failure, config, model, command: str = "numguard") -> str:
    """The terminal text of a ``BuildFailure`` of ``config`` (a CompileConfig)
    on ``model``; ``command``: the command that found it, as invoked."""
    if failure.culprit:
        head = f"{command}: BUILD FAILURE: pass {failure.culprit} breaks the build"
    else:
        head = f"{command}: BUILD FAILURE: the model does not build even with every optional pass skipped"
    lines = [head, f"  model     {model.source}",
             f"  pipeline  {config.pipeline}   tir: {config.tir_pipeline}   target: {config.target}",
             f"  error     {failure.error}"]
    if failure.culprit:
        confirmed = ("confirmed: skipping it alone builds" if failure.confirmed
                     else f"not confirmed: skipping it alone still fails ({failure.confirm_error})")
        lines += [f"  culprit   {failure.culprit}: the pipeline builds up to it and fails with it; {confirmed}",
                  f"  bisection {failure.builds} builds over {len(failure.events)} optional events, on "
                  "'builds / does not build'"]
        cfg = {"pipeline": config.pipeline, "target": config.target, "opt_level": config.opt_level}
        lines += switch_off_lines(cfg, [{"id": failure.culprit, "name": failure.culprit_name,
                                         "disabled_pass_reaches": failure.disabled_pass_reaches}])
    else:
        lines.append(f"  reference {failure.reference_error}")
        intrinsic = unknown_intrinsic(failure.reference_error or failure.error)
        lines.append(NOTE + (f"CODEGEN: {config.target}'s code generation has no lowering of {intrinsic} in this "
                             "model's dtype (no pass is at fault)" if intrinsic
                             else "TVM's import or its required lowering fails on this model")
                     + ": report it upstream with the repro below")
    repro = repro_code(model, config)
    frontend = frontend_name(model.source)
    alone = "TVM alone" + (f" and {frontend}" if frontend else "")
    if any("tvm_numguard" in line for line in repro):
        alone += ", with numguard reading what only its text names (the model, or your pipeline parts)"
    lines.append(f"  repro     the failure with {alone}:")
    lines += [CODE + line for line in repro]
    return "\n".join([lines[0]] + wrap_lines(lines[1:]))  # the head stays one greppable line


def frontend_name(source: str) -> str:
    return {".onnx": "onnx", ".pt2": "torch"}.get(os.path.splitext(str(source))[1], "")


def repro_code(model, config) -> list:
    """Python lines that import ``model`` as numguard does and compile it with
    ``config``'s pipeline (the failing call last)."""
    path = os.path.abspath(model.source) if os.path.isfile(str(model.source)) else str(model.source)
    kind = frontend_name(path)
    lines = setup_code(config.target, pipeline_code(config.pipeline))
    if kind == "onnx":
        shapes = {spec.name: list(spec.shape) for spec in model.inputs}
        lines += ["import onnx", "from tvm.relax.frontend.onnx import from_onnx",
                  f"mod = from_onnx(onnx.load({path!r}), shape_dict={shapes!r}, keep_params_in_input=False)"]
    elif kind == "torch":
        lines += ["import torch", "from tvm.relax.frontend.torch import from_exported_program",
                  f"mod = from_exported_program(torch.export.load({path!r}), unwrap_unit_return_tuple=True)"]
    else:
        lines += ["import tvm_numguard", f"mod = tvm_numguard.load_model({path!r}).mod"]
    lines.append(f"with tvm.transform.PassContext(opt_level={config.opt_level}):")
    lines.append("    tvm.compile(mod, target, relax_pipeline=pipeline)  # raises")
    return lines
