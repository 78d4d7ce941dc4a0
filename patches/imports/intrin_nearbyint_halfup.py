"""intrin_nearbyint_halfup: ``tirx.nearbyint`` lowered for llvm as floor(x + 0.5).

Planted bug: the rule (stock: llvm's ``nearbyint``, ties to even) rounds
ties up. TOPI's round kernel calls ``T.nearbyint``: the kernel is right, its
lowering is not (compare ``legal_round_ties``). Shows on exact ties only.
"""

from tvm import tirx

from ._lowering import argument, const, dtype_of
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


def showing_input(shape, rng):
    """Half-integers: where the tie rule decides."""
    return rng.integers(-4, 4, shape) + 0.5


def core(g, x):
    return g.planted("Round", [x])


def _half_up(call):
    x = argument(call)
    return tirx.floor(x + const(0.5, dtype_of(x)))


def planted():
    return op_attribute(*ATTRIBUTE, _half_up)
