"""torch_groupnorm_eps: ``aten.native_group_norm`` imported with eps 1e-5.

Planted bug: the torch importer's ``_native_group_norm`` ignores ``eps``.
Shows on groups of small spread (inputs in [0, 0.2]: variance ~3e-3
against the model's eps 1e-2).
"""

import torch
from tvm import relax

from ._plant import torch_converter
from ._torch import emit, uniform

FRONTEND, OP, TARGET = "torch", "aten.native_group_norm", "native_group_norm.default"
CONVERTER = "ExportedProgramImporter._native_group_norm"
KIND = "wrong default"
PLANTS = "eps ignored: 1e-5 instead of the model's 1e-2"
SHAPE, RANGE = (2, 4, 3, 3), (0.0, 0.2)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    norm = torch.nn.GroupNorm(2, 4, eps=1e-2)
    with torch.no_grad():
        norm.weight.copy_(uniform((4,), 0.5, 1.5))
        norm.bias.copy_(uniform((4,), -0.1, 0.1, seed=1))
    return norm


def _default_eps(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        gamma, beta = importer.env.get(node.args[1]), importer.env.get(node.args[2])
        return emit(importer, relax.op.nn.group_norm(x, gamma, beta, num_groups=node.args[6], channel_axis=1,
                                                     axes=list(range(2, len(x.ty.shape))), epsilon=1e-5))
    return convert


def planted():
    return torch_converter(TARGET, _default_eps)
