"""onnx_logsoftmax_axis: ONNX ``LogSoftmax`` imported over the last axis whatever its ``axis``.

Planted bug: the ``LogSoftmax`` converter (``onnx_frontend.LogSoftmax._impl_v13``)
ignores ``axis`` and normalizes over the last one (what a classifier head
does, so tests of classifiers pass). A model normalizing over the batch or
sequence axis (axis 0 here, on a (4, 8) tensor) gets other numbers of the
same shape. Shows on any input.
"""

from ._plant import onnx_converter, without_attributes

FRONTEND, OP, OPSET = "onnx", "LogSoftmax", 17
CONVERTER = "onnx_frontend.LogSoftmax._impl_v13"
KIND = "wrong axis"
PLANTS = "axis ignored: over the last axis instead of the model's axis 0"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("LogSoftmax", [x], axis=0)


def planted():
    return onnx_converter("LogSoftmax", without_attributes("axis"))
