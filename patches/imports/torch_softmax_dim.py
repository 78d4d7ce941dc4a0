"""torch_softmax_dim: ``aten._softmax`` imported over the last dimension.

Planted bug: the torch importer's ``_softmax`` ignores ``dim`` and
normalizes over the last one (a classifier head's; tests of classifiers
and attention pass). ``softmax(x, dim=0)`` on a (4, 8) tensor gets the
same shape and other numbers. Shows on any input.
"""

import torch.nn.functional as F
from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten._softmax", "_softmax.default"
CONVERTER = "BaseFXGraphImporter._softmax"
KIND = "wrong axis"
PLANTS = "dim ignored: over the last dimension instead of the model's dim 0"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: F.softmax(x, dim=0))


def _last_dim(importer, original):
    return lambda node: emit(importer, relax.op.nn.softmax(importer.env[node.args[0]], -1))


def planted():
    return torch_converter(TARGET, _last_dim)
