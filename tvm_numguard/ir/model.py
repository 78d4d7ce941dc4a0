"""Loading models into Relax: ONNX, torch .pt2, TVMScript .py, IRModule
(the file formats are read by frontends.py).

Every loader gives a :class:`Model`: a Relax IRModule whose ``main`` takes only
the model's real inputs (weights are bound as constants) and the list of those
inputs as :class:`InputSpec`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import warnings
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import tvm
from tvm import relax

from ..base.errors import ImportFailure, ModelError, first_line, named
from ..base.flags import FLAG
from .relax_ir import function_bindings, op_name
from .frontends import ShapeOverrides, load_onnx, load_pt2, load_tvmscript, shape_hint



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

    @classmethod
    def from_json(cls, data: Mapping) -> "InputSpec":
        return cls(data["name"], tuple(data["shape"]), data["dtype"])


@dataclasses.dataclass
class Model:
    mod: tvm.IRModule
    inputs: list
    source: str  # file path, or "<IRModule>"
    sha256: str
    # binding name in main -> provenance.Provenance: where the value is in the user's model
    provenance: dict = dataclasses.field(default_factory=dict)
    # how its dynamic dimensions were imported: "static" (it has none), "symbolic"
    # (kept symbolic by the frontend, as a user compiles it; bound to the shapes
    # to run after import) or "fixed" (the frontend imported the model at the
    # shapes to run)
    dims: str = "static"
    # the model as its own framework reads it (framework.open_framework): an
    # onnx.ModelProto or a torch ExportedProgram the user gave; None: the file
    source_model: Optional[object] = None
    # the model's values TVM computes in float32 (``--keep-float32``: the precision stage's fix), by their names
    kept_float32: tuple = ()
    # the model's values TVM's frontend folded into constants at import: name -> provenance.FoldedConstant
    folded: dict = dataclasses.field(default_factory=dict)

    @property
    def framework_source(self):
        """What the model's framework runs: the model the user gave, else its file."""
        return self.source_model if self.source_model is not None else self.source

    def input_names(self) -> list:
        return [spec.name for spec in self.inputs]

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "sha256": self.sha256,
            "inputs": [spec.to_json() for spec in self.inputs],
            "dims": self.dims,
        }

    def to_args(self) -> list:
        words = model_args(self.source, self.inputs, self.dims)
        return words + [FLAG["kept_float32"], ",".join(self.kept_float32)] if self.kept_float32 else words

    def keeping_float32(self, names: Sequence[str]) -> "Model":
        """This model with the values ``names`` (binding names of main, as the precision
        stage prints them and ``keep_float32`` takes them, or their names in the model)
        computed in float32. A binding of main is that binding, whatever the model names
        its values: the line a report prints widens what it says."""
        from .narrow.widen import CannotWiden, keep_float32

        by_key = {p.key: b for b, p in self.provenance.items() if p.key and not p.inside}
        of_main = {b.var.name for b in function_bindings(self.mod["main"])}
        bindings = [n if n in of_main else by_key.get(n, n) for n in names]
        try:
            mod = keep_float32(self.mod, bindings)
        except CannotWiden as err:
            raise ModelError(f"{named('kept_float32')}: {err}") from None
        return dataclasses.replace(self, mod=mod, kept_float32=self.kept_float32 + tuple(names))




def model_args(source: str, inputs: Sequence, dims: str = "static") -> list:
    """The command-line arguments that load the model from ``source`` with
    ``inputs`` (InputSpec): the file, absolute, and for ONNX (which takes any
    input shape) the shape of each input, fixed at import where ``dims`` says so;
    for a program whose dynamic dimensions were bound (``dims`` "symbolic"), the
    shapes they were bound to."""
    words = [os.path.abspath(source) if os.path.isfile(source) else source]
    if str(source).endswith(".onnx") or dims == "symbolic":
        for spec in inputs:
            words += [FLAG["shapes"], f"{spec.name}=" + ",".join(str(d) for d in spec.shape)]
        if dims == "fixed":
            words.append(FLAG["import_at_shapes"])
    return words


