"""torch_mean_fp16: ``aten.mean.dim`` computed in float16 inside a float32 model.

Planted bug: the torch importer's ``_mean`` casts its input to float16,
averages, and casts back (a narrowed fast path; the IR's result type stays
float32). A mean of 256 values near 1 then carries float16 roundings of the
running sum (relative ~1e-3, 100 times float32's tolerance). Shows on any input.
"""

from tvm import relax

from ._plant import torch_converter
from ._torch import Lambda, emit

FRONTEND, OP, TARGET = "torch", "aten.mean", "mean.dim"
CONVERTER = "BaseFXGraphImporter._mean"
KIND = "narrowed dtype"
PLANTS = "the mean computed in float16 and cast back (float32 model)"
SHAPE, RANGE = (4, 256), (0.5, 1.5)
UNFAIR = {"b": "the model is float16 already: a converter narrowing to float16 changes nothing"}
UNBUILDABLE: dict = {}


def core():
    return Lambda(lambda x: x.mean(dim=-1))


def _in_float16(importer, original):
    def convert(node):
        x = importer.env[node.args[0]]
        narrow = importer.block_builder.emit(relax.op.astype(x, "float16"))
        mean = importer.block_builder.emit(relax.op.mean(narrow, node.args[1], keepdims=False))
        return emit(importer, relax.op.astype(mean, x.ty.dtype))
    return convert


def planted():
    return torch_converter(TARGET, _in_float16)
