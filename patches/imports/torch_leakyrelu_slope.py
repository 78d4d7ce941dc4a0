"""torch_leakyrelu_slope: ``aten.leaky_relu`` imported with the default slope.

Planted bug: the torch importer's ``_leakyrelu`` ignores ``negative_slope``
and uses torch's default 0.01. Why realistic: tests with
``nn.LeakyReLU()`` pass; a model with slope 0.2 gets negative activations
20 times too small. Shows on negative inputs.
"""

import torch.nn.functional as F
from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.leaky_relu", "leaky_relu.default"
CONVERTER = "BaseFXGraphImporter._leakyrelu"
KIND = "ignored attribute"
PLANTS = "negative_slope ignored: 0.01 instead of the model's 0.2"
SHAPE, RANGE = (4, 8), (-4.0, 4.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: F.leaky_relu(x, 0.2))


def _default_slope(importer, original):
    return lambda node: emit(importer, relax.op.nn.leakyrelu(importer.env[node.args[0]], 0.01))


def planted():
    return torch_converter(TARGET, _default_slope)
