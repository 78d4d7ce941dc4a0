"""New planted import defects for the red team (not among patches/imports/):
each a context manager that replaces one TVM 0.27 converter while active."""

from __future__ import annotations

import numpy as np

from patches.imports._plant import onnx_converter, torch_converter, without_attributes


def _after(fn):
    """An ONNX wrap that applies ``fn(bb, out, inputs, attr)`` to the stock converter's result."""
    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            return fn(bb, original(bb, inputs, attr, params), inputs, attr)
        return converter
    return wrap


def _replace(fn):
    """An ONNX wrap whose converter is ``fn(bb, inputs, attr)`` (the stock one unused)."""
    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            return fn(bb, inputs, attr)
        return converter
    return wrap


def _c(value, like):
    from tvm import relax
    return relax.const(value, like.ty.dtype)


def onnx_layernorm_eps_1e2():
    return onnx_converter("LayerNormalization", without_attributes(epsilon=1e-2))


def onnx_layernorm_eps_1e3():
    return onnx_converter("LayerNormalization", without_attributes(epsilon=1e-3))


def onnx_softmax_axis0():
    return onnx_converter("Softmax", without_attributes(axis=0))


def onnx_softmax_temperature():
    from tvm import relax

    def softmax(bb, inputs, attr):
        x = inputs[0]
        return relax.op.nn.softmax(relax.op.multiply(x, _c(0.95, x)), axis=attr.get("axis", -1))
    return onnx_converter("Softmax", _replace(softmax))


def onnx_softmax_unstable():
    """exp(x) / sum(exp(x)) without subtracting the max: overflows in float16."""
    from tvm import relax

    def softmax(bb, inputs, attr):
        e = relax.op.exp(inputs[0])
        return relax.op.divide(e, relax.op.sum(e, axis=[attr.get("axis", -1)], keepdims=True))
    return onnx_converter("Softmax", _replace(softmax))


def onnx_gemm_no_bias():
    """Gemm with its bias C dropped (a converter that reads two inputs)."""
    def gemm(original):
        def converter(cls, bb, inputs, attr, params):
            kept = type(inputs)()
            for v in list(inputs)[:2]:
                kept.append(v)
            kept.append(None)
            return original(bb, kept, attr, params)
        return converter
    return onnx_converter("Gemm", gemm)


def onnx_floor_trunc():
    from tvm import relax
    return onnx_converter("Floor", _replace(lambda bb, inputs, attr: relax.op.trunc(inputs[0])))


def onnx_sigmoid_scaled():
    from tvm import relax

    def sigmoid(bb, inputs, attr):
        return relax.op.sigmoid(relax.op.multiply(inputs[0], _c(1.001, inputs[0])))
    return onnx_converter("Sigmoid", _replace(sigmoid))


def onnx_cast_round():
    """Cast float -> int rounds to nearest instead of truncating toward zero."""
    from tvm import relax

    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            x = inputs[0]
            if str(getattr(getattr(x, "ty", None), "dtype", "")).startswith("float"):
                changed = type(inputs)()
                changed.append(relax.op.round(x))
                return original(bb, changed, attr, params)
            return original(bb, inputs, attr, params)
        return converter
    return onnx_converter("Cast", wrap)


def onnx_argmax_first_index():
    return onnx_converter("ArgMax", without_attributes("select_last_index"))


def onnx_thresholdedrelu_alpha():
    return onnx_converter("ThresholdedRelu", without_attributes("alpha"))


def onnx_shrink_bias():
    return onnx_converter("Shrink", without_attributes("bias"))


def onnx_transpose_perm():
    return onnx_converter("Transpose", without_attributes(perm=[1, 0, 2]))


def onnx_unsqueeze_axis0():
    from tvm import relax

    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            changed = type(inputs)()
            changed.append(inputs[0])
            changed.append(relax.const(np.array([0], np.int64)))
            return original(bb, changed, {k: v for k, v in attr.items() if k != "axes"}, params)
        return converter
    return onnx_converter("Unsqueeze", wrap)


def onnx_erf_linear_tanh():
    from tvm import relax

    def erf(bb, inputs, attr):
        x = inputs[0]
        return relax.op.tanh(relax.op.multiply(x, _c(1.128379, x)))
    return onnx_converter("Erf", _replace(erf))


