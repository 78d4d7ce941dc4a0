"""Reading model files into Relax IRModules: ONNX, torch .pt2 and TVMScript .py.

Each loader returns the IRModule its frontend makes, or raises ModelError with
one line saying why it cannot (the frontends' own printing and C++ warnings
are kept off the terminal). ``model.load_model`` wraps the result in a Model.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import hashlib
import importlib.util
import io
import logging
import os
import re
import sys
import zipfile
from typing import Mapping, Sequence

import tvm

from ..base.errors import ImportFailure, ModelError, UnsupportedModel, first_line, named
from .provenance import folded_constants, name_bindings, onnx_labels, torch_labels
from ..base.quiet import held_stderr, silenced_stderr

# the shapes a user gives inputs (--shape), by input name: the one spelling of the type
ShapeOverrides = Mapping[str, Sequence[int]]


def shape_hint(name: str, dims: Sequence[str]) -> str:
    """The shape to give the input ``name`` (``dims``: each a size, or a letter
    for one to choose), as the caller gives shapes: in ``shapes`` or ``--shape``."""
    return named("shapes", f"{name}={','.join(dims)}", f"{{{name!r}: [{', '.join(dims)}]}}")


def load_onnx(path: str, shapes: ShapeOverrides, import_at_shapes: bool = False) -> tuple:
    """(IRModule, provenance: binding name -> provenance.Provenance, shapes left to bind:
    {input name: shape}, whether an input has a dynamic dimension, the values the frontend
    folded into constants: {ONNX tensor name: provenance.FoldedConstant}). An input's dynamic
    dimensions stay symbolic at import
    (as a user compiles the model) and its shape in ``shapes`` is left to bind
    after; ``import_at_shapes`` (or a shape that changes a dimension the model
    fixes) imports the model at the given shape instead."""
    import onnx

    try:
        model = onnx.load(path)
    except Exception as err:  # protobuf raises several unrelated types
        raise ModelError(f"{path}: not a readable ONNX model ({type(err).__name__})") from None
    if not model.graph.node:
        raise ModelError(f"{path}: not a readable ONNX model (the graph has no nodes)")
    _refuse_invalid_nodes(path, model)
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    names = [i.name for i in graph_inputs]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ModelError(f"{named('shapes')} names unknown input(s) {', '.join(unknown)}; the model has "
                         f"{', '.join(names) or 'no inputs'}")
    shape_dict, dtype_dict, to_bind = {}, {}, {}
    for inp in graph_inputs:
        shape, dtype_dict[inp.name] = _onnx_input(path, inp, shapes, import_at_shapes)
        if not import_at_shapes and _named_dynamic_dims(inp):
            to_bind[inp.name] = shape  # imported symbolic, bound to the shape to run after
        else:
            shape_dict[inp.name] = shape
    printed = io.StringIO()  # the frontend prints "Error converting operator X, with inputs: <IR>" on failure
    failure = None
    with held_stderr() as held, contextlib.redirect_stdout(printed):  # a failure's C++ warnings are dropped
        try:
            # the inputs keep the model's own names ("0", "input.1"), which users type in --range and --shape
            mod, provenance, folded = _import_onnx(model, shape_dict, dtype_dict)
        except Exception as err:  # kept past the except block, to be freed quietly below
            failure = err
    if failure is None:
        sys.stderr.write(held.text)
        sys.stdout.write(printed.getvalue())
        dynamic = any(not _is_fixed(d) for inp in graph_inputs for d in inp.type.tensor_type.shape.dim)
        return mod, provenance, to_bind, dynamic, folded
    error = _import_error(path, model, failure, printed.getvalue(), shapes, to_bind, shape_dict)
    with silenced_stderr():  # the failed import's BlockBuilder warns on stderr when it is freed
        del failure
        gc.collect()
    raise error


def _import_error(path: str, model, failure, printed: str, shapes, to_bind, shape_dict) -> Exception:
    """What a failed ONNX import is: an ImportFailure (a valid model at shapes it
    allows: TVM's frontend fails on it, a finding, exit 1), or a ModelError (an
    operator or a type TVM does not support, a limit it documents; a shape the
    model fixes otherwise, asked for with ``import_at_shapes``)."""
    if isinstance(failure, tvm.error.OpNotImplemented):
        return _unconverted(path, model, failure)
    failed = re.search(r"Error converting operator (\w+)", printed)
    where = f" (operator {failed.group(1)})" if failed else ""
    moved = next(filter(None, (_moved_static_dim(i, shapes[i.name]) for i in model.graph.input if i.name in shapes)),
                 "")
    if moved:
        return ModelError(f"{named('shapes')} {moved}, and the model does not import at that shape{where}: "
                          f"{first_line(failure)}")
    message = f"the ONNX frontend cannot import this model{where}: {first_line(failure)}"
    if to_bind:
        message += (f" (with the dynamic dimensions of {', '.join(sorted(to_bind))} symbolic, as the model is "
                    f"compiled; {named('import_at_shapes')} imports it at the {named('shapes')} shapes)")
    if _unsupported_types(model) or not _is_valid_onnx(model):
        return ModelError(f"{path}: {message}")
    return ImportFailure(f"TVM's {message[4:]}", _import_repro(path, shape_dict))


# operators TVM 0.27's ONNX frontend has no converter for and its torch frontend
# converts (exported_program_translator: lstm.input, gru.input, rnn_tanh.input)
_TORCH_CONVERTS = {"LSTM", "GRU", "RNN"}


def _unconverted(path: str, model, failure) -> Exception:
    """The error of an import that stopped at operators TVM's ONNX frontend has no
    converter for: TVM's limit (UnsupportedModel) where ONNX defines them all, with
    the .pt2 route where TVM's torch frontend converts them; else a ModelError (an
    operator of no ONNX domain numguard knows is no valid ONNX model's)."""
    import onnx

    ops = {node.op_type: node.domain for node in model.graph.node}
    named = first_line(failure).split(": ")[-1]
    missing = sorted(op for op in ops if re.search(rf"\b{re.escape(op)}\b", named)) or [named]
    if not all(op in ops and onnx.defs.has(op, ops[op]) for op in missing):
        return ModelError(f"{path}: {first_line(failure)}")
    message = (f"{path}: TVM {tvm.__version__}'s ONNX frontend has no converter for {', '.join(missing)} (an ONNX "
               "operator: a limit of TVM, not of the model; nothing was judged)")
    if set(missing) <= _TORCH_CONVERTS:
        message += (f". TVM's torch frontend converts {', '.join(missing)}: give numguard the PyTorch model as a .pt2 "
                    "instead (torch.export.save of torch.export.export(model, example_inputs))")
    return UnsupportedModel(message)


