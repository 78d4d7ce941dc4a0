"""legal_sigmoid_overflow: ``relax.sigmoid`` legalized as exp(x) / (1 + exp(x)).

Planted bug: the kernel is the algebraically equal exp(x) / (1 + exp(x)):
inf / inf = NaN past x = 88.72 where sigmoid is 1. Why realistic: a form
that looks cheaper (one exp shared) and is right on every input a test
draws from [-10, 10]. The converter emits the right ``relax.sigmoid``.
"""

from tvm import te, topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "Sigmoid", 17
COMPONENT, SUBJECT = "legalization", "relax.sigmoid"
ATTRIBUTE = ("relax.sigmoid", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.sigmoid (LegalizeOps)"
KIND = "overflow"
PLANTS = "exp(x) / (1 + exp(x)): NaN past x = 88.72"
SHAPE, RANGE = (4, 8), (-100.0, 100.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Sigmoid", [x])


def _ratio(x, attrs=None):
    e = topi.exp(x)
    return topi.divide(e, topi.add(te.const(1.0, x.dtype), e))


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_ratio, "sigmoid_ratio"))
