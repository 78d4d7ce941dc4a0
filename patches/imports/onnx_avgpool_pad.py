"""onnx_avgpool_pad: ONNX ``AveragePool`` counting padding it should not.

Planted bug: the pool converter (``onnx_frontend.Pool._impl_v1``, as
``AveragePool``) takes a missing ``count_include_pad`` as 1: the border
averages divide by the full kernel (9) instead of the cells inside (4 or 6).
Why realistic: torch's ``AvgPool2d`` defaults to counting the padding,
ONNX to not; converters borrowed from one get the other's default. Shows at
the border, on inputs away from 0.
"""

from ._plant import onnx_converter, with_defaults

FRONTEND, OP, OPSET = "onnx", "AveragePool", 17
CONVERTER = "onnx_frontend.Pool._impl_v1 (AveragePool)"
KIND = "wrong default"
PLANTS = "a missing count_include_pad taken as 1 (torch's default) instead of ONNX's 0"
SHAPE, RANGE = (1, 2, 6, 6), (0.5, 1.5)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1])


def planted():
    return onnx_converter("AveragePool", with_defaults(count_include_pad=1))
