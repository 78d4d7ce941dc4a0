"""onnx_reducemean_negaxis: ONNX ``ReduceMean`` with a negative axis normalized one off.

Planted bug: the ``ReduceMean`` converter (``onnx_frontend.ReduceMean._impl_v13``)
normalizes a negative axis as ``axis + rank - 1`` instead of ``axis + rank``
(an off-by-one copied from a last-index computation). ``axes=[-1]`` on a
(2, 6, 6) tensor reduces axis 1 instead of 2; with ``keepdims=0`` the shape
is the same (2, 6). Shows on any input.
"""

from ._plant import onnx_converter

FRONTEND, OP, OPSET = "onnx", "ReduceMean", 17
CONVERTER = "onnx_frontend.ReduceMean._impl_v13"
KIND = "wrong axis"
PLANTS = "a negative axis normalized as axis + rank - 1: axes [-1] reduce axis 1 of 3"
SHAPE, RANGE = (2, 6, 6), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("ReduceMean", [x], axes=[-1], keepdims=0)


def _axis_one_off(original):
    def converter(cls, bb, inputs, attr, params):
        rank = len(inputs[0].ty.shape)
        axes = [a + rank - 1 if a < 0 else a for a in attr.get("axes", [])]
        return original(bb, inputs, {**attr, "axes": axes} if "axes" in attr else attr, params)
    return converter


def planted():
    return onnx_converter("ReduceMean", _axis_one_off)