_NO_TVM_TYPE = {8: "string", 14: "complex64", 15: "complex128"}  # onnx.TensorProto element types TVM lacks


def _unsupported_types(model) -> list:
    """The element types of ``model``'s tensors that TVM has no dtype for (a string input)."""
    infos = list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info)
    types = {i.type.tensor_type.elem_type for i in infos if i.type.HasField("tensor_type")}
    types |= {t.data_type for t in model.graph.initializer}
    return sorted(_NO_TVM_TYPE[t] for t in types if t in _NO_TVM_TYPE)


def _is_valid_onnx(model) -> bool:
    """Does ``model`` pass the ONNX checker (with shape inference)?"""
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:  # the checker raises its own and protobuf's types
        return False
    return True


def _import_repro(path: str, shape_dict: dict) -> str:
    """A TVM-only script importing ``path`` as numguard did."""
    shapes = f", shape_dict={shape_dict!r}" if shape_dict else ""
    return (f"import onnx\nfrom tvm.relax.frontend.onnx import from_onnx\n"
            f"mod = from_onnx(onnx.load({os.path.abspath(path)!r}){shapes})  # fails in TVM")


def _is_fixed(dim) -> bool:
    """Is the ONNX dimension ``dim`` a fixed size (not a dim_param, not unknown)?"""
    return dim.HasField("dim_value") and dim.dim_value > 0


def _named_dynamic_dims(inp) -> bool:
    """Has the ONNX input ``inp`` a dynamic dimension, each one named (a
    ``dim_param``: unnamed ones cannot be told apart once imported)?"""
    if not inp.type.HasField("tensor_type") or not inp.type.tensor_type.HasField("shape"):
        return False
    dynamic = [d for d in inp.type.tensor_type.shape.dim if not _is_fixed(d)]
    return bool(dynamic) and all(d.dim_param for d in dynamic)


