"""var_onepass: variance computed in one pass, as E[x^2] - E[x]^2.

Planted bug: ``OnePassVariance`` rewrites every Relax ``variance(x, axis)``
into ``mean(x*x, axis) - mean(x, axis)**2``. Algebraically the same; in
float32 the subtraction cancels catastrophically when the values along the
axis are close to each other relative to their size: the true variance is
then far below the rounding error of ``E[x^2]``, and a normalization that
divides by ``sqrt(var + eps)`` blows up (or takes the square root of a
negative number). On inputs spread over the range it is within tolerance.

Why realistic: the one-pass formula saves a reduction and is the classic
shortcut of fused layer-norm and batch-norm kernels; it is validated on
zero-mean activations, where it is accurate, and fails on raw features with
a large offset (sensor readings, pixel values, timestamps).

Expected culprit: ``OnePassVariance#0`` (Relax level).
Range where it shows: rows of nearly equal values in [0, 100]; uniform
samples of [0, 100] do not show it.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from ._common import is_op, relax_rewrite_pass, tensor_var, weights

PASS_NAME = "OnePassVariance"


@mutator
class _OnePassVariance(PyExprMutator):
    def visit_call_(self, op):
        call = super().visit_call_(op)
        if not is_op(call, "relax.variance"):
            return call
        x = call.args[0]
        axis, keepdims = call.attrs.axis, call.attrs.keepdims
        emit = self.builder_.emit
        mean_sq = emit(relax.op.mean(relax.op.multiply(x, x), axis, keepdims))
        mean = emit(relax.op.mean(x, axis, keepdims))
        return relax.op.subtract(mean_sq, relax.op.multiply(mean, mean))


def make_pass() -> tvm.transform.Pass:
    return relax_rewrite_pass(PASS_NAME, _OnePassVariance)


def make_model() -> tvm.IRModule:
    """A per-row normalization of raw features followed by a dense layer."""
    rng = np.random.default_rng(41)
    w = weights(rng, (16, 6), 0.3)
    bb = relax.BlockBuilder()
    x = tensor_var("x", (4, 16))
    with bb.function("main", [x]):
        with bb.dataflow():
            mean = bb.emit(relax.op.mean(x, axis=[1], keepdims=True))
            var = bb.emit(relax.op.variance(x, axis=[1], keepdims=True))
            centered = bb.emit(relax.op.subtract(x, mean))
            scale = bb.emit(relax.op.rsqrt(relax.op.add(var, relax.const(1e-5, "float32"))))
            normed = bb.emit(relax.op.multiply(centered, scale))
            y = bb.emit_output(relax.op.matmul(normed, relax.const(w)))
        bb.emit_func_output(y)
    return bb.get()


def make_witness() -> dict:
    """Inputs on which the bug shows: rows of raw features near 90, spread 0.01."""
    rng = np.random.default_rng(0)
    return {"x": (90.0 + rng.normal(0.0, 0.01, (4, 16))).astype("float32")}
