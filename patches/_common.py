"""Helpers shared by the fault-injection patches (not a patch itself)."""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax


def weights(rng: np.random.Generator, shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype("float32")


def tensor_var(name: str, shape, dtype: str = "float32") -> relax.Var:
    return relax.Var(name, relax.TensorType(shape, dtype))


def is_op(expr, name: str) -> bool:
    return isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) and expr.op.name == name


def is_const(expr) -> bool:
    return isinstance(expr, tvm.ir.expr.GenericConst)


def const_array(expr) -> np.ndarray:
    return expr.value.numpy()


def rewrite_relax_functions(mod: tvm.IRModule, mutator) -> tvm.IRModule:
    """Run a PyExprMutator (built on ``mod``) over every Relax function.

    The result is a new module from the mutator's BlockBuilder; ``mod`` itself
    is left alone (recorded snapshots keep referring to it).
    """
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            new = mutator.visit_expr(func)
            if not new.same_as(func):
                mutator.builder_.update_func(gv, new)
    return mutator.builder_.get()


def relax_rewrite_pass(name: str, mutator_class) -> tvm.transform.Pass:
    """A module pass named ``name`` that runs ``mutator_class(mod)`` over every Relax function."""

    @tvm.transform.module_pass(opt_level=0, name=name)
    def rewrite(mod, ctx):
        return rewrite_relax_functions(mod, mutator_class(mod))

    return rewrite


def tir_rewrite_pass(name: str, node_type, rewrite) -> tvm.transform.Pass:
    """A PrimFunc pass named ``name`` that replaces every ``node_type`` node by ``rewrite(node)``."""
    import tvm_ffi
    from tvm import tirx

    def transform(func, mod, ctx):
        return tvm_ffi.structural_map(func, (node_type, rewrite))

    return tirx.transform.prim_func_pass(transform, opt_level=0, name=name)
