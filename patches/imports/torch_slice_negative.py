"""torch_slice_negative: ``aten.slice`` with negative bounds one off.

Planted bug: the torch importer's ``_slice`` normalizes a negative start or
end as ``size + value - 1``: ``x[:, -6:-1]`` reads ``x[:, -7:-2]``, a window
of the same width moved one place (the shapes check). Positive bounds,
which most tests use, are right. Shows on any input.
"""

from tvm import relax

from ._plant import torch_argument, torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.slice", "slice.Tensor"
CONVERTER = "ExportedProgramImporter._slice"
KIND = "negative index"
PLANTS = "negative bounds normalized as size + value - 1: x[:, -6:-1] reads x[:, -7:-2]"
SHAPE, RANGE = (4, 10), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: x[:, -6:-1])


def _one_off(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        dim = torch_argument(node, 1, "dim", 0)
        size = int(x.ty.shape[dim])
        bounds = [torch_argument(node, 2, "start", 0), torch_argument(node, 3, "end", size)]
        start, end = [size + b - 1 if b < 0 else min(b, size) for b in bounds]
        return emit(importer, relax.op.strided_slice(x, [dim], [start], [end], [torch_argument(node, 4, "step", 1)]))
    return convert


def planted():
    return torch_converter(TARGET, _one_off)
