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
