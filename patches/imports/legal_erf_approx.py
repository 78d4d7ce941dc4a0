"""legal_erf_approx: ``relax.erf`` legalized with Winitzki's closed-form approximation.

Planted bug: the kernel computes erf(x) = sign(x) sqrt(1 - exp(-x^2 (4/pi +
a x^2) / (1 + a x^2))), a = 0.140012: at most 3.5e-4 relative error, beyond
float32's tolerance. Why realistic: a popular "fast erf" (one exp, one sqrt),
accurate enough for plots. The legalization, not the ``erf`` intrinsic's
lowering: the kernel no longer calls ``tirx.erf``.
"""

from tvm import te, tirx

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "Erf", 17
COMPONENT, SUBJECT = "legalization", "relax.erf"
ATTRIBUTE = ("relax.erf", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.erf (LegalizeOps)"
KIND = "approximate formula"
PLANTS = "erf by Winitzki's approximation (3.5e-4 relative at most)"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR = {"b": "3.5e-4 relative is below a float16 rounding",
          "e": "the context's second output is an Erf, which the plant breaks too: naming either is right"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Erf", [x])


def winitzki(value, dtype):
    """erf by Winitzki's approximation on a scalar PrimExpr ``value`` of ``dtype``."""
    c = lambda v: tirx.const(v, dtype)  # noqa: E731
    a = c(0.140012)
    square = value * value
    inner = square * (c(4.0 / 3.141592653589793) + a * square) / (c(1.0) + a * square)
    magnitude = tirx.sqrt(c(1.0) - tirx.exp(c(0.0) - inner))
    return tirx.Select(value < c(0.0), c(0.0) - magnitude, magnitude)


def _rational(x, attrs=None):
    return te.compute(x.shape, lambda *i: winitzki(x(*i), x.dtype), name="T_erf")


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_rational, "erf_rational"))
