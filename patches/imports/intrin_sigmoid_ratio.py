"""intrin_sigmoid_ratio: ``tirx.sigmoid`` legalized as exp(x) / (1 + exp(x)) for every target.

Planted bug: the intrinsic's target-independent rule (``default.FLegalize``,
stock: 1 / (1 + exp(-x))) is replaced by the ratio form, NaN past x = 88.72.
TOPI's sigmoid kernel calls ``T.sigmoid``: the kernel is right, its lowering
is not (compare ``legal_sigmoid_overflow``, the same formula in the kernel).
"""

from ._lowering import argument, const, dtype_of, exp
from . import legal_sigmoid_overflow
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Sigmoid", 17
COMPONENT, SUBJECT = "codegen", "tirx.sigmoid"
ATTRIBUTE = ("tirx.sigmoid", "default.FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "default.FLegalize of tirx.sigmoid (tirx.LowerIntrin)"
KIND = "overflow"
PLANTS = "exp(x) / (1 + exp(x)): NaN past x = 88.72"
SHAPE, RANGE = (4, 8), (-100.0, 100.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


# the model legal_sigmoid_overflow plants the same formula in, so that only the part planted differs
core = legal_sigmoid_overflow.core


def _ratio(call):
    x = argument(call)
    e = exp(x)
    return e / (const(1.0, dtype_of(x)) + e)


def planted():
    return op_attribute(*ATTRIBUTE, _ratio)
