"""Loading models into Relax: ONNX, torch .pt2, TVMScript .py, IRModule.

Every loader gives a :class:`Model`: a Relax IRModule whose ``main`` takes only
the model's real inputs (weights are bound as constants) and the list of those
inputs as :class:`InputSpec`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import importlib.util
import io
import logging
import os
import re
import sys
import zipfile
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import tvm
from tvm import relax

from .errors import ModelError
from .quiet import held_stderr, silenced_stderr

ShapeOverrides = Mapping[str, Sequence[int]]


@dataclasses.dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple
    dtype: str

    @property
    def is_integer(self) -> bool:
        return np.dtype(self.dtype).kind in "iub"

    def coerce(self, value) -> np.ndarray:
        """``value`` (e.g. read back from a witness file) as this input's dtype.

        ``.npz`` files keep dtypes numpy does not know natively (bfloat16) as raw
        bytes (``V2``): those are reinterpreted, not converted. Raises ValueError
        for a shape that is not the input's."""
        value = np.asarray(value)
        if tuple(value.shape) != tuple(self.shape):
            raise ValueError(f"input '{self.name}' has shape {list(value.shape)}, the model wants {list(self.shape)}")
        wanted = np.dtype(self.dtype)
        if value.dtype.kind == "V" and value.dtype.itemsize == wanted.itemsize:
            return value.view(wanted)
        return value.astype(wanted)

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


def file_sha256(path: str) -> str:
    """sha256 of a file's bytes: a model's identity in reports (replay checks it)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_model(source: Union[str, os.PathLike, tvm.IRModule], shapes: Optional[ShapeOverrides] = None) -> Model:
    """Load a model file (.onnx, .pt2, .py) or wrap an IRModule.

    ``shapes`` maps input names to concrete shapes (``--shape NAME=D0,D1,...``):
    it fixes dynamic dimensions. For ONNX any dimension may be set (the frontend
    imports the model at that shape); a Relax module (.pt2, .py, IRModule) only
    lets its symbolic dimensions be bound.
    """
    shapes = _check_shape_values(shapes)
    if isinstance(source, tvm.IRModule):
        return from_irmodule(source, "<IRModule>", _module_hash(source), shapes)
    if not isinstance(source, (str, os.PathLike)):
        raise ModelError(f"cannot load a model from a {type(source).__name__} (give a file path or a tvm.IRModule)")
    path = os.fspath(source)
    if not os.path.exists(path):
        raise ModelError(f"model file not found: {path}")
    if os.path.isdir(path):
        raise ModelError(f"model path is a directory, not a model file: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".onnx", ".pt2", ".py"):
        raise ModelError(f"{path}: unknown model format '{ext or '(no extension)'}' (expected .onnx, .pt2 or .py)")
    try:
        digest = file_sha256(path)
    except OSError as err:
        raise ModelError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
    if ext == ".onnx":
        # the frontend imports the model at the given shapes; nothing left to bind
        return from_irmodule(_load_onnx(path, shapes), path, digest)
    mod = _load_pt2(path) if ext == ".pt2" else _load_tvmscript(path)
    return from_irmodule(mod, path, digest, shapes)


def from_irmodule(mod: tvm.IRModule, source: str, digest: str, shapes: Optional[ShapeOverrides] = None) -> Model:
    """Wrap a Relax IRModule; ``shapes`` binds the symbolic dimensions of main's inputs."""
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        raise ModelError(f"{source}: the IRModule has no 'main' function")
    main = mod["main"]
    if not isinstance(main, relax.Function):
        raise ModelError(f"{source}: 'main' is not a Relax function")
    shapes = _check_shape_values(shapes)
    if shapes:
        main = _bind_shapes(main, source, shapes)
        mod = mod.clone()
        mod.update_func(mod.get_global_var("main"), main)
    specs = []
    for param in main.params:
        ty = param.ty
        shape = getattr(ty, "shape", None)
        if not isinstance(ty, relax.TensorType) or shape is None or not hasattr(shape, "values"):
            raise ModelError(f"{source}: input '{param.name}' is not a tensor of known shape")
        dims = []
        for dim in shape.values:
            if not _is_static(dim):
                raise ModelError(
                    f"{source}: input '{param.name}' has a dynamic dimension '{dim}'; "
                    f"fix it with --shape {param.name}=" + ",".join(_dim_text(d) for d in shape.values)
                )
            dims.append(int(dim))
        specs.append(InputSpec(param.name, tuple(dims), str(ty.dtype)))
    return Model(mod=mod, inputs=specs, source=source, sha256=digest)


def _is_static(dim) -> bool:
    return type(dim).__name__ == "IntImm"


def _dim_text(dim) -> str:
    return str(int(dim)) if _is_static(dim) else str(dim)