def file_sha256(path: str) -> str:
    """sha256 of a file's bytes: a model's identity in reports (replay checks it)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_model(source: Union[str, os.PathLike, tvm.IRModule], shapes: Optional[ShapeOverrides] = None,
               import_at_shapes: bool = False, *, fix_at_import: Optional[bool] = None) -> Model:
    """Load a model file (.onnx, .pt2, .py) or wrap an IRModule.

    ``shapes`` maps input names to concrete shapes (``--shape NAME=D0,D1,...``):
    the shapes to run. Dynamic dimensions stay symbolic at import, as a user
    compiles the model, and are bound to those shapes after. ``import_at_shapes``
    (``--fix-shapes``) has the ONNX frontend import the model at those shapes
    instead. A shape that changes a dimension the model fixes is the user's
    mistake (ModelError naming it), except for ONNX with ``import_at_shapes``,
    which imports it at that size (ONNX Runtime cannot run it there). A Relax
    module (.pt2, .py, IRModule) only lets its symbolic dimensions be bound.
    ``fix_at_import``: ``import_at_shapes``'s name before 0.2 (deprecated).
    """
    if fix_at_import is not None:
        warnings.warn("load_model(fix_at_import=...) is deprecated: it is import_at_shapes= now",
                      DeprecationWarning, stacklevel=2)
        import_at_shapes = import_at_shapes or fix_at_import
    shapes = _validated_shapes(shapes)
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
        mod, provenance, to_bind, dynamic, folded = load_onnx(path, shapes, import_at_shapes)
        model = from_irmodule(mod, path, digest, to_bind, provenance=provenance)
        model.folded = folded
        model.dims = "symbolic" if to_bind else ("fixed" if dynamic else "static")
        return model
    mod, provenance, allowed = load_pt2(path) if ext == ".pt2" else (load_tvmscript(path), {}, {})
    model = from_irmodule(mod, path, digest, shapes, provenance, allowed)
    model.dims = "symbolic" if shapes and _has_symbolic(mod) else "static"
    return model


def _has_symbolic(mod: tvm.IRModule) -> bool:
    """Has main of ``mod`` an input with a symbolic dimension?"""
    for param in mod["main"].params:
        shape = getattr(param.ty, "shape", None)
        if shape is not None and hasattr(shape, "values") and not all(_is_static(d) for d in shape.values):
            return True
    return False



def from_irmodule(mod: tvm.IRModule, source: str, digest: str, shapes: Optional[ShapeOverrides] = None,
                  provenance: Optional[dict] = None, allowed: Optional[dict] = None, source_model=None) -> Model:
    """Wrap a Relax IRModule; ``shapes`` binds the symbolic dimensions of main's inputs;
    ``provenance`` names its values in the user's model (provenance.py); ``allowed``:
    {symbolic dimension: (low, high or None)}, the values its exporter allows;
    ``source_model``: the model it was imported from, as its framework reads it."""
    allowed = dict(allowed or {})
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        raise ModelError(f"{source}: the IRModule has no 'main' function")
    main = mod["main"]
    if not isinstance(main, relax.Function):
        raise ModelError(f"{source}: 'main' is not a Relax function")
    shapes = _validated_shapes(shapes)
    if shapes:
        main = _bind_shapes(main, source, shapes, allowed, dict(provenance or {}))
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
                    "give its shape: " + shape_hint(param.name, [_dim_hint(d, allowed) for d in shape.values])
                    + _allowed_text(shape.values, allowed)
                )
            dims.append(int(dim))
        specs.append(InputSpec(param.name, tuple(dims), str(ty.dtype)))
    return Model(mod=mod, inputs=specs, source=source, sha256=digest, provenance=dict(provenance or {}),
                 source_model=source_model)


def _is_static(dim) -> bool:
    return type(dim).__name__ == "IntImm"


def _dim_text(dim) -> str:
    return str(int(dim)) if _is_static(dim) else str(dim)


def _dim_hint(dim, allowed: dict) -> str:
    """A value for ``dim`` that ``shapes`` takes: its own where static, the
    smallest its exporter allows where symbolic (1 where nothing is known)."""
    if _is_static(dim):
        return str(int(dim))
    low, _ = allowed.get(str(dim), (1, None))
    return str(max(low, 1))


def _allowed_text(dims, allowed: dict) -> str:
    known = [f"{d} in {_span(*allowed[str(d)])}" for d in dims if not _is_static(d) and str(d) in allowed]
    return f" (the export allows {', '.join(known)})" if known else ""


def _span(low, high) -> str:
    """``[low, high]`` of a dimension's allowed values (no upper bound: inf)."""
    return f"[{low}, {high if high is not None else 'inf'}]"


def _validated_shapes(shapes: Optional[ShapeOverrides]) -> dict:
    """Shape overrides as {name: [positive ints]}; a ModelError for anything else."""
    validated = {}
    for name, dims in dict(shapes or {}).items():
        try:
            values = [int(d) for d in dims]
            if any(v != d for v, d in zip(values, dims)):
                raise ValueError
        except (TypeError, ValueError):
            raise ModelError(f"{named('shapes')} {name}: dimensions must be integers, got {dims!r}") from None
        if not values:
            raise ModelError(f"{named('shapes')} {name}: no dimensions given (a 0-d input needs no shape)")
        if any(v < 0 for v in values):
            raise ModelError(f"{named('shapes')} {name}: dimensions must be positive, got {','.join(map(str, values))}")
        if any(v == 0 for v in values):
            raise ModelError(f"{named('shapes')} {name}={','.join(map(str, values))}: a dimension of 0 makes an "
                             "empty tensor, "
                             "with no values to compare; give every dimension a size >= 1")
        validated[str(name)] = values
    return validated


