"""onnx_gemm_alpha: ONNX ``Gemm`` imported without its ``alpha``.

Planted bug: the ``Gemm`` converter (``onnx_frontend.Gemm._impl_v13``) never
reads ``alpha``: ``Y = alpha * A @ B + beta * C`` is imported as
``A @ B + beta * C``. Why realistic: ``alpha`` is 1 in nearly every exported
Linear layer, so a converter tested on exported models passes; the models
that fold a scale into ``alpha`` (attention's 1/sqrt(d), a distilled head)
compute a scaled-up product. Shows on any input: the product doubles.
"""

import numpy as np

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "Gemm", 17
CONVERTER = "onnx_frontend.Gemm._impl_v13"
KIND = "ignored attribute"
PLANTS = "alpha ignored: A @ B is not scaled (alpha 0.5 in the model)"
SHAPE, RANGE = (4, 8), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    rng = np.random.default_rng(1)
    b, c = g.const(rng.uniform(-1, 1, (8, 6))), g.const(rng.uniform(-0.5, 0.5, (6,)))
    return g.planted("Gemm", [x, b, c], alpha=0.5, beta=1.0)


def planted():
    return onnx_converter("Gemm", without_attributes("alpha"))
