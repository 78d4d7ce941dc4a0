"""A float64 copy of an ONNX graph: every float32, float16 and bfloat16
tensor, type, constant and cast made float64, so ONNX Runtime computes the
same model in double precision (where it has the kernels: the session refuses
the copy otherwise). The float16 ones too: the truth is the real-number result,
which a float16 model's framework run (float32 inside many of ONNX Runtime's
float16 kernels) does not give; a float16 copy would be no truth at all."""

from __future__ import annotations

FLOAT, DOUBLE = 1, 11  # onnx.TensorProto.FLOAT, DOUBLE
NARROW = (1, 10, 16)  # FLOAT, FLOAT16, BFLOAT16: the float types made float64
# attributes that name an element type (Cast's "to", ConstantOfShape's value's, RandomNormal's "dtype")
_TYPE_ATTRIBUTES = ("to", "dtype")


def to_float64(model):
    """A copy of the ONNX ``model`` computing in float64 (its inputs and
    outputs float64 too); raises ValueError for what it cannot convert."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    _graph(copy.graph)
    return copy


def _graph(graph) -> None:
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        _value_info(info)
    for tensor in graph.initializer:
        _tensor(tensor)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.name in _TYPE_ATTRIBUTES and attribute.i in NARROW:
                attribute.i = DOUBLE
            if attribute.HasField("t"):
                _tensor(attribute.t)
            if attribute.HasField("g") or len(attribute.graphs):
                raise ValueError(f"{node.op_type} has a subgraph (not converted to float64)")


def _value_info(info) -> None:
    tensor_type = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if tensor_type is not None and tensor_type.elem_type in NARROW:
        tensor_type.elem_type = DOUBLE


def _tensor(tensor) -> None:
    import numpy as np
    from onnx import numpy_helper

    if tensor.data_type not in NARROW:
        return
    converted = numpy_helper.from_array(np.asarray(numpy_helper.to_array(tensor), dtype=np.float64), tensor.name)
    tensor.CopyFrom(converted)
