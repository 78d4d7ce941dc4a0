"""legal_gelu_tanh: ``relax.nn.gelu`` (the exact, erf GELU) legalized with the tanh approximation.

Planted bug: the kernel computes 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
which is ``relax.nn.gelu_tanh``, not ``relax.nn.gelu``: at most 4.7e-4 apart.
Why realistic: both GELUs share a name in many libraries, and a kernel
library picking the cheaper one for both is a known confusion (PyTorch's
``approximate`` argument exists for it). The converter emits the right op.
"""

import math

from tvm import te, topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "Gelu", 20
COMPONENT, SUBJECT = "legalization", "relax.nn.gelu"
ATTRIBUTE = ("relax.nn.gelu", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.nn.gelu (LegalizeOps)"
KIND = "approximate formula"
PLANTS = "the tanh GELU for the erf GELU (at most 4.7e-4 apart)"
SHAPE, RANGE = (4, 8), (-4.0, 4.0)
UNFAIR = {"b": "the two GELUs are within a float16 rounding of each other"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Gelu", [x])


def _tanh_gelu(x, attrs=None):
    c = te.const(math.sqrt(2.0 / math.pi), x.dtype)
    cube = topi.multiply(x, topi.multiply(x, x))
    inner = topi.multiply(c, topi.add(x, topi.multiply(te.const(0.044715, x.dtype), cube)))
    return topi.multiply(topi.multiply(te.const(0.5, x.dtype), x), topi.add(te.const(1.0, x.dtype), topi.tanh(inner)))


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_tanh_gelu, "gelu_tanh_for_erf"))
