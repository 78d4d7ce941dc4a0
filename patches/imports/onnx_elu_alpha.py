"""onnx_elu_alpha: ONNX ``Elu`` imported with the default alpha.

Planted bug: the ``Elu`` converter (``onnx_frontend.Elu._impl_v1``) ignores
``alpha`` and uses 1.0: negative inputs saturate at -1 instead of the
model's -0.5. Shows on negative inputs. ONNX Runtime has no float64 Elu: no
context has its truth.
"""

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "Elu", 17
CONVERTER = "onnx_frontend.Elu._impl_v1"
KIND = "ignored attribute"
PLANTS = "alpha ignored: 1.0 instead of the model's 0.5"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE = {"b": "TVM 0.27's Elu converter makes float32 constants: a float16 Elu does not import, unpatched"}


def core(g, x):
    return g.planted("Elu", [x], alpha=0.5)


def planted():
    return onnx_converter("Elu", without_attributes("alpha"))
