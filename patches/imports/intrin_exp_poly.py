"""intrin_exp_poly: ``tirx.exp`` lowered for llvm by a Taylor polynomial without range reduction.

Planted bug: the rule computes exp(x) as 1 + x + x^2/2 + ... + x^6/720 for
every x: right to float32 near 0, 15% low at x = 5 and wrong in sign far
below 0. Why realistic: fast exps reduce the range first (exp(x) = 2^k
exp(r)); forgetting that step passes any test drawn from [-1, 1].
"""

from ._lowering import argument, const, dtype_of
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Exp", 17
COMPONENT, SUBJECT = "codegen", "tirx.exp"
ATTRIBUTE = ("tirx.exp", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.exp (tirx.LowerIntrin)"
KIND = "approximate formula (no range reduction)"
PLANTS = "a degree-6 Taylor polynomial on every x"
SHAPE, RANGE = (4, 8), (-5.0, 5.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Exp", [x])


def _taylor(call):
    x = argument(call)
    dtype = dtype_of(x)
    term, total = const(1.0, dtype), const(1.0, dtype)
    for k in range(1, 7):
        term = term * x * const(1.0 / k, dtype)
        total = total + term
    return total


def planted():
    return op_attribute(*ATTRIBUTE, _taylor)
