"""intrin_tanh_expformula: ``tirx.tanh`` lowered for llvm as (exp(2x) - 1) / (exp(2x) + 1).

Planted bug: the lowering rule uses the textbook identity, whose exp(2x)
overflows past x = 44.36 in float32 (11.09 / 2 = 5.5 in float16): inf / inf =
NaN where tanh is 1. Why realistic: it is the bug apache/tvm#16438 fixed for
Metal and WebGPU (their built-in tanh is this formula); TVM's own llvm rule
(``DispatchNumericalStableTanh``) exists because of it. LegalizeOps emits the
right ``T.tanh``: a maintainer fixes the lowering rule, not TOPI.
"""

from ._lowering import argument, const, dtype_of, exp
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Tanh", 17
COMPONENT, SUBJECT = "codegen", "tirx.tanh"
ATTRIBUTE = ("tirx.tanh", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.tanh (tirx.LowerIntrin)"
KIND = "overflow"
PLANTS = "(exp(2x) - 1) / (exp(2x) + 1): NaN past x = 44.36"
SHAPE, RANGE = (4, 8), (-60.0, 60.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Tanh", [x])


def _identity(call):
    x = argument(call)
    dtype = dtype_of(x)
    e = exp(const(2.0, dtype) * x)
    return (e - const(1.0, dtype)) / (e + const(1.0, dtype))


def planted():
    return op_attribute(*ATTRIBUTE, _identity)
