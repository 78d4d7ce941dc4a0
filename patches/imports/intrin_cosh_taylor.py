"""intrin_cosh_taylor: ``tirx.cosh`` lowered for llvm with its small-argument series used up to |x| = 1.

Planted bug: the rule computes cosh(x) as 1 + x^2 / 2 where |x| < 1 and by
exp elsewhere; the series is good near 0 only, and at |x| = 1 it is 2.8%
off. Why realistic: a branch threshold set where the series "looks close" on
a plot; the stock llvm target calls the C library's coshf
(``default.FLowerIntrinsic``).
"""

from tvm import tirx

from ._lowering import argument, const, dtype_of, exp
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Cosh", 17
COMPONENT, SUBJECT = "codegen", "tirx.cosh"
ATTRIBUTE = ("tirx.cosh", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.cosh (tirx.LowerIntrin)"
KIND = "a small-argument branch taken too far"
PLANTS = "1 + x^2 / 2 for |x| < 1 (2.8% off at 1)"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Cosh", [x])


def _series_too_far(call):
    x = argument(call)
    dtype = dtype_of(x)
    near = x * x < const(1.0, dtype)
    series = const(1.0, dtype) + x * x * const(0.5, dtype)
    far = (exp(x) + exp(const(0.0, dtype) - x)) * const(0.5, dtype)
    return tirx.Select(near, series, far)


def planted():
    return op_attribute(*ATTRIBUTE, _series_too_far)
