"""torch_cumsum_negdim: ``aten.cumsum`` with a negative dim normalized one off.

Planted bug: the torch importer's ``_cumsum`` normalizes a negative ``dim``
as ``dim + rank - 1``: ``cumsum(x, -1)`` of a (4, 8) tensor runs along
dim 0. Same shape, other numbers. Shows on any nonzero input.
"""

import torch
from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.cumsum", "cumsum.default"
CONVERTER = "BaseFXGraphImporter._cumsum"
KIND = "wrong axis"
PLANTS = "a negative dim normalized as dim + rank - 1: cumsum(x, -1) runs along dim 0"
SHAPE, RANGE = (4, 8), (0.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: torch.cumsum(x, dim=-1))


def _dim_one_off(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        dim = node.args[1]
        rank = len(x.ty.shape)
        return emit(importer, relax.op.cumsum(x, dim + rank - 1 if dim < 0 else dim))
    return convert


def planted():
    return torch_converter(TARGET, _dim_one_off)
