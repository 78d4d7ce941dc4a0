"""Relax IR helpers: pristine modules (every build starts from a module no
earlier build touched), a var's tensor type, a function's bindings, an op's name.

An ``IRModule`` is mutable even though the functions in it are not: a Python
module pass written in the common style (``mod[gv] = new_func``) changes the
very object it was handed. A module given to one build must therefore never be
given to another, nor kept as a snapshot that a later pass could still edit.
``pristine`` makes a new module over the same function objects (a shallow copy:
cheap, whatever the model's size).
"""

from __future__ import annotations

from typing import Optional

import tvm
from tvm import relax


# a tensor constant of a Relax expression (what ``relax.const`` makes)
TENSOR_CONSTANT = tvm.ir.expr.GenericConst


def pristine(mod: tvm.IRModule) -> tvm.IRModule:
    """A new IRModule with ``mod``'s functions, attributes and global infos;
    editing one of the two modules leaves the other as it was."""
    return mod.clone()


def tensor_type(var) -> tuple:
    """(static shape or None, dtype or None) of a Relax value's type (a var, a TensorType)."""
    ty = var if isinstance(var, relax.Type) else getattr(var, "ty", None)
    shape = getattr(ty, "shape", None)
    if isinstance(ty, relax.TensorType) and shape is not None and hasattr(shape, "values"):
        try:
            return tuple(int(d) for d in shape.values), str(ty.dtype)
        except (TypeError, ValueError):
            return None, str(ty.dtype)
    return None, None


def function_bindings(func) -> list:
    """A Relax function's bindings, in order (none for a body that is not a sequence)."""
    body = func.body
    return [b for block in body.blocks for b in block.bindings] if hasattr(body, "blocks") else []


def op_name(value) -> Optional[str]:
    """The operator a bound value calls (``relax.exp``), or None (not an operator call)."""
    op = getattr(value, "op", None)
    return op.name if isinstance(op, tvm.ir.Op) else None


# float dtypes from the narrowest (loosest tolerance) to the widest
FLOAT_WIDTHS = ("bfloat16", "float16", "float32", "float64")


def narrower_float(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """The narrower of two float dtypes (None and non-float dtypes count as no float)."""
    ranks = [d for d in (a, b) if d in FLOAT_WIDTHS]
    return min(ranks, key=FLOAT_WIDTHS.index) if ranks else None


def _float_dtypes(ty) -> list:
    """The dtypes a Relax type holds (a tensor's, a tuple's fields', in order)."""
    if isinstance(ty, relax.TensorType):
        return [str(ty.dtype)]
    if isinstance(ty, relax.TupleType):
        return [d for field in ty.fields for d in _float_dtypes(field)]
    return []


# operators whose every result element is one of their inputs' elements (or a constant): they
# move or select values and round nothing, so a value they pass on keeps its own arithmetic
EXACT_OPS = frozenset({
    "relax.reshape", "relax.permute_dims", "relax.expand_dims", "relax.squeeze", "relax.flatten",
    "relax.broadcast_to", "relax.take", "relax.strided_slice", "relax.dynamic_strided_slice", "relax.concat",
    "relax.split", "relax.tile", "relax.repeat", "relax.flip", "relax.gather_elements", "relax.gather_nd",
    "relax.scatter_elements", "relax.scatter_nd", "relax.where", "relax.maximum", "relax.minimum", "relax.max",
    "relax.min", "relax.nn.relu", "relax.abs", "relax.negative", "relax.clip", "relax.sort", "relax.topk",
    "relax.layout_transform", "relax.zeros_like", "relax.ones_like", "relax.full_like", "relax.zeros", "relax.ones",
    "relax.full", "relax.nn.pad", "relax.nn.max_pool1d", "relax.nn.max_pool2d", "relax.nn.max_pool3d",
    "relax.floor", "relax.ceil", "relax.round", "relax.trunc", "relax.sign", "relax.one_hot",
})


def float_history(func) -> dict:
    """{var name: the narrowest float dtype in which arithmetic on its value's
    path rounded} for every parameter and binding of a Relax function. A value
    computed in float16 (a float16 add, a float16 mean) carries float16's
    precision whatever it is cast to later, so it is judged at float16's
    tolerance. Storage is not arithmetic: an input, a constant stored as
    float16, a reshape or a take of it, and a cast up (exact) round nothing,
    so a float16 bias cast to float32 and added in float32 leaves float32's
    tolerance. None: no float arithmetic at all."""
    history: dict = {param.name: None for param in func.params}
    for binding in function_bindings(func):
        history[binding.var.name] = _arithmetic(binding.value, history)
    return history


def _arithmetic(value, history: dict) -> Optional[str]:
    """The narrowest float a bound value's computation rounded in (``history``: its arguments')."""
    read = None
    for sub in _subexpressions(value):
        if isinstance(sub, relax.Var):
            read = narrower_float(read, history.get(sub.name))
    if not isinstance(value, relax.Call):
        return read  # a tuple, an item of one, an alias: nothing computed
    name = op_name(value)
    if name in EXACT_OPS:
        return read
    result = None
    for dtype in _float_dtypes(getattr(value, "ty", None)):
        result = narrower_float(result, dtype)
    if name == "relax.astype":
        source = tensor_type(value.args[0])[1]
        # a cast to a float at least as wide as its argument's is exact; a narrower one rounds
        if result is None or (source in FLOAT_WIDTHS and FLOAT_WIDTHS.index(result) >= FLOAT_WIDTHS.index(source)):
            return read
        if source not in FLOAT_WIDTHS and result in ("float32", "float64"):
            return read  # an integer to a wide float: exact for the integers models index with
    return narrower_float(read, result)


def _subexpressions(value) -> list:
    """The vars and constants a bound value reads."""
    found: list = []
    relax.analysis.post_order_visit(value, lambda e: found.append(e)
                                    if isinstance(e, (relax.Var, TENSOR_CONSTANT)) else None)
    return found


def output_float_history(mod: tvm.IRModule, entry: str = "main") -> tuple:
    """For each output ``entry`` returns (tuples flattened, as the VM returns
    them), the narrowest float dtype its value passed through (None: no float).
    A tuple built in the function is followed field by field, so one field's
    float16 does not loosen another's tolerance."""
    func = mod[entry]
    history = float_history(func)
    tuples = {b.var.name: b.value for b in function_bindings(func) if isinstance(b.value, relax.Tuple)}
    body = func.body
    result = body.body if hasattr(body, "body") else body
    outputs: list = []

    def visit(expr) -> None:
        if isinstance(expr, relax.Var) and expr.name in tuples:
            expr = tuples[expr.name]
        if isinstance(expr, relax.Tuple):
            for field in expr.fields:
                visit(field)
            return
        own = None
        for dtype in _float_dtypes(getattr(expr, "ty", None)):
            own = narrower_float(own, dtype)
        if isinstance(expr, relax.Var):
            own = narrower_float(own, history.get(expr.name))
        fields = _float_dtypes(expr.ty) if isinstance(getattr(expr, "ty", None), relax.TupleType) else [None]
        outputs.extend([own] * len(fields))

    visit(result)
    return tuple(outputs)
