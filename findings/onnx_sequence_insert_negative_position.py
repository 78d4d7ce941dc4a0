"""TVM's ONNX frontend imports ``SequenceInsert`` at a negative position one
place too far back: position -1 appends where ONNX inserts before the last.

TVM 0.27.0 (apache-tvm 0.27.0.post1), ``tvm.relax.frontend.onnx.from_onnx``.
ONNX: "Negative value means counting positions from the back", as Python's
``list.insert``: inserting t at -1 into [a, b] gives [a, t, b] (ONNX Runtime
and onnx's reference evaluator agree). The converter takes
``seq_len + position + 1`` for a negative position, which appends: [a, b, t].
The onnx wheel's own node test ``simple/test_sequence_model3`` (construct
[X, Y, Z], erase at -3, insert X at -1, take at -1) expects Z; TVM returns X.

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper, numpy_helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def model():
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "b", "t")]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("SequenceInsert", ["s", "t", "minus_one"], ["s2"]),
             helper.make_node("SequenceAt", ["s2", "one"], ["y"])]  # the second element: t in ONNX, b in TVM
    constants = [numpy_helper.from_array(np.array(-1, np.int64), "minus_one"),
                 numpy_helper.from_array(np.array(1, np.int64), "one")]
    graph = helper.make_graph(nodes, "insert", inputs, [y], initializer=constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


if __name__ == "__main__":
    a, b, t = (np.full(2, v, np.float32) for v in (1.0, 2.0, 3.0))
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model(), keep_params_in_input=False), "llvm"), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), tvm.runtime.tensor(t)).numpy()
    print(f"insert t=3 at -1 into [a=1, b=2], take element 1: expected 3 (t), TVM gives {got[0]:g}")
    sys.exit(0 if got[0] != 3.0 else 1)
