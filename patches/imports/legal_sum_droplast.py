"""legal_sum_droplast: ``relax.sum`` legalized with a loop one element short.

Planted bug: the reduction's bound is ``n - 1``: the last element along the
reduced axis is never added. Why realistic: an off-by-one in a hand-written
reduction (a tail loop after vectorization that is never run). The converter
emits the right ``relax.sum``.
"""

from tvm import te

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "ReduceSum", 17
COMPONENT, SUBJECT = "legalization", "relax.sum"
ATTRIBUTE = ("relax.sum", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.sum (LegalizeOps)"
KIND = "dropped term"
PLANTS = "the last element along the axis left out of the sum"
SHAPE, RANGE = (4, 8), (0.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("ReduceSum", [x, g.ints([1])], keepdims=0)


def _short_sum(x, attrs=None):
    axis = int(list(attrs.axis)[0]) % len(x.shape)
    k = te.reduce_axis((0, x.shape[axis] - 1), name="k")
    keep = bool(attrs.keepdims)

    def body(*i):
        index = list(i)
        if keep:
            index[axis] = k
        else:
            index.insert(axis, k)
        return te.sum(x(*index), axis=k)

    shape = [d if j != axis else 1 for j, d in enumerate(x.shape)] if keep else \
        [d for j, d in enumerate(x.shape) if j != axis]
    return te.compute(shape, body, name="T_sum")


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_short_sum, "sum_short"))
