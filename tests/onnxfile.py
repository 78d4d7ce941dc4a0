"""Writing a small ONNX model inside a test."""

import onnx
from onnx import helper


def save_onnx(path, nodes, inputs, outputs, initializers=(), opset=17) -> str:
    """The graph of ``nodes`` saved at ``path`` (IR version 8, which every onnxruntime reads); its path."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)
