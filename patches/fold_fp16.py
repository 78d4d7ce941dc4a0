"""fold_fp16: constant folding that keeps its results in float16.

Planted bug: ``FoldConstantFP16`` is a constant folder (it runs TVM's own
``FoldConstant``) whose folded results go through a float16 constant pool:
every float32 tensor it *produced* by folding is rounded to float16 precision
and stored back as float32. The dtype in the IR stays float32, so nothing
looks wrong; but a folded weight loses 13 mantissa bits (relative error up to
2**-11, about 5e-4), which is far outside float32 tolerance on every input.

Why realistic: constant pools and weight caches shared with float16 kernels,
or a folder that evaluates subgraphs on a half-precision device, do exactly
this; ``ToMixedPrecision`` casts constants the same way when it is applied
to the wrong subgraph. Weights that are a product of constants (scale folded
into a weight, ``transpose(W)``) are folded in real models all the time.

Expected culprit: ``FoldConstantFP16#0`` (Relax level). The model's weight is
``W * scale``, which only a folder turns into one constant.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, PyExprVisitor, mutator, visitor

from ._common import const_array, rewrite_relax_functions, tensor_var, weights

PASS_NAME = "FoldConstantFP16"


@visitor
class _Constants(PyExprVisitor):
    def __init__(self):
        super().__init__()
        self.found = []

    def visit_generic_const_(self, op):
        self.found.append(op)


def _constants(mod: tvm.IRModule) -> list:
    collector = _Constants()
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            collector.visit_expr(func)
    return collector.found


@mutator
class _RoundFolded(PyExprMutator):
    def __init__(self, mod, original):
        super().__init__(mod)
        self.original = original

    def visit_generic_const_(self, op):
        if any(op.same_as(c) for c in self.original):
            return op
        value = const_array(op)
        if value.dtype != np.float32 or value.ndim == 0:
            return op
        # the bug: the folded value passes through a float16 buffer
        return relax.const(value.astype(np.float16).astype(np.float32), "float32")


def make_pass() -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name=PASS_NAME)
    def fold_constant_fp16(mod, ctx):
        original = _constants(mod)
        folded = relax.transform.FoldConstant()(mod)
        return rewrite_relax_functions(folded, _RoundFolded(folded, original))

    return fold_constant_fp16


def make_model() -> tvm.IRModule:
    """A two-layer MLP whose first weight is ``W * scale`` (folded at compile time)."""
    rng = np.random.default_rng(11)
    w1, s1 = weights(rng, (16, 32), 0.3), (rng.uniform(0.5, 2.0, (1, 32))).astype("float32")
    b1, w2 = weights(rng, (32,), 0.1), weights(rng, (32, 8), 0.3)
    bb = relax.BlockBuilder()
    x = tensor_var("x", (4, 16))
    with bb.function("main", [x]):
        with bb.dataflow():
            w = bb.emit(relax.op.multiply(relax.const(w1), relax.const(s1)))
            h = bb.emit(relax.op.add(relax.op.matmul(x, w), relax.const(b1)))
            h = bb.emit(relax.op.nn.relu(h))
            y = bb.emit_output(relax.op.matmul(h, relax.const(w2)))
        bb.emit_func_output(y)
    return bb.get()
