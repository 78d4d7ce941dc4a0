"""legal_logsoftmax_naive: ``relax.nn.log_softmax`` legalized as log(softmax(x)).

Planted bug: the kernel takes the log of a (stable) softmax: where a logit
lies more than ~103 below the maximum its probability underflows float32 to
0 and the log is -inf, where x - max - log(sum exp(x - max)) is finite. Why
realistic: composing two existing kernels is the obvious legalization. The
converter emits the right ``relax.nn.log_softmax``.
"""

from tvm import topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "LogSoftmax", 17
COMPONENT, SUBJECT = "legalization", "relax.nn.log_softmax"
ATTRIBUTE = ("relax.nn.log_softmax", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.nn.log_softmax (LegalizeOps)"
KIND = "underflow"
PLANTS = "log(softmax(x)): -inf where a logit is ~103 below the maximum"
SHAPE, RANGE = (4, 8), (-100.0, 100.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("LogSoftmax", [x], axis=-1)


def _log_of_softmax(x, attrs=None):
    return topi.log(topi.nn.softmax(x, axis=int(attrs.axis)))


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_log_of_softmax, "log_of_softmax"))