def _check_shape_values(shapes: Optional[ShapeOverrides]) -> dict:
    """Shape overrides as {name: [positive ints]}; a ModelError for anything else."""
    checked = {}
    for name, dims in dict(shapes or {}).items():
        try:
            values = [int(d) for d in dims]
            if any(v != d for v, d in zip(values, dims)):
                raise ValueError
        except (TypeError, ValueError):
            raise ModelError(f"--shape {name}: dimensions must be integers, got {dims!r}") from None
        if not values:
            raise ModelError(f"--shape {name}: no dimensions given (a 0-d input needs no --shape)")
        if any(v < 0 for v in values):
            raise ModelError(f"--shape {name}: dimensions must be positive, got {','.join(map(str, values))}")
        if any(v == 0 for v in values):
            raise ModelError(f"--shape {name}={','.join(map(str, values))}: a dimension of 0 makes an empty tensor, "
                             "with no values to compare; give every dimension a size >= 1")
        checked[str(name)] = values
    return checked


def _bind_shapes(main: relax.Function, source: str, shapes: dict) -> relax.Function:
    """Bind the symbolic dims of main's inputs to the values in ``shapes``."""
    names = [param.name for param in main.params]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ModelError(f"--shape names unknown input(s) {', '.join(unknown)}; the model has {', '.join(names) or 'no inputs'}")
    binding: dict = {}
    given_by: dict = {}
    for param in main.params:
        if param.name not in shapes:
            continue
        wanted = shapes[param.name]
        shape = getattr(param.ty, "shape", None)
        if not isinstance(param.ty, relax.TensorType) or shape is None or not hasattr(shape, "values"):
            raise ModelError(f"--shape {param.name}: the input is not a tensor of known rank")
        dims = list(shape.values)
        if len(wanted) != len(dims):
            raise ModelError(
                f"--shape {param.name}: rank {len(wanted)} given, the model's input has rank {len(dims)} "
                f"({','.join(_dim_text(d) for d in dims)})"
            )
        for axis, (dim, value) in enumerate(zip(dims, wanted)):
            if _is_static(dim):
                if int(dim) != value:
                    raise ModelError(
                        f"--shape {param.name}: dimension {axis} is fixed at {int(dim)} in the model, {value} given "
                        "(only dynamic dimensions of a Relax module can be set)"
                    )
            elif type(dim).__name__ == "Var":
                key = str(dim)
                if key in binding and binding[key] != value:
                    raise ModelError(
                        f"--shape: dimension '{key}' is {binding[key]} in {given_by[key]} but {value} in {param.name}"
                    )
                binding[key] = value
                given_by[key] = param.name
    if not binding:
        return main
    try:
        bound = main.bind_symbolic_vars(binding)
    except Exception as err:
        raise ModelError(f"{source}: cannot fix the shapes given with --shape: {_first_line(err)}") from None
    # dims that are expressions of the bound variables (e.g. 2*n) must come out as asked
    for param in bound.params:
        if param.name in shapes and hasattr(getattr(param.ty, "shape", None), "values"):
            got = [_dim_text(d) for d in param.ty.shape.values]
            want = [str(v) for v in shapes[param.name]]
            if all(_is_static(d) for d in param.ty.shape.values) and got != want:
                raise ModelError(f"--shape {param.name}: the model's shape ({','.join(got)}) cannot be {','.join(want)}")
    return bound


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
    _check_onnx_nodes(path, model)
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    names = [i.name for i in graph_inputs]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ModelError(f"--shape names unknown input(s) {', '.join(unknown)}; the model has {', '.join(names) or 'no inputs'}")
    shape_dict, dtype_dict = {}, {}
    for inp in graph_inputs:
        if not inp.type.HasField("tensor_type"):
            raise ModelError(f"{path}: input '{inp.name}' is not a tensor ({inp.type.WhichOneof('value') or 'no type'})")
        ttype = inp.type.tensor_type
        try:
            dtype_dict[inp.name] = onnx.helper.tensor_dtype_to_np_dtype(ttype.elem_type).name
        except (KeyError, ValueError, TypeError):
            raise ModelError(f"{path}: input '{inp.name}' has an unsupported element type ({ttype.elem_type})") from None
        if inp.name in shapes:
            shape = [int(d) for d in shapes[inp.name]]
            if ttype.HasField("shape") and len(shape) != len(ttype.shape.dim):
                model_dims = ",".join(
                    str(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?")
                    for d in ttype.shape.dim
                )
                raise ModelError(
                    f"--shape {inp.name}: rank {len(shape)} given, the model's input has rank {len(ttype.shape.dim)} ({model_dims})"
                )
        elif not ttype.HasField("shape"):
            raise ModelError(f"{path}: input '{inp.name}' has an unknown rank; give its shape with --shape {inp.name}=D0,D1,...")
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
    printed = io.StringIO()  # the frontend prints "Error converting operator X, with inputs: <IR>" on failure
    failure = None
    with held_stderr() as held, contextlib.redirect_stdout(printed):  # a failure's C++ warnings are dropped
        try:
            # the inputs keep the model's own names ("0", "input.1"), which users type in --range and --shape
            mod = from_onnx(model, shape_dict=shape_dict, dtype_dict=dtype_dict, keep_params_in_input=False,
                            sanitize_input_names=False)
        except Exception as err:  # kept past the except block, to be freed quietly below
            failure = err
    if failure is None:
        sys.stderr.write(held.text)
        sys.stdout.write(printed.getvalue())
        return mod
    if isinstance(failure, tvm.error.OpNotImplemented):
        message = f"{path}: {_first_line(failure)}"
    else:
        failed = re.search(r"Error converting operator (\w+)", printed.getvalue())
        where = f" (operator {failed.group(1)})" if failed else ""
        moved = _moved_static_dims(graph_inputs, shapes)
        message = (f"--shape {moved}, and the model does not import at that shape{where}: {_first_line(failure)}"
                   if moved else f"{path}: the ONNX frontend cannot import this model{where}: {_first_line(failure)}")
    with silenced_stderr():  # the failed import's BlockBuilder warns on stderr when it is freed
        del failure
        gc.collect()
    raise ModelError(message)


def _moved_static_dims(graph_inputs, shapes: ShapeOverrides) -> str:
    """'x: dimension 1 is 32 in the model, 16 given' for the first --shape that
    changes a dimension the ONNX model fixes; '' if none does."""
    for inp in graph_inputs:
        if inp.name not in shapes or not inp.type.tensor_type.HasField("shape"):
            continue
        for axis, (dim, given) in enumerate(zip(inp.type.tensor_type.shape.dim, shapes[inp.name])):
            if dim.HasField("dim_value") and dim.dim_value > 0 and dim.dim_value != int(given):
                return f"{inp.name}: dimension {axis} is {dim.dim_value} in the model, {given} given"
    return ""


def _check_onnx_nodes(path: str, model) -> None:
    """Reject nodes that break their operator's schema (TVM's frontend may crash on them).

    Only the nodes of operators ONNX knows are checked: an unknown operator is
    left to the frontend, which names it as unsupported. Whole-model checks are
    not made here: the frontend only warns about those, and imports such models.
    """
    import onnx

    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = model.ir_version
    ctx.opset_imports = {opset.domain: opset.version for opset in model.opset_import}
    for node in model.graph.node:
        try:
            if not onnx.defs.has(node.op_type, node.domain):
                continue
            onnx.checker.check_node(node, ctx)
        except Exception as err:
            label = f"{node.op_type} node '{node.name}'" if node.name else f"{node.op_type} node"
            raise ModelError(f"{path}: malformed {label}: {_first_line(err)}") from None


def _load_pt2(path: str) -> tvm.IRModule:
    try:
        import torch
    except ImportError:
        raise ModelError(f"{path}: loading .pt2 files needs torch (pip install torch==2.13.0)") from None
    from tvm.relax.frontend.torch import from_exported_program

    if not zipfile.is_zipfile(path):
        raise ModelError(f"{path}: not a torch.export .pt2 file (not a zip archive; save one with torch.export.save)")
    # torch logs the real error with a full traceback, then raises a vague one:
    # collect the log record instead, and name its error in one line
    torch_log = logging.getLogger("torch.export")
    collected = _Collect()
    saved = (torch_log.handlers[:], torch_log.propagate)
    torch_log.handlers[:] = [collected]
    torch_log.propagate = False
    try:
        program = torch.export.load(path)
    except Exception as err:
        cause = next((r.exc_info[1] for r in collected.records if r.exc_info and r.exc_info[1] is not None), err)
        raise ModelError(f"{path}: not a torch.export .pt2 file ({_first_line(cause)})") from None
    finally:
        torch_log.handlers[:], torch_log.propagate = saved
    try:
        return from_exported_program(program, keep_params_as_input=False, unwrap_unit_return_tuple=True)
    except Exception as err:
        raise ModelError(f"{path}: the torch frontend cannot import this program: {_first_line(err)}") from None


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


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
    except (Exception, SystemExit) as err:  # a script may call sys.exit()
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
    text = str(err).strip().replace(_METADATA_NOTE, "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # TVMScript diagnostics: "error: <message>", " --> file:line:col", then the source
    diagnostic = next((ln for ln in lines if ln.lower().startswith("error:")), None)
    if diagnostic is not None:
        where = next((ln[3:].strip() for ln in lines if ln.startswith("-->")), "")
        return (diagnostic[len("error:"):].strip() + (f" (at {where})" if where else ""))[:300]
    # TVM errors often start with a traceback header; the message is at the end
    for ln in reversed(lines):
        if "Error" in ln or "not supported" in ln or "not implemented" in ln.lower():
            return ln[:300]
    return (lines[-1] if lines else type(err).__name__)[:300]


# what TVMScript puts in the middle of messages that print IR
_METADATA_NOTE = "# Metadata omitted. Use show_meta=True in script() method to show it."