def onnx_tanh_pade():
    """A 'fast tanh': x (27 + x^2) / (27 + 9 x^2), clipped to [-1, 1]."""
    from tvm import relax

    def tanh(bb, inputs, attr):
        x = inputs[0]
        x2 = relax.op.multiply(x, x)
        num = relax.op.multiply(x, relax.op.add(x2, _c(27.0, x)))
        den = relax.op.add(relax.op.multiply(x2, _c(9.0, x)), _c(27.0, x))
        return relax.op.clip(relax.op.divide(num, den), -1.0, 1.0)
    return onnx_converter("Tanh", _replace(tanh))


# torch -------------------------------------------------------------------

def torch_layernorm_eps_1e2():
    def make(importer, original):
        def convert(node):
            x = importer.env[node.args[0]]
            gamma, beta = importer.env.get(node.args[2]), importer.env.get(node.args[3])
            return importer._layer_norm_impl(x, gamma, beta, 1e-2, node.args[1])
        return convert
    return torch_converter("native_layer_norm.default", make)


def torch_layernorm_no_bias():
    def make(importer, original):
        def convert(node):
            x = importer.env[node.args[0]]
            gamma = importer.env.get(node.args[2])
            return importer._layer_norm_impl(x, gamma, None, node.args[4], node.args[1])
        return convert
    return torch_converter("native_layer_norm.default", make)


def torch_softmax_temperature():
    from tvm import relax

    def make(importer, original):
        def convert(node):
            x = importer.env[node.args[0]]
            scaled = importer.block_builder.emit(relax.op.multiply(x, relax.const(0.995, x.ty.dtype)))
            return importer.block_builder.emit(relax.op.nn.softmax(scaled, axis=node.args[1]))
        return convert
    return torch_converter("_softmax.default", make)


def torch_gelu_tanh():
    from tvm import relax

    def make(importer, original):
        def convert(node):
            x = importer.env[node.args[0]]
            return importer.block_builder.emit(relax.op.nn.gelu_tanh(x))
        return convert
    return torch_converter("gelu.default", make)


def onnx_layernorm_one_pass():
    """LayerNorm with the one-pass variance mean(x^2) - mean(x)^2 (cancels catastrophically
    when the mean is large against the spread), in the model's dtype."""
    from tvm import relax

    def layernorm(bb, inputs, attr):
        x, scale, bias = inputs[0], inputs[1], inputs[2]
        axis = [attr.get("axis", -1)]
        mean = relax.op.mean(x, axis=axis, keepdims=True)
        var = relax.op.subtract(relax.op.mean(relax.op.multiply(x, x), axis=axis, keepdims=True),
                                relax.op.multiply(mean, mean))
        var = relax.op.maximum(var, _c(0.0, x))
        norm = relax.op.divide(relax.op.subtract(x, mean),
                               relax.op.sqrt(relax.op.add(var, _c(attr.get("epsilon", 1e-5), x))))
        return relax.op.add(relax.op.multiply(norm, scale), bias)
    return onnx_converter("LayerNormalization", _replace(layernorm))


def onnx_softmax_unstable_f32():
    return onnx_softmax_unstable()


def onnx_matmul_scaled():
    """MatMul result scaled by 1.01 (a wrong constant folded in)."""
    from tvm import relax

    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            out = original(bb, inputs, attr, params)
            return relax.op.multiply(out, relax.const(1.01, "float16"))
        return converter
    return onnx_converter("MatMul", wrap)


def onnx_gelu_scaled():
    """Gelu(x) computed as 0.9 * Gelu(x)."""
    from tvm import relax

    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            out = original(bb, inputs, attr, params)
            return relax.op.multiply(out, relax.const(0.9, "float32"))
        return converter
    return onnx_converter("Gelu", wrap)


def onnx_argmax_axis_ignored():
    return onnx_converter("ArgMax", without_attributes("axis"))


def onnx_softmax_narrowed_f16():
    """Softmax computed in float16 whatever the model's dtype (cast down, softmax, cast back)."""
    from tvm import relax

    def softmax(bb, inputs, attr):
        x = inputs[0]
        narrow = relax.op.nn.softmax(relax.op.astype(x, "float16"), axis=attr.get("axis", -1))
        return relax.op.astype(narrow, x.ty.dtype)
    return onnx_converter("Softmax", _replace(softmax))
