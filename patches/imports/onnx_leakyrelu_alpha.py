"""onnx_leakyrelu_alpha: ONNX ``LeakyRelu`` imported with the default slope.

Planted bug: the ``LeakyRelu`` converter (``onnx_frontend.LeakyRelu._impl_v1``)
ignores the ``alpha`` attribute and uses ONNX's default 0.01. Why realistic:
the default is what tests with default-constructed layers check; a model
with ``alpha=0.2`` (GANs, YOLO) then gets negative activations 20 times too
small. Shows on negative inputs only: the range must hold them.
"""

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "LeakyRelu", 17
CONVERTER = "onnx_frontend.LeakyRelu._impl_v1"
KIND = "ignored attribute"
PLANTS = "alpha ignored: slope 0.01 instead of the model's 0.2"
SHAPE, RANGE = (4, 8), (-4.0, 4.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("LeakyRelu", [x], alpha=0.2)


def planted():
    return onnx_converter("LeakyRelu", without_attributes("alpha"))
