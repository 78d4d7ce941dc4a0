"""onnx_gemm_transb: ONNX ``Gemm`` imported without its ``transB``.

Planted bug: the ``Gemm`` converter (``onnx_frontend.Gemm._impl_v13``) drops
``transB``, so ``A @ B.T + C`` becomes ``A @ B + C``. Why realistic: with a
square weight the shapes still check, nothing fails, and the layer computes
with the transposed weight; the fixed-shape converters of several frontends
had exactly this bug for square projections. Shows on any input.
"""

import numpy as np

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "Gemm", 17
CONVERTER = "onnx_frontend.Gemm._impl_v13"
KIND = "ignored attribute"
PLANTS = "transB ignored on a square weight: A @ B instead of A @ B.T"
SHAPE, RANGE = (4, 8), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    rng = np.random.default_rng(2)
    b, c = g.const(rng.uniform(-1, 1, (8, 8))), g.const(rng.uniform(-0.5, 0.5, (8,)))
    return g.planted("Gemm", [x, b, c], transB=1)


def planted():
    return onnx_converter("Gemm", without_attributes("transB"))
