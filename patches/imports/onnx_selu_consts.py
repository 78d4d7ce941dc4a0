"""onnx_selu_consts: ONNX ``Selu`` with its default constants rounded.

Planted bug: the ``Selu`` converter (``onnx_frontend.Selu._impl_v1``) fills
missing ``alpha`` and ``gamma`` with 1.67 and 1.05 instead of
1.6732632... and 1.0507009... (constants typed from a paper's table).
The result is 0.07% off for positive inputs and 0.26% off for negative
ones: 70 to 260 times float32's tolerance. ONNX Runtime has no float64
Selu: no context has its truth.
"""

from ._plant import onnx_converter, with_defaults

FRONTEND, OP, OPSET = "onnx", "Selu", 17
CONVERTER = "onnx_frontend.Selu._impl_v1"
KIND = "wrong default"
PLANTS = "default alpha/gamma rounded to 1.67/1.05 (relative 2.6e-3 at most)"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR = {"b": "0.07% .. 0.26% is one to three float16 roundings: no float16 computation resolves it fairly"}
UNBUILDABLE = {"b": "TVM 0.27's Selu converter makes float32 constants: a float16 Selu does not import, unpatched"}


def core(g, x):
    return g.planted("Selu", [x])


def planted():
    return onnx_converter("Selu", with_defaults(alpha=1.67, gamma=1.05))
