"""tir_tf32: reduction updates with TF32-like products, applied to float32.

Planted bug: ``TF32ReductionProducts`` is a TIR pass, run after TVM's default
TIR pipeline (on lowered, flattened TIR), that finds the update statement of
a float32 multiply-accumulate reduction, ``acc[i] = acc[i] + a * b`` (the
innermost statement of every matmul, dense and convolution kernel), and
truncates the product to TF32 precision: the lowest 13 of the 23 mantissa bits
are cleared (``reinterpret(reinterpret<u32>(a*b) & 0xFFFFE000)``), so each
product carries a relative error of up to 2**-10. Everything else (loads,
stores, elementwise kernels, the accumulator's own precision) is untouched:
the pattern is rare, only multiply-accumulate stores match, and the IR still
says float32 everywhere.

Why realistic: "allow TF32" is a standard switch for matmul kernels on GPUs
(``torch.backends.cuda.matmul.allow_tf32``); a backend pass that emulates or
enables it for every float32 reduction it recognises, instead of only for the
kernels a user opted in, changes a float32 model's numbers far beyond float32
tolerance while every elementwise kernel stays bit exact.

Expected culprit: ``TF32ReductionProducts#0`` (TIR level; the TIR pipeline is
``default,patches.tir_tf32:make_pass``).
"""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, tirx

from ._common import tensor_var, tir_rewrite_pass, weights

PASS_NAME = "TF32ReductionProducts"
_MASK = 0xFFFFE000  # keep sign, exponent and the top 10 mantissa bits


def _is_load_of(expr, buffer, indices) -> bool:
    return (
        isinstance(expr, tvm.ir.expr.TensorLoad)
        and expr.source.same_as(buffer)
        and len(expr.indices) == len(indices)
        and all(tvm_ffi.structural_equal(a, b) for a, b in zip(expr.indices, indices))
    )


def _truncate(product):
    bits = tirx.reinterpret("uint32", product)
    return tirx.reinterpret("float32", tirx.bitwise_and(bits, tirx.const(_MASK, "uint32")))


def _rewrite_store(store):
    value = store.value
    if not isinstance(value, tirx.Add) or str(value.ty) != "float32":
        return store
    for acc, prod in ((value.a, value.b), (value.b, value.a)):
        if isinstance(prod, tirx.Mul) and _is_load_of(acc, store.buffer, store.indices):
            new_value = tirx.Add(acc, _truncate(prod)) if acc.same_as(value.a) else tirx.Add(_truncate(prod), acc)
            return tirx.BufferStore(store.buffer, new_value, list(store.indices))
    return store


def make_pass() -> tvm.transform.Pass:
    return tir_rewrite_pass(PASS_NAME, tirx.BufferStore, _rewrite_store)


def make_model() -> tvm.IRModule:
    """A dense layer with bias and ReLU, then a second dense layer."""
    rng = np.random.default_rng(21)
    w1, b1 = weights(rng, (32, 24), 0.2), weights(rng, (24,), 0.1)
    w2 = weights(rng, (24, 10), 0.2)
    bb = relax.BlockBuilder()
    x = tensor_var("x", (4, 32))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.add(relax.op.matmul(x, relax.const(w1)), relax.const(b1)))
            h = bb.emit(relax.op.nn.relu(h))
            y = bb.emit_output(relax.op.matmul(h, relax.const(w2)))
        bb.emit_func_output(y)
    return bb.get()
