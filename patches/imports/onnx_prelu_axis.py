"""onnx_prelu_axis: ONNX ``PRelu`` applying a per-channel slope along the last axis.

Planted bug: the ``PRelu`` converter (``onnx_frontend.PRelu._impl_v1``)
flattens a slope of shape (C, 1, 1) to (C,) before broadcasting, so ONNX's
right-aligned broadcasting applies it along the last axis (width) instead
of the channels. Why realistic: the shapes still check wherever the width
equals the channel count (4 and 4 here), and a (C,) slope is the common
case that tests cover. Shows on negative inputs.
"""

import numpy as np
from tvm import relax

from ._plant import onnx_converter, with_inputs

FRONTEND, OP, OPSET = "onnx", "PRelu", 17
CONVERTER = "onnx_frontend.PRelu._impl_v1"
KIND = "wrong axis"
PLANTS = "a (C, 1, 1) slope flattened to (C,): applied along the width instead of the channels"
SHAPE, RANGE = (1, 4, 4, 4), (-2.0, 2.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("PRelu", [x, g.const(np.array([0.05, 0.2, 0.5, 0.9]).reshape(4, 1, 1))])


def _flattened(bb, inputs):
    channels = int(inputs[1].ty.shape[0])
    return [inputs[0], bb.normalize(relax.op.reshape(inputs[1], (channels,)))]


def planted():
    return onnx_converter("PRelu", with_inputs(_flattened))
