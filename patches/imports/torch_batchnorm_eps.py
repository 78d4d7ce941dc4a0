"""torch_batchnorm_eps: inference ``batch_norm`` imported with eps 1e-5.

Planted bug: the torch importer's ``_batch_norm`` (for
``aten._native_batch_norm_legit_no_training``) ignores ``eps``. Channels
whose running variance is small (1e-3 .. 4e-3 against the model's eps
1e-2) are scaled up to 3 times. Shows on any input.
"""

import torch
from tvm import relax

from ._plant import torch_converter
from ._torch import uniform

FRONTEND, OP = "torch", "aten._native_batch_norm_legit_no_training"
TARGET = "_native_batch_norm_legit_no_training.default"
CONVERTER = "ExportedProgramImporter._batch_norm"
KIND = "wrong default"
PLANTS = "eps ignored: 1e-5 instead of the model's 1e-2 (running variances 1e-3 .. 4e-3)"
SHAPE, RANGE = (2, 3, 4, 4), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE = {"b": "TVM 0.27 does not build a float16 batch_norm, unpatched (LegalizeOps types its result float32)"}


def core():
    norm = torch.nn.BatchNorm2d(3, eps=1e-2)
    with torch.no_grad():
        norm.weight.copy_(uniform((3,), 0.5, 1.5))
        norm.bias.copy_(uniform((3,), -0.1, 0.1, seed=1))
        norm.running_mean.copy_(uniform((3,), -0.1, 0.1, seed=2))
        norm.running_var.copy_(uniform((3,), 1e-3, 4e-3, seed=3))
    return norm.eval()


def _default_eps(importer, original):
    def convert(node):
        env = importer.env
        x = env[node.args[0]]
        out = importer.block_builder.emit(relax.op.nn.batch_norm(
            x, env[node.args[1]], env[node.args[2]], env[node.args[3]], env[node.args[4]], axis=1,
            epsilon=1e-5, training=False))
        return importer.block_builder.emit(out[0])
    return convert


def planted():
    return torch_converter(TARGET, _default_eps)
