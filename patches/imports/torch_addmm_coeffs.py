"""torch_addmm_coeffs: ``aten.addmm`` imported without ``alpha`` and ``beta``.

Planted bug: the torch importer's ``_addmm`` ignores the keyword
coefficients: ``beta * bias + alpha * x @ W`` becomes ``bias + x @ W``.
Why realistic: ``nn.Linear`` exports ``addmm`` with both 1, so every
exported MLP passes; an explicit ``torch.addmm(b, x, W, beta=0.5,
alpha=2.0)`` (a blended residual) is wrong. Shows on any input.
"""

import torch
from tvm import relax

from ._plant import torch_converter
from ._torch import emit, uniform

FRONTEND, OP, TARGET = "torch", "aten.addmm", "addmm.default"
CONVERTER = "BaseFXGraphImporter._addmm"
KIND = "ignored attribute"
PLANTS = "alpha and beta ignored: bias + x @ W instead of 0.5 bias + 2 x @ W"
SHAPE, RANGE = (4, 8), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE = {"b": "TVM 0.27's addmm converter computes the product with out_dtype float32: a float16 addmm does not "
                  "import, unpatched"}


class Blend(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(uniform((8, 6), -0.5, 0.5))
        self.bias = torch.nn.Parameter(uniform((6,), -1.0, 1.0, seed=1))

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight, beta=0.5, alpha=2.0)


def core():
    return Blend()


def _plain(importer, original):
    def convert(node):
        bias, x, weight = (importer.env[a] for a in node.args[:3])
        return emit(importer, relax.op.add(bias, relax.op.matmul(x, weight)))
    return convert


def planted():
    return torch_converter(TARGET, _plain)