def _onnx_input(path: str, inp, shapes: ShapeOverrides, import_at_shapes: bool = False) -> tuple:
    """(shape, dtype name) of the ONNX graph input ``inp``, its shape from
    ``shapes`` if given there: a size other than one the model fixes is the
    user's mistake (ModelError naming the dimension) unless ``import_at_shapes``."""
    import onnx

    if not inp.type.HasField("tensor_type"):
        raise ModelError(f"{path}: input '{inp.name}' is not a tensor ({inp.type.WhichOneof('value') or 'no type'})")
    ttype = inp.type.tensor_type
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(ttype.elem_type).name
    except (KeyError, ValueError, TypeError):
        raise ModelError(f"{path}: input '{inp.name}' has an unsupported element type ({ttype.elem_type})") from None
    if inp.name in shapes:
        shape = [int(d) for d in shapes[inp.name]]
        if ttype.HasField("shape") and len(shape) != len(ttype.shape.dim):
            model_dims = ",".join(
                str(d.dim_value) if _is_fixed(d) else (d.dim_param or "?")
                for d in ttype.shape.dim
            )
            raise ModelError(
                f"{named('shapes')} {inp.name}: rank {len(shape)} given, the model's input has rank "
                f"{len(ttype.shape.dim)} ({model_dims})"
            )
        moved = _moved_static_dim(inp, shape)
        if moved and not import_at_shapes:  # ONNX Runtime refuses it too: the model's numbers are not defined there
            raise ModelError(f"{named('shapes')} {moved} (only dynamic dimensions take other sizes; "
                             f"{named('import_at_shapes')} imports "
                             "the model at that size anyway, where ONNX Runtime cannot judge it)")
    elif not ttype.HasField("shape"):
        raise ModelError(f"{path}: input '{inp.name}' has an unknown rank; give its shape: "
                         + shape_hint(inp.name, ["D0", "D1", "..."]))
    else:
        shape = []
        for dim in ttype.shape.dim:
            if _is_fixed(dim):
                shape.append(dim.dim_value)
            else:
                label = dim.dim_param or "?"
                dims = [str(d.dim_value) if _is_fixed(d) else "N" for d in ttype.shape.dim]
                raise ModelError(f"{path}: input '{inp.name}' has a dynamic dimension '{label}'; give its shape: "
                                 + shape_hint(inp.name, dims))
    return shape, dtype


def _import_onnx(model, shape_dict: dict, dtype_dict: dict) -> tuple:
    """(IRModule, provenance, folded constants): what ``tvm.relax.frontend.onnx.from_onnx``
    does (the model's opset from its default domain), with the importer kept: its
    tensor table names the values and the constants it folded (provenance.py)."""
    from tvm.relax.frontend.onnx.onnx_frontend import ONNXGraphImporter

    opset = next((i.version for i in model.opset_import if str(i.domain) in ("ai.onnx", "")), 1)
    importer = ONNXGraphImporter(shape_dict, dtype_dict, keep_params_in_input=False, sanitize=False)
    mod = importer.from_onnx(model.graph, opset)
    try:
        labels = onnx_labels(importer._nodes, model.graph)
        provenance, folded = name_bindings(mod, labels), folded_constants(labels)
    except Exception:  # naming is a help; a frontend that changed its internals just gives no names
        provenance, folded = {}, {}
    return mod, provenance, folded


def provenance_of(source_model, mod: tvm.IRModule) -> dict:
    """The provenance (provenance.py) of ``mod``, a module the user imported from
    ``source_model`` (an onnx.ModelProto or a torch ExportedProgram) with TVM's
    frontend: imported again here with the importer's tables kept, and used
    when that import is the same module ({} otherwise, or on any failure:
    naming values is a help)."""
    import tvm_ffi

    try:
        with held_stderr(), contextlib.redirect_stdout(io.StringIO()):
            if type(source_model).__module__.startswith("onnx"):
                again, provenance, _ = _import_onnx(source_model, {}, {})
            else:
                again, provenance = _import_program(source_model)
        return provenance if tvm_ffi.structural_equal(again["main"], mod["main"]) else {}
    except Exception:  # frontends raise many types
        return {}


def _moved_static_dim(inp, shape) -> str:
    """'x: dimension 1 is fixed at 32 in the model, 16 given' where ``shape``
    (given in ``shapes``) changes a dimension the ONNX input ``inp`` fixes; '' if none."""
    for axis, (dim, given) in enumerate(zip(inp.type.tensor_type.shape.dim, shape)):
        if _is_fixed(dim) and dim.dim_value != int(given):
            return f"{inp.name}: dimension {axis} is fixed at {dim.dim_value} in the model, {given} given"
    return ""


def _refuse_invalid_nodes(path: str, model) -> None:
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
            raise ModelError(f"{path}: malformed {label}: {first_line(err)}") from None


