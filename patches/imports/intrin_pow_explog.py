"""intrin_pow_explog: ``tirx.pow`` lowered for llvm as exp(y log(x)).

Planted bug: the rule computes x^y as exp(y * log(x)): NaN for every negative
base, where x^3 of a negative x is negative and finite. Why realistic: the
identity every fast-math pow starts from; correct for the positive bases a
test of "power" usually draws.
"""

from tvm import tirx

from ._lowering import exp
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Pow", 17
COMPONENT, SUBJECT = "codegen", "tirx.pow"
ATTRIBUTE = ("tirx.pow", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.pow (tirx.LowerIntrin)"
KIND = "domain"
PLANTS = "exp(y log(x)): NaN for a negative base"
SHAPE, RANGE = (4, 8), (-2.0, 2.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Pow", [x, g.const(3.0)])


def _exp_log(call):
    x, y = call.args[0], call.args[1]
    return exp(y * tirx.log(x))


def planted():
    return op_attribute(*ATTRIBUTE, _exp_log)
