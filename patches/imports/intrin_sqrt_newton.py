"""intrin_sqrt_newton: ``tirx.sqrt`` lowered for llvm by three Newton steps from x / 2.

Planted bug: the rule refines a guess of x / 2 three times (0 stays 0): right
near 1 to 4, far off for large arguments (sqrt(1e4) comes out 630). Why realistic: a
software sqrt for a target without one, tested on small inputs.
"""

from tvm import tirx

from ._lowering import argument, const, dtype_of
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Sqrt", 17
COMPONENT, SUBJECT = "codegen", "tirx.sqrt"
ATTRIBUTE = ("tirx.sqrt", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.sqrt (tirx.LowerIntrin)"
KIND = "approximate formula"
PLANTS = "three Newton steps from x / 2 (sqrt(1e4) = 630)"
SHAPE, RANGE = (4, 8), (0.0, 1000.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Sqrt", [x])


def _newton(call):
    x = argument(call)
    dtype = dtype_of(x)
    half, zero = const(0.5, dtype), const(0.0, dtype)
    guess = tirx.Select(x > zero, x * half, const(1.0, dtype))
    for _ in range(3):
        guess = half * (guess + x / guess)
    return tirx.Select(x > zero, guess, zero)


def planted():
    return op_attribute(*ATTRIBUTE, _newton)
