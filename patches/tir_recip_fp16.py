"""tir_recip_fp16: float division by a computed value turned into a float16 reciprocal.

Planted bug: ``HalfReciprocalDiv`` is a TIR pass run *before* TVM's default
TIR pipeline (it sees TIR with blocks) that strength-reduces every float32
division whose divisor is not a constant, ``x / y``, into
``x * float32(float16(1 / y))``: the reciprocal goes through a float16
temporary, as a fast-reciprocal intrinsic of a half-precision unit would.
The reciprocal keeps only 11 significant bits (relative error up to 2**-11,
about 5e-4), so every quotient is off far beyond float32 tolerance, and the
reciprocal overflows to inf (quotient 0 or inf) once ``|y| < 6e-5``.
Divisions by constants are left alone, so most models are unaffected; the
ones with a softmax, a mean over a dynamic count, or a normalization are not.

Why realistic: rewriting division into multiplication by a reciprocal is a
standard strength reduction, and backends that lower it to an approximate
reciprocal instruction (``rcp``, half-precision ``hrcp``) without a Newton
step are a known source of accuracy bugs.

Expected culprit: ``HalfReciprocalDiv#0`` (TIR level; the TIR pipeline is
``patches.tir_recip_fp16:make_pass,default``).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax, tirx

from ._common import tensor_var, tir_rewrite_pass, weights

PASS_NAME = "HalfReciprocalDiv"


def _rewrite_div(div):
    if str(div.ty) != "float32" or isinstance(div.b, tirx.FloatImm):
        return div
    one = tirx.FloatImm("float16", 1.0)
    recip16 = tirx.Div(one, tirx.Cast("float16", div.b))
    return tirx.Mul(div.a, tirx.Cast("float32", recip16))


def make_pass() -> tvm.transform.Pass:
    return tir_rewrite_pass(PASS_NAME, tirx.Div, _rewrite_div)


def make_model() -> tvm.IRModule:
    """A dense layer followed by a softmax (exp / sum of exp)."""
    rng = np.random.default_rng(51)
    w, b = weights(rng, (16, 12), 0.4), weights(rng, (12,), 0.1)
    bb = relax.BlockBuilder()
    x = tensor_var("x", (4, 16))
    with bb.function("main", [x]):
        with bb.dataflow():
            logits = bb.emit(relax.op.add(relax.op.matmul(x, relax.const(w)), relax.const(b)))
            y = bb.emit_output(relax.op.nn.softmax(logits, axis=-1))
        bb.emit_func_output(y)
    return bb.get()
