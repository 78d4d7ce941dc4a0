"""onnx_hardsigmoid_defaults: ONNX ``HardSigmoid`` imported with torch's defaults.

Planted bug: the ``HardSigmoid`` converter (``onnx_frontend.HardSigmoid._impl_v1``)
fills a missing ``alpha`` with 1/6 (torch's ``hardsigmoid`` slope) instead of
ONNX's 0.2. Why realistic: the two definitions share a name and a shape;
converters written against one framework and tested with explicit
attributes get the other's default. Shows away from 0 (up to 0.083 apart at
|x| = 2.5). ONNX Runtime has no float64 HardSigmoid: no context has its truth.
"""

from ._plant import onnx_converter, with_defaults

FRONTEND, OP, OPSET = "onnx", "HardSigmoid", 17
CONVERTER = "onnx_frontend.HardSigmoid._impl_v1"
KIND = "wrong default"
PLANTS = "a missing alpha defaults to torch's 1/6 instead of ONNX's 0.2"
SHAPE, RANGE = (4, 8), (-4.0, 4.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("HardSigmoid", [x])


def planted():
    return onnx_converter("HardSigmoid", with_defaults(alpha=1.0 / 6.0))
