"""onnx_slice_negative: ONNX ``Slice`` with negative starts and ends one off.

Planted bug: the ``Slice`` converter (``onnx_frontend.Slice._impl_v13``)
normalizes a negative start or end as ``dim + value - 1`` (the last valid
index, not the length, added): ``x[:, -6:-1]`` reads ``x[:, -7:-2]``, a
window of the same width moved one place. Why realistic: both bounds move,
so the shape checks pass. Shows on any input.
"""

import numpy as np
from tvm import relax
from tvm.relax.frontend.onnx.onnx_frontend import get_constant

from ._plant import onnx_converter

FRONTEND, OP, OPSET = "onnx", "Slice", 17
CONVERTER = "onnx_frontend.Slice._impl_v13"
KIND = "negative index"
PLANTS = "negative starts/ends normalized as dim + value - 1: x[:, -6:-1] reads x[:, -7:-2]"
SHAPE, RANGE = (4, 10), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Slice", [x, g.ints([-6]), g.ints([-1]), g.ints([1])])


def _one_off(original):
    def converter(cls, bb, inputs, attr, params):
        moved = type(inputs)()
        for k, value in enumerate(inputs):
            if k in (1, 2):
                bound = get_constant(value, params).value.numpy()
                value = relax.const(np.where(bound < 0, bound - 1, bound).astype(bound.dtype))
            moved.append(value)
        return original(bb, moved, attr, params)
    return converter


def planted():
    return onnx_converter("Slice", _one_off)
