"""onnx_softmax_axis: ONNX ``Softmax`` (opset 13+) imported with the old default axis.

Planted bug: the ``Softmax`` converter (``onnx_frontend.Softmax._impl_v13``)
fills a missing ``axis`` with 1, the default of opset 1..12, instead of
opset 13's -1. Why realistic: the default changed with the opset, and a
converter shared between versions keeps the old one; on a rank-3 tensor
the softmax runs over the wrong axis with the same shape. Shows on any input.
"""

from ._plant import onnx_converter, with_defaults

FRONTEND, OP, OPSET = "onnx", "Softmax", 17
CONVERTER = "onnx_frontend.Softmax._impl_v13"
KIND = "wrong axis"
PLANTS = "a missing axis defaults to 1 (opset <= 12) instead of -1"
SHAPE, RANGE = (2, 4, 8), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Softmax", [x])


def planted():
    return onnx_converter("Softmax", with_defaults(axis=1))
