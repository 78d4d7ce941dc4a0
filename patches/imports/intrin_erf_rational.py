"""intrin_erf_rational: ``tirx.erf`` lowered for llvm by a three-term rational approximation.

Planted bug: the rule computes erf by Abramowitz and Stegun's 7.1.25 (at most
2.5e-5 off) instead of the C library's erff (``default.FLowerIntrinsic``).
Why realistic: TVM ships a ``fast_erf`` for exactly this trade; a target
rule that takes it for the exact intrinsic is a one-line mistake. Compare
``legal_erf_approx``: the same formula in the kernel itself.
"""

from ._lowering import argument, dtype_of
from ._plant import op_attribute
from .legal_erf_approx import as_and_stegun

FRONTEND, OP, OPSET = "onnx", "Erf", 17
COMPONENT, SUBJECT = "codegen", "tirx.erf"
CONVERTER = "llvm.FLowerIntrinsic of tirx.erf (tirx.LowerIntrin)"
KIND = "approximate formula"
PLANTS = "erf by Abramowitz-Stegun 7.1.25 (at most 2.5e-5 off)"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR = {"b": "2.5e-5 is below a float16 rounding",
          "c": "2.5e-5 times the context's 0.01 is below float32's atol (1e-6) beside values in the hundreds"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Erf", [x])


def _rational(call):
    x = argument(call)
    return as_and_stegun(x, dtype_of(x))


def planted():
    return op_attribute("tirx.erf", "llvm.FLowerIntrinsic", _rational)
