"""onnx_cumsum_exclusive: ONNX ``CumSum`` imported without ``exclusive``.

Planted bug: the ``CumSum`` converter (``onnx_frontend.CumSum._impl_v14``)
ignores ``exclusive``: every position includes its own element. Why
realistic: the flag is rare (position ids, prefix offsets) and an inclusive
cumsum has the same shape. Shows on any nonzero input.
"""

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "CumSum", 17
CONVERTER = "onnx_frontend.CumSum._impl_v14"
KIND = "ignored attribute"
PLANTS = "exclusive ignored: an inclusive prefix sum"
SHAPE, RANGE = (4, 8), (0.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("CumSum", [x, g.ints(1)], exclusive=1)


def planted():
    return onnx_converter("CumSum", without_attributes("exclusive"))
