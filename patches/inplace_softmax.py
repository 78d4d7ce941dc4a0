"""inplace_softmax: a softmax rewrite without the max subtraction, written as an
in-place module pass.

Planted bug: ``NaiveSoftmax`` rewrites every Relax ``nn.softmax(x)`` into
``exp(x) / sum(exp(x))``. TVM's softmax subtracts the row maximum first; the
naive form overflows once an input to ``exp`` passes ~88.7 (float32), and gives
``inf / inf = NaN``. On inputs in [0, 1] the logits stay below 8 and both
forms agree within a few ulp; on [0, 100] they reach several hundred.

Why realistic, twice over: dropping the max subtraction is the classic
"simplification" of softmax; and the pass is written the way most Python
module passes are, assigning the rewritten functions back into the module it
was handed (``mod[gv] = ...``), which edits that IRModule object in place.
A tool that hands one module object to several builds sees the rewritten
module in every build after the first (reference included) and calls the
model clean; this patch is the test that it does not.

Expected culprit: ``NaiveSoftmax#0`` (Relax level).
Range where it shows: [0, 100]; clean range: [0, 1].
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from ._common import is_op, tensor_var, weights

PASS_NAME = "NaiveSoftmax"


@mutator
class _NaiveSoftmax(PyExprMutator):
    def visit_call_(self, op):
        call = super().visit_call_(op)
        if not is_op(call, "relax.nn.softmax"):
            return call
        e = self.builder_.emit(relax.op.exp(call.args[0]))
        total = self.builder_.emit(relax.op.sum(e, axis=[int(call.attrs.axis)], keepdims=True))
        return relax.op.divide(e, total)


@tvm.transform.module_pass(opt_level=0, name=PASS_NAME)
def _naive_softmax(mod, ctx):
    for gv, func in list(mod.functions.items()):
        if isinstance(func, relax.Function):
            mod[gv] = _NaiveSoftmax(mod).visit_expr(func)  # edits ``mod`` itself
    return mod


def make_pass() -> tvm.transform.Pass:
    return _naive_softmax


def make_model() -> tvm.IRModule:
    """A dense layer into a softmax over 8 classes."""
    rng = np.random.default_rng(7)
    w = weights(rng, (8, 8))
    bb = relax.BlockBuilder()
    x = tensor_var("x", (2, 8))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.matmul(x, relax.const(w)))
            y = bb.emit_output(relax.op.nn.softmax(h, axis=-1))
        bb.emit_func_output(y)
    return bb.get()
