"""intrin_rsqrt_fast: ``tirx.rsqrt`` legalized by the fast inverse square root.

Planted bug: the intrinsic's target-independent rule (``default.FLegalize``,
stock: 1 / sqrt(x)) is replaced by the bit trick 0x5f3759df - (bits >> 1)
and one Newton step: at most 1.75e-3 relative error. TOPI's layer_norm
kernel calls ``T.rsqrt``, so every LayerNormalization gets it. Why realistic:
the most famous fast math in the world, "good enough" for normalization.
"""

from tvm import tirx

from ._lowering import argument, const, dtype_of
from . import legal_layernorm_onepass
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "LayerNormalization", 17
COMPONENT, SUBJECT = "codegen", "tirx.rsqrt"
ATTRIBUTE = ("tirx.rsqrt", "default.FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "default.FLegalize of tirx.rsqrt (tirx.LowerIntrin)"
KIND = "approximate formula"
PLANTS = "the fast inverse square root (0x5f3759df, one Newton step; 1.75e-3 off)"
SHAPE, RANGE = (4, 16), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


# the model legal_layernorm_onepass plants the same formula in, so that only the part planted differs
core = legal_layernorm_onepass.core


def _fast(call):
    x = argument(call)
    dtype = dtype_of(x)
    value = tirx.Cast("float32", x) if dtype != "float32" else x
    bits = tirx.reinterpret("int32", value)
    guess = tirx.reinterpret("float32", tirx.const(0x5F3759DF, "int32") - (bits >> tirx.const(1, "int32")))
    guess = guess * (const(1.5, "float32") - const(0.5, "float32") * value * guess * guess)
    return tirx.Cast(dtype, guess) if dtype != "float32" else guess


def planted():
    return op_attribute(*ATTRIBUTE, _fast)