def _bind_shapes(main: relax.Function, source: str, shapes: dict, allowed: dict,
                 provenance: Optional[dict] = None) -> relax.Function:
    """Bind the symbolic dims of main's inputs to the values in ``shapes``
    (within what ``allowed`` says the exporter allows). A binding TVM's imported
    main refuses at values the model allows is an ImportFailure (``provenance``
    name the node)."""
    names = [param.name for param in main.params]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ModelError(f"{named('shapes')} names unknown input(s) {', '.join(unknown)}; the model has "
                         f"{', '.join(names) or 'no inputs'}")
    binding: dict = {}
    given_by: dict = {}
    for param in main.params:
        if param.name not in shapes:
            continue
        wanted = shapes[param.name]
        shape = getattr(param.ty, "shape", None)
        if not isinstance(param.ty, relax.TensorType) or shape is None or not hasattr(shape, "values"):
            raise ModelError(f"{named('shapes')} {param.name}: the input is not a tensor of known rank")
        dims = list(shape.values)
        if len(wanted) != len(dims):
            raise ModelError(
                f"{named('shapes')} {param.name}: rank {len(wanted)} given, the model's input has rank {len(dims)} "
                f"({','.join(_dim_text(d) for d in dims)})"
            )
        for axis, (dim, value) in enumerate(zip(dims, wanted)):
            if _is_static(dim):
                if int(dim) != value:
                    raise ModelError(
                        f"{named('shapes')} {param.name}: dimension {axis} is fixed at {int(dim)} in the model, "
                        f"{value} given "
                        "(only dynamic dimensions of a Relax module can be set)"
                    )
            elif type(dim).__name__ == "Var":
                key = str(dim)
                if key in binding and binding[key] != value:
                    raise ModelError(f"{named('shapes')}: dimension '{key}' is {binding[key]} in {given_by[key]} "
                                     f"but {value} in {param.name}")
                low, high = allowed.get(key, (None, None))
                if (low is not None and value < low) or (high is not None and value > high):
                    raise ModelError(f"{named('shapes')} {param.name}: dimension {axis} ('{key}') must be in "
                                     f"{_span(low, high)} (the export's constraint), {value} given")
                binding[key] = value
                given_by[key] = param.name
    if not binding:
        return main
    try:
        bound = main.bind_symbolic_vars(binding)
    except Exception as err:  # the shapes fit the model: TVM's import cannot run it there
        raise unbindable(main, source, binding, provenance or {}, first_line(err)) from None
    # dims that are expressions of the bound variables (e.g. 2*n) must come out as asked
    for param in bound.params:
        if param.name in shapes and hasattr(getattr(param.ty, "shape", None), "values"):
            got = [_dim_text(d) for d in param.ty.shape.values]
            want = [str(v) for v in shapes[param.name]]
            if all(_is_static(d) for d in param.ty.shape.values) and got != want:
                raise ModelError(f"{named('shapes')} {param.name}: the model's shape ({','.join(got)}) "
                                 f"cannot be {','.join(want)}")
    return bound


def unbindable(main: relax.Function, source: str, binding: dict, provenance: dict, error: str) -> ImportFailure:
    """The ImportFailure of a valid model whose imported main TVM cannot bind at ``binding``."""
    dims = ", ".join(f"{k}={v}" for k, v in binding.items())
    named = re.match(r"\s*(\w+) expects", error)
    node = None
    if named:
        for b in function_bindings(main):
            if op_name(b.value) == f"relax.{named.group(1)}":
                value_provenance = provenance.get(b.var.name)
                node = (value_provenance.label if value_provenance is not None
                        else f"relax.{named.group(1)} {b.var.name}")
                break
    where = f" at {node}" if node else ""
    return ImportFailure(f"TVM's import of {source} cannot run it at {dims} (the model's own dimension names), "
                         f"which the model allows{where}: {error}", _bind_repro(source, binding))


def _bind_repro(source: str, binding: dict) -> str:
    """A TVM-only script that imports ``source`` as numguard does and binds its dimensions."""
    source = os.path.abspath(source)
    if source.endswith(".onnx"):
        load = f"import onnx\nfrom tvm.relax.frontend.onnx import from_onnx\nmod = from_onnx(onnx.load({source!r}))"
    elif source.endswith(".pt2"):
        load = ("import torch\nfrom tvm.relax.frontend.torch import from_exported_program\n"
                f"mod = from_exported_program(torch.export.load({source!r}))")
    else:
        return ""
    return f"{load}\nmod['main'].bind_symbolic_vars({binding!r})  # fails in TVM"


def _module_hash(mod: tvm.IRModule) -> str:
    import tvm_ffi

    return "structural:%016x" % (tvm_ffi.structural_hash(mod) & (2**64 - 1))
