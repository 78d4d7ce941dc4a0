"""legal_erf_approx: ``relax.erf`` legalized with a three-term rational approximation.

Planted bug: the kernel computes erf with Abramowitz and Stegun's 7.1.25,
1 - (a1 t + a2 t^2 + a3 t^3) exp(-x^2) with t = 1 / (1 + p x): at most 2.5e-5
off, beyond float32's tolerance around |x| = 1. Why realistic: a classic
"fast erf" that is accurate enough for plots. The legalization, not the
``erf`` intrinsic's lowering: the kernel no longer calls ``tirx.erf``.
"""

from tvm import te, tirx

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "Erf", 17
COMPONENT, SUBJECT = "legalization", "relax.erf"
CONVERTER = "FLegalize of relax.erf (LegalizeOps)"
KIND = "approximate formula"
PLANTS = "erf by Abramowitz-Stegun 7.1.25 (at most 2.5e-5 off)"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR = {"b": "2.5e-5 is below a float16 rounding",
          "c": "2.5e-5 times the context's 0.01 is below float32's atol (1e-6) beside values in the hundreds"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Erf", [x])


def as_and_stegun(value, dtype):
    """erf by A&S 7.1.25 on a scalar PrimExpr ``value`` of ``dtype``."""
    c = lambda v: tirx.const(v, dtype)  # noqa: E731
    z = tirx.abs(value) if hasattr(tirx, "abs") else tirx.fabs(value)
    t = c(1.0) / (c(1.0) + c(0.47047) * z)
    poly = t * (c(0.3480242) + t * (c(-0.0958798) + t * c(0.7478556)))
    positive = c(1.0) - poly * tirx.exp(c(0.0) - z * z)
    return tirx.Select(value < c(0.0), c(0.0) - positive, positive)


def _rational(x, attrs=None):
    return te.compute(x.shape, lambda *i: as_and_stegun(x(*i), x.dtype), name="T_erf")


def planted():
    return op_attribute("relax.erf", "FLegalize", legalized_as(_rational, "erf_rational"))
