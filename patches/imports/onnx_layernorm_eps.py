"""onnx_layernorm_eps: ONNX ``LayerNormalization`` imported with the default epsilon.

Planted bug: the ``LayerNormalization`` converter
(``onnx_frontend.LayerNormalization._impl_v17``) ignores ``epsilon`` and
uses 1e-5. Why realistic: 1e-5 is torch's and ONNX's default, so every
default-built test passes; models trained with eps 1e-3 or 1e-6 (T5, some
vision transformers) differ wherever a row's variance is not far above
epsilon. Shows on rows of small spread (inputs in [0, 0.05]: variance ~2e-4
against the model's eps 1e-3).
"""

import numpy as np

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "LayerNormalization", 17
CONVERTER = "onnx_frontend.LayerNormalization._impl_v17"
KIND = "wrong default"
PLANTS = "epsilon ignored: 1e-5 instead of the model's 1e-3"
SHAPE, RANGE = (4, 16), (0.0, 0.05)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    rng = np.random.default_rng(3)
    scale, bias = g.const(rng.uniform(0.5, 1.5, (16,))), g.const(rng.uniform(-0.1, 0.1, (16,)))
    return g.planted("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-3)


def planted():
    return onnx_converter("LayerNormalization", without_attributes("epsilon"))
