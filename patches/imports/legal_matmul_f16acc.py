"""legal_matmul_f16acc: ``relax.matmul`` of float32 legalized with a float16 accumulator.

Planted bug: the kernel multiplies and accumulates in float16 and casts the
result back to float32. Over 256 products the float16 sum loses the
result's fourth digit. Why realistic: a half-precision GEMM template picked
for float32 operands by a dtype check that looks at the output only. The
converter emits the right float32 ``relax.matmul``.
"""

import numpy as np
from tvm import te, topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "MatMul", 17
COMPONENT, SUBJECT = "legalization", "relax.matmul"
ATTRIBUTE = ("relax.matmul", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.matmul (LegalizeOps)"
KIND = "narrowed accumulator"
PLANTS = "products accumulated in float16 and cast back (float32 model)"
SHAPE, RANGE = (4, 256), (-1.0, 1.0)
UNFAIR = {"b": "the model computes in float16 already: a float16 accumulator is its own precision"}
UNBUILDABLE: dict = {}


def core(g, x):
    weight = np.random.default_rng(11).uniform(-1.0, 1.0, (256, 8))
    return g.planted("MatMul", [x, g.const(weight)])


def _narrow_matmul(a, b, attrs=None):
    k = te.reduce_axis((0, a.shape[-1]), name="k")
    a16, b16 = topi.cast(a, "float16"), topi.cast(b, "float16")
    out = te.compute((a.shape[0], b.shape[1]), lambda i, j: te.sum(a16[i, k] * b16[k, j], axis=k), name="T_matmul")
    return topi.cast(out, a.dtype)


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_narrow_matmul, "matmul_float16_accumulate"))
