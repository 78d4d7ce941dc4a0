"""torch_elu_alpha: ``aten.elu`` imported with alpha 1.

Planted bug: the torch importer's ``_elu`` ignores ``alpha`` (negative
inputs saturate at -1 instead of the model's -0.5). Shows on negative inputs.
"""

import torch.nn.functional as F
from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.elu", "elu.default"
CONVERTER = "BaseFXGraphImporter._elu"
KIND = "ignored attribute"
PLANTS = "alpha ignored: 1.0 instead of the model's 0.5"
SHAPE, RANGE = (4, 8), (-3.0, 3.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: F.elu(x, 0.5))


def _alpha_one(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        dtype = x.ty.dtype
        one = relax.const(1, dtype)
        return emit(importer, relax.op.add(relax.op.multiply(relax.const(-1.0, dtype), relax.op.nn.relu(
            relax.op.subtract(one, relax.op.exp(x)))), relax.op.nn.relu(x)))
    return convert


def planted():
    return torch_converter(TARGET, _alpha_one)
