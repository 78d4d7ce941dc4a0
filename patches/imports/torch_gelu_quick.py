"""torch_gelu_quick: ``aten.gelu`` imported as QuickGELU.

Planted bug: the torch importer's ``_gelu`` computes ``x * sigmoid(1.702 x)``
(CLIP's "QuickGELU") for the exact erf GELU. Why realistic: it is the
cheapest GELU, some kernels libraries offer it as "fast gelu", and it is
within 0.02 of the exact one. Shows on any input away from 0.
"""

import torch.nn.functional as F
from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.gelu", "gelu.default"
CONVERTER = "BaseFXGraphImporter._gelu"
KIND = "approximate formula"
PLANTS = "erf GELU computed as x * sigmoid(1.702 x) (up to 0.02 apart)"
SHAPE, RANGE = (4, 8), (-4.0, 4.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: F.gelu(x))


def _quick(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        scaled = relax.op.multiply(x, relax.const(1.702, x.ty.dtype))
        return emit(importer, relax.op.multiply(x, relax.op.sigmoid(scaled)))
    return convert


def planted():
    return torch_converter(TARGET, _quick)
