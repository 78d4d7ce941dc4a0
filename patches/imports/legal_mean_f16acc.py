"""legal_mean_f16acc: ``relax.mean`` of float32 legalized with a float16 accumulator.

Planted bug: the kernel casts to float16, sums, divides and casts back: a
narrowed accumulator. Over 512 values in [0, 1] the float16 running sum
(ulp 0.25 at 256) loses the mean's third digit. Why realistic: a "mixed
precision" kernel template instantiated for the wrong dtype. The converter
emits the right float32 ``relax.mean``.
"""

from tvm import te, topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "ReduceMean", 17
COMPONENT, SUBJECT = "legalization", "relax.mean"
ATTRIBUTE = ("relax.mean", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.mean (LegalizeOps)"
KIND = "narrowed accumulator"
PLANTS = "the sum accumulated in float16 and cast back (float32 model)"
SHAPE, RANGE = (4, 512), (0.0, 1.0)
UNFAIR = {"b": "the model computes in float16 already: a float16 accumulator is its own precision"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("ReduceMean", [x], axes=[1], keepdims=0)


def _narrow_mean(x, attrs=None):
    axes = list(range(len(x.shape))) if attrs.axis is None else [int(a) % len(x.shape) for a in attrs.axis]
    count = 1
    for a in axes:
        count *= int(x.shape[a])
    total = topi.sum(topi.cast(x, "float16"), axis=axes, keepdims=bool(attrs.keepdims))
    return topi.cast(topi.divide(total, te.const(float(count), "float16")), x.dtype)


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_narrow_mean, "mean_float16_sum"))
