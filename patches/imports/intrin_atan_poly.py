"""intrin_atan_poly: ``tirx.atan`` lowered by x / (1 + 0.28 x^2) (and its reflection).

Planted bug: the rule uses the well-known one-term rational approximation,
at most 5e-3 radians off. Why realistic: it is the "fast atan" of graphics
code, accurate enough for angles on screen. The stock llvm target calls the
C library's atanf (``default.FLowerIntrinsic``).
"""

from tvm import tirx

from ._lowering import argument, const, dtype_of
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Atan", 17
COMPONENT, SUBJECT = "codegen", "tirx.atan"
ATTRIBUTE = ("tirx.atan", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.atan (tirx.LowerIntrin)"
KIND = "approximate formula"
PLANTS = "x / (1 + 0.28125 x^2), reflected past |x| = 1 (5e-3 off)"
SHAPE, RANGE = (4, 8), (-10.0, 10.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Atan", [x])


def _rational(call):
    x = argument(call)
    dtype = dtype_of(x)
    c = lambda v: const(v, dtype)  # noqa: E731
    inner = x / (c(1.0) + c(0.28125) * x * x)
    half_pi = tirx.Select(x < c(0.0), c(-1.5707963267948966), c(1.5707963267948966))
    outer = half_pi - x / (x * x + c(0.28125))
    return tirx.Select(x * x <= c(1.0), inner, outer)


def planted():
    return op_attribute(*ATTRIBUTE, _rational)
