"""pair_recip_scale: two passes that are each harmless, wrong together.

Planted bug, in two passes:

- ``DivToReciprocalMul`` (pass A, correct on its own) rewrites a division by a
  constant, ``x / c``, into ``x * (1/c)`` with ``1/c`` computed in float32.
  That changes results by at most about one ulp (score ~0.01), the usual
  price of a strength reduction that every fast-math compiler makes.
- ``NarrowScaleConstFP16`` (pass B, harmless on the model as written) treats
  every ``multiply`` by a scalar or 1-D constant as a quantization-style
  scale and stores it in float16 (rounded, dtype kept float32). The model has
  no such multiply, so alone it changes nothing.

Together, B narrows the reciprocal that A created: ``1/c`` loses 13 mantissa
bits (``1/3`` becomes 0.33325), a relative error of up to ~5e-4 in every
output, far outside float32 tolerance on any input.

Why realistic: pass interactions like this (a rewrite exposing a pattern to a
later pass whose assumption it breaks) are the common shape of real
miscompilations; each pass passes its own unit tests.

Expected bisection result: the events run A then B. Prefix bisection finds the
first bad prefix at B, so the culprit is ``NarrowScaleConstFP16#0``; skipping B
alone clears the violation, which confirms it as a single culprit and makes
the minimal disabling set ``{NarrowScaleConstFP16#0}``. Skipping A alone also
clears it (``{DivToReciprocalMul#0}`` is another minimal disabling set):
A exposes the bug, B introduces the error.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from ._common import const_array, is_const, is_op, relax_rewrite_pass, tensor_var, weights

PASS_A = "DivToReciprocalMul"
PASS_B = "NarrowScaleConstFP16"


@mutator
class _DivToMul(PyExprMutator):
    def visit_call_(self, op):
        call = super().visit_call_(op)
        if is_op(call, "relax.divide") and is_const(call.args[1]):
            c = const_array(call.args[1])
            if c.dtype == np.float32 and np.all(c != 0):
                recip = (np.float32(1.0) / c).astype(np.float32)
                return relax.op.multiply(call.args[0], relax.const(recip, "float32"))
        return call


@mutator
class _NarrowScales(PyExprMutator):
    def visit_call_(self, op):
        call = super().visit_call_(op)
        if not is_op(call, "relax.multiply"):
            return call
        args = list(call.args)
        changed = False
        for i, arg in enumerate(args):
            if is_const(arg):
                c = const_array(arg)
                if c.dtype == np.float32 and c.ndim <= 1:
                    # the bug: "scales" are kept in float16
                    args[i] = relax.const(c.astype(np.float16).astype(np.float32), "float32")
                    changed = True
        return relax.op.multiply(args[0], args[1]) if changed else call


def make_pass_a() -> tvm.transform.Pass:
    return relax_rewrite_pass(PASS_A, _DivToMul)


def make_pass_b() -> tvm.transform.Pass:
    return relax_rewrite_pass(PASS_B, _NarrowScales)


def make_pass() -> tvm.transform.Pass:
    """Both passes, A then B (a Sequential is transparent to event ids)."""
    return tvm.transform.Sequential([make_pass_a(), make_pass_b()])


def make_model() -> tvm.IRModule:
    """A classifier head with per-class temperature: ``(x @ W + b) / T``."""
    rng = np.random.default_rng(41)
    w, b = weights(rng, (16, 10), 0.3), weights(rng, (10,), 0.1)
    temperature = np.array([3.0, 7.0, 0.3, 1.7, 11.0, 2.9, 6.1, 0.7, 9.3, 1.3], dtype="float32")
    bb = relax.BlockBuilder()
    x = tensor_var("x", (4, 16))
    with bb.function("main", [x]):
        with bb.dataflow():
            logits = bb.emit(relax.op.add(relax.op.matmul(x, relax.const(w)), relax.const(b)))
            y = bb.emit_output(relax.op.divide(logits, relax.const(temperature)))
        bb.emit_func_output(y)
    return bb.get()
