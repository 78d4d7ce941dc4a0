"""exp_range: a fast ``exp`` that is exact below 10 and wrong above it.

Planted bug: ``FastExpCutoff`` rewrites every Relax ``exp(x)`` into
``where(x < 10, exp(x), e**10 * (1 + d + d**2/2 + d**3/6))`` with
``d = x - 10``: arguments below the cutoff take the exact path, arguments above
it get a cubic Taylor extrapolation from the cutoff. Near the cutoff that is
close (relative error about d**4/24), but it is a violation from x ~ 10.15 on
and the relative error reaches 99% at x = 20 (exp(20) = 4.9e8, the
polynomial gives 4.9e6).

Why realistic: fast-math exp variants are usually validated on the softmax
and sigmoid inputs they were written for (x <= 0 after max subtraction), and
range reduction or clamping with a polynomial tail is a common shortcut.
The bug only shows on part of the input range, so a tool must search the
user's range: inputs in [0, 5] are bit exact, inputs in [0, 20] violate.

Expected culprit: ``FastExpCutoff#0`` (Relax level).
Range where it shows: [0, 20]; clean range: [0, 5].
"""

from __future__ import annotations

import math

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from ._common import is_op, relax_rewrite_pass, tensor_var, weights

PASS_NAME = "FastExpCutoff"
CUTOFF = 10.0


def _f32(value: float):
    return relax.const(value, "float32")


@mutator
class _FastExp(PyExprMutator):
    def visit_call_(self, op):
        call = super().visit_call_(op)
        if not is_op(call, "relax.exp") or str(call.args[0].ty.dtype) != "float32":
            return call
        emit = self.builder_.emit
        x = call.args[0]
        d = emit(relax.op.subtract(x, _f32(CUTOFF)))
        d2 = emit(relax.op.multiply(d, d))
        d3 = emit(relax.op.multiply(d2, d))
        poly = emit(relax.op.add(_f32(1.0), d))
        poly = emit(relax.op.add(poly, relax.op.multiply(d2, _f32(0.5))))
        poly = emit(relax.op.add(poly, relax.op.multiply(d3, _f32(1.0 / 6.0))))
        tail = emit(relax.op.multiply(poly, _f32(math.exp(CUTOFF))))
        exact = emit(relax.op.exp(x))
        below = emit(relax.op.less(x, _f32(CUTOFF)))
        return relax.op.where(below, exact, tail)


def make_pass() -> tvm.transform.Pass:
    return relax_rewrite_pass(PASS_NAME, _FastExp)


def make_model() -> tvm.IRModule:
    """``exp`` features (an energy-style layer) followed by a dense layer."""
    rng = np.random.default_rng(31)
    w = np.abs(weights(rng, (16, 6), 0.2))
    bb = relax.BlockBuilder()
    x = tensor_var("x", (4, 16))
    with bb.function("main", [x]):
        with bb.dataflow():
            e = bb.emit(relax.op.exp(x))
            y = bb.emit_output(relax.op.matmul(e, relax.const(w)))
        bb.emit_func_output(y)
    return bb.get()
