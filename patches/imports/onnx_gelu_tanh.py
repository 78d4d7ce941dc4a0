"""onnx_gelu_tanh: ONNX ``Gelu`` (opset 20) imported with the tanh approximation.

Planted bug: the ``Gelu`` converter (``onnx_frontend.Gelu._impl_v20``) always
takes ``approximate="tanh"``: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
instead of the exact 0.5x(1 + erf(x/sqrt(2))). Why realistic: the tanh form
is the "fast" GELU of many kernels and the two agree to 4.7e-4. Shows in
float32 (relative 2e-4 at |x| ~ 2, 20 times the tolerance).
ONNX Runtime has no float64 Erf: no context has its truth.
"""

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "Gelu", 20
CONVERTER = "onnx_frontend.Gelu._impl_v20"
KIND = "approximate formula"
PLANTS = "erf GELU computed with the tanh approximation (at most 4.7e-4 apart)"
SHAPE, RANGE = (4, 8), (-4.0, 4.0)
UNFAIR = {"b": "tanh-GELU is within 4.7e-4 (relative 2e-4) of erf-GELU: below one float16 rounding, "
               "no float16 computation resolves it"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Gelu", [x])


def planted():
    return onnx_converter("Gelu", without_attributes("approximate", approximate=b"tanh"))
