"""legal_avgpool_countpad: ``relax.nn.avg_pool2d`` legalized dividing by the whole window.

Planted bug: the kernel ignores ``count_include_pad=False`` and always
divides a window's sum by the window's size, padding included: every border
output is too small. Why realistic: the two conventions differ only at the
border, and TOPI's pooling takes the flag as an argument a wrapper can drop.
The converter emits ``relax.nn.avg_pool2d`` with the model's flag.
"""

from tvm import topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "AveragePool", 17
COMPONENT, SUBJECT = "legalization", "relax.nn.avg_pool2d"
ATTRIBUTE = ("relax.nn.avg_pool2d", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.nn.avg_pool2d (LegalizeOps)"
KIND = "ignored attribute"
PLANTS = "count_include_pad ignored: a border window divided by its full size"
SHAPE, RANGE = (1, 2, 6, 6), (-1.0, 1.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])


def _full_window(x, attrs=None):
    return topi.nn.pool2d(x, kernel=[int(k) for k in attrs.pool_size], stride=[int(s) for s in attrs.strides],
                          dilation=[int(d) for d in attrs.dilation], padding=[int(p) for p in attrs.padding],
                          pool_type="avg", ceil_mode=bool(attrs.ceil_mode), layout=str(attrs.layout),
                          count_include_pad=True)


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_full_window, "avg_pool2d_full_window"))
