"""onnx_reducesum_fp16: ONNX ``ReduceSum`` computed in float16 inside a float32 model.

Planted bug: the ``ReduceSum`` converter (``onnx_frontend.ReduceSum._impl_v13``)
casts its input to float16, sums, and casts the sum back to float32 (a
"fast path" that narrows the dtype; the IR's output type stays float32).
A sum of 64 values near 1 then carries float16 roundings of the running
sum (relative ~1e-3, 100 times float32's tolerance). Shows on any input.
"""

from tvm import relax

from ._plant import onnx_converter

FRONTEND, OP, OPSET = "onnx", "ReduceSum", 17
CONVERTER = "onnx_frontend.ReduceSum._impl_v13"
KIND = "narrowed dtype"
PLANTS = "the sum computed in float16 and cast back (float32 model)"
SHAPE, RANGE = (4, 64), (0.5, 1.5)
UNFAIR = {"b": "the model is float16 already: a converter narrowing to float16 changes nothing"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("ReduceSum", [x, g.ints([1])], keepdims=1)


def _in_float16(original):
    def converter(cls, bb, inputs, attr, params):
        dtype = inputs[0].ty.dtype
        narrowed = type(inputs)()
        for k, value in enumerate(inputs):
            narrowed.append(bb.normalize(relax.op.astype(value, "float16")) if k == 0 else value)
        return relax.op.astype(bb.normalize(original(bb, narrowed, attr, params)), dtype)
    return converter


def planted():
    return onnx_converter("ReduceSum", _in_float16)
