"""legal_layernorm_onepass: ``relax.nn.layer_norm`` legalized with a one-pass variance.

Planted bug: the kernel computes the variance as E[x^2] - E[x]^2 in the
input's float. Why realistic: it was TVM's own ``topi.nn.layer_norm`` until
apache/tvm#19592 (fixed by PR #19643), and ``topi.nn.group_norm`` still does
it (docs/findings.md, finding 4). On rows around 300 with a spread of 1 the
float32 difference keeps no correct digit. The ONNX converter emits the
right ``relax.nn.layer_norm``.
"""

from tvm import te, topi

from ._plant import legalized_as, op_attribute

FRONTEND, OP, OPSET = "onnx", "LayerNormalization", 17
COMPONENT, SUBJECT = "legalization", "relax.nn.layer_norm"
ATTRIBUTE = ("relax.nn.layer_norm", "FLegalize")  # the TVM operator attribute the plant replaces
CONVERTER = "FLegalize of relax.nn.layer_norm (LegalizeOps)"
KIND = "precision lost (one-pass variance)"
PLANTS = "variance as E[x^2] - E[x]^2 in the input's float"
SHAPE, RANGE = (4, 16), (300.0, 301.0)
UNFAIR: dict = {}
UNBUILDABLE: dict = {}


def core(g, x):
    import numpy as np

    rng = np.random.default_rng(5)
    return g.planted("LayerNormalization", [x, g.const(rng.uniform(0.5, 1.5, 16)), g.const(rng.uniform(-.1, .1, 16))],
                     axis=-1, epsilon=1e-5)


def _one_pass(x, gamma, beta, attrs=None):
    axes = [int(a) % len(x.shape) for a in attrs.axes]
    count = 1
    for a in axes:
        count *= int(x.shape[a])
    n = te.const(float(count), x.dtype)
    mean = topi.divide(topi.sum(x, axis=axes, keepdims=True), n)
    square = topi.divide(topi.sum(topi.multiply(x, x), axis=axes, keepdims=True), n)
    var = topi.subtract(square, topi.multiply(mean, mean))
    eps = te.const(float(attrs.epsilon), x.dtype)
    normed = topi.divide(topi.subtract(x, mean), topi.sqrt(topi.add(var, eps)))
    return topi.add(topi.multiply(normed, gamma), beta)


def planted():
    return op_attribute(*ATTRIBUTE, legalized_as(_one_pass, "layer_norm_one_pass"))
