"""Loading models into Relax: ONNX, torch .pt2, TVMScript .py, IRModule.

Every loader gives a :class:`Model`: a Relax IRModule whose ``main`` takes only
the model's real inputs (weights are bound as constants) and the list of those
inputs as :class:`InputSpec`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import sys
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import tvm
from tvm import relax

from .errors import ModelError

ShapeOverrides = Mapping[str, Sequence[int]]


@dataclasses.dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple
    dtype: str

    @property
    def is_integer(self) -> bool:
        return np.dtype(self.dtype).kind in "iub"

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


@dataclasses.dataclass
class Model:
    mod: tvm.IRModule
    inputs: list
    source: str  # file path, or "<IRModule>"
    sha256: str

    def input_names(self) -> list:
        return [spec.name for spec in self.inputs]

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "sha256": self.sha256,
            "inputs": [spec.to_json() for spec in self.inputs],
        }


def load_model(source: Union[str, os.PathLike, tvm.IRModule], shapes: Optional[ShapeOverrides] = None) -> Model:
    """Load a model file (.onnx, .pt2, .py) or wrap an IRModule."""
    shapes = dict(shapes or {})
    if isinstance(source, tvm.IRModule):
        return from_irmodule(source, "<IRModule>", _module_hash(source))
    path = os.fspath(source)
    if not os.path.exists(path):
        raise ModelError(f"model file not found: {path}")
    if os.path.isdir(path):
        raise ModelError(f"model path is a directory, not a model file: {path}")
    ext = os.path.splitext(path)[1].lower()
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if ext == ".onnx":
        mod = _load_onnx(path, shapes)
    elif ext == ".pt2":
        mod = _load_pt2(path)
    elif ext == ".py":
        mod = _load_tvmscript(path)
    else:
        raise ModelError(f"{path}: unknown model format '{ext or '(no extension)'}' (expected .onnx, .pt2 or .py)")
    model = from_irmodule(mod, path, digest)
    if ext != ".onnx" and shapes:
        unknown = sorted(set(shapes) - set(model.input_names()))
        if unknown:
            raise ModelError(f"--shape names unknown input(s) {', '.join(unknown)}; the model has {', '.join(model.input_names())}")
    return model


def from_irmodule(mod: tvm.IRModule, source: str, digest: str) -> Model:
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        raise ModelError(f"{source}: the IRModule has no 'main' function")
    main = mod["main"]
    if not isinstance(main, relax.Function):
        raise ModelError(f"{source}: 'main' is not a Relax function")
    specs = []
    for param in main.params:
        ty = param.ty
        shape = getattr(ty, "shape", None)
        if not isinstance(ty, relax.TensorType) or shape is None or not hasattr(shape, "values"):
            raise ModelError(f"{source}: input '{param.name}' is not a tensor of known shape")
        dims = []
        for dim in shape.values:
            if type(dim).__name__ != "IntImm":
                raise ModelError(
                    f"{source}: input '{param.name}' has a dynamic dimension '{dim}'; "
                    f"fix it with --shape {param.name}=..."
                )
            dims.append(int(dim))
        specs.append(InputSpec(param.name, tuple(dims), str(ty.dtype)))
    return Model(mod=mod, inputs=specs, source=source, sha256=digest)


def _module_hash(mod: tvm.IRModule) -> str:
    import tvm_ffi

    return "structural:%016x" % (tvm_ffi.structural_hash(mod) & (2**64 - 1))


def _load_onnx(path: str, shapes: ShapeOverrides) -> tvm.IRModule:
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    try:
        model = onnx.load(path)
    except Exception as err:  # protobuf raises several unrelated types
        raise ModelError(f"{path}: not a readable ONNX model ({type(err).__name__})") from None
    if not model.graph.node:
        raise ModelError(f"{path}: not a readable ONNX model (the graph has no nodes)")
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    names = [i.name for i in graph_inputs]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ModelError(f"--shape names unknown input(s) {', '.join(unknown)}; the model has {', '.join(names)}")
    shape_dict, dtype_dict = {}, {}
    for inp in graph_inputs:
        ttype = inp.type.tensor_type
        dtype_dict[inp.name] = onnx.helper.tensor_dtype_to_np_dtype(ttype.elem_type).name
        if inp.name in shapes:
            shape = [int(d) for d in shapes[inp.name]]
            if len(shape) != len(ttype.shape.dim):
                raise ModelError(
                    f"--shape {inp.name}: rank {len(shape)} given, the model's input has rank {len(ttype.shape.dim)}"
                )
        else:
            shape = []
            for dim in ttype.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value > 0:
                    shape.append(dim.dim_value)
                else:
                    label = dim.dim_param or "?"
                    raise ModelError(
                        f"{path}: input '{inp.name}' has a dynamic dimension '{label}'; "
                        f"fix it with --shape {inp.name}=" + ",".join(
                            str(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else "N"
                            for d in ttype.shape.dim
                        )
                    )
        shape_dict[inp.name] = shape
    try:
        return from_onnx(model, shape_dict=shape_dict, dtype_dict=dtype_dict, keep_params_in_input=False)
    except tvm.error.OpNotImplemented as err:
        raise ModelError(f"{path}: {_first_line(err)}") from None
    except Exception as err:
        raise ModelError(f"{path}: the ONNX frontend cannot import this model: {_first_line(err)}") from None


def _load_pt2(path: str) -> tvm.IRModule:
    try:
        import torch
    except ImportError:
        raise ModelError(f"{path}: loading .pt2 files needs torch (pip install torch==2.13.0)") from None
    from tvm.relax.frontend.torch import from_exported_program

    try:
        program = torch.export.load(path)
    except Exception as err:
        raise ModelError(f"{path}: not a torch.export .pt2 file ({_first_line(err)})") from None
    try:
        return from_exported_program(program, keep_params_as_input=False, unwrap_unit_return_tuple=True)
    except Exception as err:
        raise ModelError(f"{path}: the torch frontend cannot import this program: {_first_line(err)}") from None


def _load_tvmscript(path: str) -> tvm.IRModule:
    name = "_numguard_model_" + hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"{path}: cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    # the TVMScript parser looks the source up through sys.modules
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise ModelError(f"{path}: the script failed to load: {type(err).__name__}: {_first_line(err)}") from None
    finally:
        sys.modules.pop(name, None)
    found = [(k, v) for k, v in vars(module).items() if isinstance(v, tvm.IRModule)]
    if not found:
        raise ModelError(f"{path}: defines no IRModule (decorate a class with @I.ir_module)")
    if len(found) > 1:
        preferred = [kv for kv in found if kv[0] in ("Module", "mod", "model")]
        if len(preferred) != 1:
            names = ", ".join(k for k, _ in found)
            raise ModelError(f"{path}: defines several IRModules ({names}); name the one to use 'Module'")
        found = preferred
    return found[0][1]


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # TVM errors often start with a traceback header; the message is at the end
    for ln in reversed(lines):
        if "Error" in ln or "not supported" in ln or "not implemented" in ln.lower():
            return ln[:300]
    return (lines[-1] if lines else type(err).__name__)[:300]
