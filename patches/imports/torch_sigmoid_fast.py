"""torch_sigmoid_fast: ``aten.sigmoid`` imported as a "fast sigmoid".

Planted bug: the torch importer's ``sigmoid`` entry computes
``0.5 + 0.5 * x / (1 + |x|)`` (the rational "fast sigmoid" of some
embedded kernels) instead of ``1 / (1 + exp(-x))``: up to 0.07 apart.
Shows on any input away from 0.
"""

import torch
from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.sigmoid", "sigmoid.default"
CONVERTER = "ExportedProgramImporter sigmoid entry (_unary_op(relax.op.sigmoid))"
KIND = "approximate formula"
PLANTS = "sigmoid computed as 0.5 + 0.5 x / (1 + |x|) (up to 0.07 apart)"
SHAPE, RANGE = (4, 8), (-6.0, 6.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: torch.sigmoid(x))


def _rational(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        half = relax.const(0.5, x.ty.dtype)
        ratio = relax.op.divide(x, relax.op.add(relax.const(1.0, x.ty.dtype), relax.op.abs(x)))
        return emit(importer, relax.op.add(half, relax.op.multiply(half, ratio)))
    return convert


def planted():
    return torch_converter(TARGET, _rational)
