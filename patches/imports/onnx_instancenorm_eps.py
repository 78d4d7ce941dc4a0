"""onnx_instancenorm_eps: ONNX ``InstanceNormalization`` imported with the default epsilon.

Planted bug: the ``InstanceNormalization`` converter
(``onnx_frontend.InstanceNormalization._impl_v6``) ignores ``epsilon`` and
uses 1e-5 (style-transfer models export eps 1e-3 .. 1e-2). Shows on
instances of small spread (inputs in [0, 0.2]: variance ~3e-3 against the
model's eps 1e-2).
"""

import numpy as np

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "InstanceNormalization", 17
CONVERTER = "onnx_frontend.InstanceNormalization._impl_v6"
KIND = "wrong default"
PLANTS = "epsilon ignored: 1e-5 instead of the model's 1e-2"
SHAPE, RANGE = (2, 3, 4, 4), (0.0, 0.2)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    rng = np.random.default_rng(4)
    scale, bias = g.const(rng.uniform(0.5, 1.5, (3,))), g.const(rng.uniform(-0.1, 0.1, (3,)))
    return g.planted("InstanceNormalization", [x, scale, bias], epsilon=1e-2)


def planted():
    return onnx_converter("InstanceNormalization", without_attributes("epsilon"))
