"""torch_hardtanh_bounds: ``aten.hardtanh`` with its positional bounds ignored.

Planted bug: the torch importer's ``_hardtanh`` reads ``min_val`` and
``max_val`` from keywords only and defaults to (-1, 1). ``F.relu6(x)``
exports as ``hardtanh(x, 0, 6)`` with positional bounds, so ReLU6 becomes
clip(x, -1, 1). Why realistic: it is exactly what TVM 0.27's own base-class
``BaseFXGraphImporter._hardtanh`` does (the ExportedProgram importer
overrides it with a fixed one). Shows where the input leaves [0, 1].
"""

import torch.nn.functional as F
from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.hardtanh", "hardtanh.default"
CONVERTER = "ExportedProgramImporter._hardtanh"
KIND = "ignored attribute"
PLANTS = "positional min_val/max_val ignored: ReLU6 becomes clip(x, -1, 1)"
SHAPE, RANGE = (4, 8), (-2.0, 8.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: F.relu6(x))


def _keywords_only(importer, original):
    def convert(node):
        low, high = node.kwargs.get("min_val", -1.0), node.kwargs.get("max_val", 1.0)
        return emit(importer, relax.op.clip(importer.env[node.args[0]], low, high))
    return convert


def planted():
    return torch_converter(TARGET, _keywords_only)
