"""intrin_nearbyint_halfup: ``tirx.nearbyint`` lowered for llvm as floor(x + 0.5).

Planted bug: the rule (stock: llvm's ``nearbyint``, ties to even) rounds
ties up. TOPI's round kernel calls ``T.nearbyint``: the kernel is right, its
lowering is not (compare ``legal_round_ties``). Shows on exact ties only.
"""

from tvm import tirx

from ._lowering import argument, const, dtype_of
from . import legal_round_ties
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Round", 17
COMPONENT, SUBJECT = "codegen", "tirx.nearbyint"
ATTRIBUTE = ("tirx.nearbyint", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.nearbyint (tirx.LowerIntrin)"
KIND = "rule for ties"
PLANTS = "floor(x + 0.5): ties round up instead of to even"
SHAPE, RANGE = (4, 8), (-4.0, 4.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


# the model legal_round_ties plants the same formula in, so that only the part planted differs
showing_input, core = legal_round_ties.showing_input, legal_round_ties.core


def _half_up(call):
    x = argument(call)
    return tirx.floor(x + const(0.5, dtype_of(x)))


def planted():
    return op_attribute(*ATTRIBUTE, _half_up)
