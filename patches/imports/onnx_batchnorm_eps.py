"""onnx_batchnorm_eps: ONNX ``BatchNormalization`` imported with the default epsilon.

Planted bug: the ``BatchNormalization`` converter
(``onnx_frontend.BatchNormalization._impl_v15``) ignores ``epsilon`` and
uses 1e-5. Why realistic: running variances are usually far above epsilon,
so the bug hides; channels whose running variance is small (pruned or
nearly dead channels, here 1e-3 .. 4e-3 against the model's eps 1e-2) are
scaled up to 3 times. Shows on any input.
"""

import numpy as np

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "BatchNormalization", 17
CONVERTER = "onnx_frontend.BatchNormalization._impl_v15"
KIND = "wrong default"
PLANTS = "epsilon ignored: 1e-5 instead of the model's 1e-2 (running variances 1e-3 .. 4e-3)"
SHAPE, RANGE = (2, 3, 4, 4), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE = {"b": "TVM 0.27 does not build a float16 batch_norm, unpatched (LegalizeOps types its result float32)"}


def core(g, x):
    rng = np.random.default_rng(5)
    scale, bias = g.const(rng.uniform(0.5, 1.5, (3,))), g.const(rng.uniform(-0.1, 0.1, (3,)))
    mean, var = g.const(rng.uniform(-0.1, 0.1, (3,))), g.const(rng.uniform(1e-3, 4e-3, (3,)))
    return g.planted("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-2)


def planted():
    return onnx_converter("BatchNormalization", without_attributes("epsilon"))
