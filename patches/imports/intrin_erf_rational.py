"""intrin_erf_rational: ``tirx.erf`` lowered for llvm by Winitzki's closed-form approximation.

Planted bug: the rule computes erf by Winitzki's approximation (at most 3.5e-4
relative error) instead of the C library's erff (``default.FLowerIntrinsic``).
Why realistic: TVM ships a ``fast_erf`` for exactly this trade; a target
rule that takes it for the exact intrinsic is a one-line mistake. Compare
``legal_erf_approx``: the same formula in the kernel itself.
"""

from ._lowering import argument, dtype_of
from . import legal_erf_approx
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Erf", 17
COMPONENT, SUBJECT = "codegen", "tirx.erf"
ATTRIBUTE = ("tirx.erf", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.erf (tirx.LowerIntrin)"
KIND = "approximate formula"
PLANTS = "erf by Winitzki's approximation (3.5e-4 relative at most)"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR = {"b": "3.5e-4 relative is below a float16 rounding",
          "e": "the context's second output is an Erf, which the plant breaks too: naming either is right"}
UNBUILDABLE: dict = {}


# the model legal_erf_approx plants the same formula in, so that only the part planted differs
core = legal_erf_approx.core


def _rational(call):
    x = argument(call)
    return legal_erf_approx.winitzki(x, dtype_of(x))


def planted():
    return op_attribute(*ATTRIBUTE, _rational)
