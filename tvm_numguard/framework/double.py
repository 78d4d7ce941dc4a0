"""A float64 copy of an ONNX graph: every float32 tensor, type, constant and
cast made float64, so ONNX Runtime computes the same model in double precision
(where it has the kernels: the session refuses the copy otherwise)."""

from __future__ import annotations

FLOAT, DOUBLE = 1, 11  # onnx.TensorProto.FLOAT, DOUBLE
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
            if attribute.name in _TYPE_ATTRIBUTES and attribute.i == FLOAT:
                attribute.i = DOUBLE
            if attribute.HasField("t"):
                _tensor(attribute.t)
            if attribute.HasField("g") or len(attribute.graphs):
                raise ValueError(f"{node.op_type} has a subgraph (not converted to float64)")


def _value_info(info) -> None:
    tensor_type = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if tensor_type is not None and tensor_type.elem_type == FLOAT:
        tensor_type.elem_type = DOUBLE


def _tensor(tensor) -> None:
    import numpy as np
    from onnx import numpy_helper

    if tensor.data_type != FLOAT:
        return
    converted = numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name)
    tensor.CopyFrom(converted)
