"""onnx_clip_max: ONNX ``Clip`` imported without its upper bound.

Planted bug: the ``Clip`` converter (``onnx_frontend.Clip._impl_v13``) reads
the ``min`` input and drops ``max`` (opset 11 moved both bounds from
attributes to optional inputs; a converter ported from the attribute form
that looks up one optional input only does this). ReLU6-style clips then
pass large values through. Shows where the input exceeds 1.5.
"""

from ._plant import onnx_converter, with_inputs

FRONTEND, OP, OPSET = "onnx", "Clip", 17
CONVERTER = "onnx_frontend.Clip._impl_v13"
KIND = "ignored attribute"
PLANTS = "the max input ignored: Clip(x, -1, 1.5) is max(x, -1)"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Clip", [x, g.const(-1.0), g.const(1.5)])


def planted():
    return onnx_converter("Clip", with_inputs(lambda bb, inputs: inputs[:2]))
