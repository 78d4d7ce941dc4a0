"""legal_prelu_lastaxis: ``relax.nn.prelu`` legalized applying the slope along the last axis.

Planted bug: the kernel ignores the op's ``axis`` (the channels) and reads
the slope along the last axis. On a (1, 4, 4, 4) input both axes have four
entries, so it builds and runs, with each channel's negative values scaled
by another channel's slope. Why realistic: TOPI's ``prelu`` takes the axis as
an argument, and a legalization that forgets to pass it gets the default.
"""

import numpy as np
from tvm import te, tirx

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "PRelu", 17
COMPONENT, SUBJECT = "legalization", "relax.nn.prelu"
ATTRIBUTE = ("relax.nn.prelu", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.nn.prelu (LegalizeOps)"
KIND = "wrong axis"
PLANTS = "the slope read along the last axis instead of the channels"
SHAPE, RANGE = (1, 4, 4, 4), (-2.0, 2.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    slope = np.array([0.1, 0.2, 0.3, 0.4]).reshape(4, 1, 1)
    return g.planted("PRelu", [x, g.const(slope)])


def _last_axis(x, alpha, attrs=None):
    def body(*i):
        value = x(*i)
        return tirx.Select(value > tirx.const(0, x.dtype), value, value * alpha(i[-1]))

    return te.compute(x.shape, body, name="T_prelu")


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_last_axis, "prelu_last_axis"))
