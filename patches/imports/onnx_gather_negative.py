"""onnx_gather_negative: ONNX ``Gather`` with negative indices clamped to 0.

Planted bug: the ``Gather`` converter (``onnx_frontend.Gather._impl_v13``)
skips the normalization of negative indices and takes with
``mode="clip"``: index -1 (the last row) reads row 0. Why realistic:
negative indices are legal in ONNX and rare in tests; a converter that
guards against out-of-bounds reads by clipping instead of wrapping is a
common shortcut (TVM 0.27's torch ``select`` passes -1 straight to ``take``).
Shows on any input: the indices are constants [-1, 2, -3].
"""

from tvm import relax

from ._plant import onnx_converter

FRONTEND, OP, OPSET = "onnx", "Gather", 17
CONVERTER = "onnx_frontend.Gather._impl_v13"
KIND = "negative index"
PLANTS = "negative indices clipped to 0 instead of counted from the end"
SHAPE, RANGE = (6, 8), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Gather", [x, g.ints([-1, 2, -3])], axis=0)


def _clipped(original):
    def converter(cls, bb, inputs, attr, params):
        return relax.op.take(inputs[0], inputs[1], attr.get("axis", 0), mode="clip")
    return converter


def planted():
    return onnx_converter("Gather", _clipped)
