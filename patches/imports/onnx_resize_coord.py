"""onnx_resize_coord: ONNX ``Resize`` sampling at the wrong coordinates.

Planted bug: the ``Resize`` converter (``onnx_frontend.Resize._impl_v18``)
ignores ``coordinate_transformation_mode`` and samples with "asymmetric"
coordinates (x_in = x_out / scale) instead of the model's "half_pixel"
(x_in = (x_out + 0.5) / scale - 0.5). Why realistic: the mode is the most
misread attribute of Resize (align_corners bugs in every framework); the
output has the right shape and is off by a quarter pixel. Shows on any
non-constant input.
"""

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "Resize", 17
CONVERTER = "onnx_frontend.Resize._impl_v18"
KIND = "ignored attribute"
PLANTS = "coordinate_transformation_mode ignored: asymmetric instead of half_pixel"
SHAPE, RANGE = (1, 1, 4, 4), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    scales = g.const([1.0, 1.0, 2.0, 2.0], "float32")
    return g.planted("Resize", [x, "", scales], mode="linear", coordinate_transformation_mode="half_pixel")


def planted():
    return onnx_converter("Resize", without_attributes("coordinate_transformation_mode",
                                                        coordinate_transformation_mode=b"asymmetric"))
