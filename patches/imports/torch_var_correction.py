"""torch_var_correction: ``aten.var.correction`` imported without the correction.

Planted bug: the torch importer's ``_var`` ignores ``correction`` and
returns the population variance (divide by n) where ``x.var()`` asks for the
sample variance (n - 1): 8/7 too small over 8 values. Why realistic: it is
what TVM's importer did before its ``_var_correction`` was added (the
comment in ``_var`` says so). Shows on any non-constant input.
"""

from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.var", "var.correction"
CONVERTER = "BaseFXGraphImporter._var / _var_correction"
KIND = "ignored attribute"
PLANTS = "correction ignored: population variance (n) instead of the sample variance (n - 1)"
SHAPE, RANGE = (4, 8), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: x.var(dim=1))


def _population(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        return emit(importer, relax.op.variance(x, dim, keepdims=node.kwargs.get("keepdim", False)))
    return convert


def planted():
    return torch_converter(TARGET, _population)
