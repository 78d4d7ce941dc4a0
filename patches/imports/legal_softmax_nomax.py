"""legal_softmax_nomax: ``relax.nn.softmax`` legalized without subtracting the maximum.

Planted bug: the kernel computes exp(x) / sum(exp(x)) directly; past
ln(FLT_MAX) = 88.72 the exponentials overflow and the result is NaN, where
the stable form (x - max) is exact. Why realistic: the textbook formula;
every softmax kernel has to remember the shift. The converter emits the
right ``relax.nn.softmax``.
"""

from tvm import topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "Softmax", 17
COMPONENT, SUBJECT = "legalization", "relax.nn.softmax"
ATTRIBUTE = ("relax.nn.softmax", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.nn.softmax (LegalizeOps)"
KIND = "overflow (no max shift)"
PLANTS = "exp(x) / sum(exp(x)): NaN past x = 88.72"
SHAPE, RANGE = (4, 8), (-100.0, 100.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Softmax", [x], axis=-1)


def _no_shift(x, attrs=None):
    e = topi.exp(x)
    return topi.divide(e, topi.sum(e, axis=[int(attrs.axis)], keepdims=True))


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_no_shift, "softmax_no_shift"))
