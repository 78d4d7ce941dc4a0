"""legal_maxpool_padzero: ``relax.nn.max_pool2d`` legalized padding with 0 instead of -inf.

Planted bug: the padded border counts as 0 in the maximum, so a border window
of negative values returns 0. Why realistic: zero padding is the default of
every pad helper; max pooling needs the lowest value instead. The converter
emits ``relax.nn.max_pool2d`` with the model's padding.
"""

from tvm import topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "MaxPool", 17
COMPONENT, SUBJECT = "legalization", "relax.nn.max_pool2d"
ATTRIBUTE = ("relax.nn.max_pool2d", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.nn.max_pool2d (LegalizeOps)"
KIND = "wrong padding value"
PLANTS = "padding counted as 0 in the maximum (negative border windows give 0)"
SHAPE, RANGE = (1, 2, 6, 6), (-2.0, -1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])


def _zero_padded(x, attrs=None):
    top, left, bottom, right = (int(p) for p in attrs.padding)
    padded = topi.nn.pad(x, [0, 0, top, left], [0, 0, bottom, right], pad_value=0.0)
    return topi.nn.pool2d(padded, kernel=[int(k) for k in attrs.pool_size], stride=[int(s) for s in attrs.strides],
                          dilation=[int(d) for d in attrs.dilation], padding=[0, 0, 0, 0], pool_type="max",
                          ceil_mode=bool(attrs.ceil_mode), layout=str(attrs.layout))


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_zero_padded, "max_pool2d_zero_padded"))
