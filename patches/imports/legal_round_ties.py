"""legal_round_ties: ``relax.round`` legalized with the wrong rule for ties.

Planted bug: LegalizeOps turns ``relax.round`` into a kernel computing
``floor(x + 0.5)``: ties round up (2.5 -> 3, -2.5 -> -2) instead of to even
(ONNX Round, numpy, TOPI's ``nearbyint``). Why realistic: it is the
schoolbook rounding and the first formula a kernel writer reaches for; it
differs only on exact ties, which random inputs never hit (the edge search
tries them). The converter emits the right ``relax.round``: a maintainer
fixes the legalization (TOPI), not the frontend.
"""

from tvm import te, tirx

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "Round", 17
COMPONENT, SUBJECT = "legalization", "relax.round"
ATTRIBUTE = ("relax.round", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.round (LegalizeOps)"
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


def _half_up(x, attrs=None):
    return te.compute(x.shape, lambda *i: tirx.floor(x(*i) + tirx.const(0.5, x.dtype)), name="T_round")


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_half_up, "round_half_up"))
