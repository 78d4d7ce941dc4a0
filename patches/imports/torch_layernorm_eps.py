"""torch_layernorm_eps: ``aten.native_layer_norm`` imported with eps 1e-5.

Planted bug: the torch importer's ``_native_layer_norm`` ignores ``eps``
and uses the default 1e-5. Shows on rows of small spread (inputs in
[0, 0.05]: variance ~2e-4 against the model's eps 1e-3).
"""

import torch

from ._plant import torch_converter
from ._torch import uniform

FRONTEND, OP, TARGET = "torch", "aten.native_layer_norm", "native_layer_norm.default"
CONVERTER = "ExportedProgramImporter._native_layer_norm"
KIND = "wrong default"
PLANTS = "eps ignored: 1e-5 instead of the model's 1e-3"
SHAPE, RANGE = (4, 16), (0.0, 0.05)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    norm = torch.nn.LayerNorm(16, eps=1e-3)
    with torch.no_grad():
        norm.weight.copy_(uniform((16,), 0.5, 1.5))
        norm.bias.copy_(uniform((16,), -0.1, 0.1, seed=1))
    return norm


def _default_eps(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        gamma, beta = importer.env.get(node.args[2]), importer.env.get(node.args[3])
        return importer._layer_norm_impl(x, gamma, beta, 1e-5, node.args[1])
    return convert


def planted():
    return torch_converter(TARGET, _default_eps)
