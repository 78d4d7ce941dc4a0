"""Writes mlp.onnx: MatMul, Tanh, MatMul, Softmax with seeded weights (the shipped demo model)."""
import os

import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(0)
W1 = (rng.standard_normal((32, 64)) / np.sqrt(32)).astype("float32")
W2 = (rng.standard_normal((64, 16)) / np.sqrt(64)).astype("float32")
nodes = [
  helper.make_node("MatMul", ["x", "W1"], ["h"]),
  helper.make_node("Tanh", ["h"], ["t"]),
  helper.make_node("MatMul", ["t", "W2"], ["l"]),
  helper.make_node("Softmax", ["l"], ["y"], axis=-1),
]
g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
    [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(W2, "W2")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp.onnx"))