def load_pt2(path: str) -> tuple:
    """(IRModule, provenance: binding name -> provenance.Provenance, dimension ranges:
    symbolic dimension name -> (low, high) the export allows)."""
    try:
        import torch
    except ImportError:
        raise ModelError(f"{path}: loading .pt2 files needs torch (pip install torch==2.13.0)") from None

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
        raise ModelError(f"{path}: not a torch.export .pt2 file ({first_line(cause)})") from None
    finally:
        torch_log.handlers[:], torch_log.propagate = saved
    try:
        return (*_import_program(program), dimension_ranges(program))
    except Exception as err:  # torch.export made it: a valid program TVM's frontend fails on, a finding (exit 1)
        message, failure = first_line(err), err
    with silenced_stderr():  # the failed import's BlockBuilder warns on stderr when it is freed
        del failure
        gc.collect()
    raise ImportFailure(f"TVM's torch frontend cannot import {path}: {message}",
                        "import torch\nfrom tvm.relax.frontend.torch import from_exported_program\n"
                        f"mod = from_exported_program(torch.export.load({os.path.abspath(path)!r}))  # fails in TVM")


def dimension_ranges(program) -> dict:
    """The values ``torch.export`` allows each symbolic dimension (its
    ``range_constraints``; the importer names the Relax dimension after the
    same symbol, ``s77``): {name: (low, high)}, high None when unbounded."""
    ranges = {}
    for symbol, bounds in getattr(program, "range_constraints", {}).items():
        try:
            low = int(bounds.lower)
            high = int(bounds.upper) if bounds.upper.is_finite else None
        except (TypeError, ValueError, AttributeError):  # an expression, not a plain symbol with bounds
            continue
        ranges[str(symbol)] = (low, high)
    return ranges


def _import_program(program) -> tuple:
    """What ``tvm.relax.frontend.torch.from_exported_program`` does (decompose to
    core ATen, import), with the importer kept: its FX node table names the values."""
    import itertools

    import torch
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    tensors = itertools.chain((t for _, t in program.named_buffers()), (t for _, t in program.named_parameters()),
                              program.constants.values(), program.tensor_constants.values())
    if not any(isinstance(t, torch.Tensor) and t.layout != torch.strided for t in tensors):  # sparse ones stay
        program = program.run_decompositions()
    importer = ExportedProgramImporter()
    mod = importer.from_exported_program(program, False, True, False, None)
    try:
        provenance = name_bindings(mod, torch_labels(importer.env))
    except Exception:  # naming is a help; a frontend that changed its internals just gives no names
        provenance = {}
    return mod, provenance


def defines_a_module(path: str) -> bool:
    """Whether the .py file ``path``, read without running it, has the form of a model: a top-level
    class decorated with ``ir_module`` (``@I.ir_module``, ``@tvm.script.ir_module``,
    ``@ir_module(...)``), or a top-level assignment to ``Module`` (the name the loader takes when
    a file holds several modules). ModelError where it is not Python."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, ValueError) as err:  # ValueError: a null byte
        raise ModelError(f"{path}: not a TVMScript model: it is not Python ({type(err).__name__}: "
                         f"{first_line(err)})") from None
    except OSError as err:
        raise ModelError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_decorator_name(d) == "ir_module" for d in node.decorator_list):
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "Module" for t in targets):
            return True
    return False


def _decorator_name(decorator: ast.expr) -> str:
    """The last name of a decorator (``I.ir_module`` and ``I.ir_module(...)``: ``ir_module``)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def load_tvmscript(path: str) -> tvm.IRModule:
    """The IRModule a TVMScript file defines (a class decorated with ``@I.ir_module``, or one
    assigned to the top-level name ``Module``, as ``numguard reduce`` writes it). The file is run as
    Python, as TVMScript's parser needs; a .py file of any other form is refused before any of it
    runs (``defines_a_module``): numguard runs no script given as a model by mistake."""
    if not defines_a_module(path):
        raise ModelError(f"{path}: not a TVMScript model: it defines no IRModule (no top-level class decorated "
                         "with @I.ir_module, nor a top-level 'Module = ...'), so numguard has not run it")
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
        raise ModelError(f"{path}: the script failed to load: {type(err).__name__}: {first_line(err)}") from None
    finally:
        sys.modules.pop(name, None)
    found = [(k, v) for k, v in vars(module).items() if isinstance(v, tvm.IRModule)]
    if not found:  # a decorated class the script itself replaced or deleted
        raise ModelError(f"{path}: defines no IRModule (decorate a class with @I.ir_module)")
    if len(found) > 1:
        preferred = [kv for kv in found if kv[0] in ("Module", "mod", "model")]
        if len(preferred) != 1:
            names = ", ".join(k for k, _ in found)
            raise ModelError(f"{path}: defines several IRModules ({names}); name the one to use 'Module'")
        found = preferred
    return found[0][1]

