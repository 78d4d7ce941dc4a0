"""TVM's ONNX frontend imports ``Expand`` with a shape computed at run time as
``broadcast_to(X, shape)``: where the shape has a 1 and X a larger dimension,
the result has the shape's dimension, not the broadcast of the two.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU, ``tvm.relax.frontend.onnx.from_onnx``.
ONNX's Expand broadcasts X and ``shape`` both ways (numpy's rule: where one
of the two dimensions is 1, the output has the other). The onnx wheel's own
node test ``simple/test_expand_shape_model3`` has X of shape (1, 3, 1) and
``shape`` an int64 input, [3, 1, 3] in its test data: the expected output has
shape (3, 3, 3) (ONNX Runtime and onnx's reference evaluator agree). TVM
returns shape (3, 1, 3). On shape = [1, 1, 1] it returns (1, 1, 1), one
element, where (1, 3, 1) is expected.

Exit status: 0 when the wrong shape still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def model():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 1])
    shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Expand", ["X", "shape"], ["Y"])], "expand", [x, shape], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def run(x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model()), "llvm"), tvm.cpu())
    return vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(shape)).numpy()


if __name__ == "__main__":
    x = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1)
    wrong = []
    for dims in ([3, 1, 3], [1, 1, 1]):
        want = x * np.ones(dims, np.float32)  # numpy broadcasting: ONNX's Expand
        got = run(x, np.array(dims, np.int64))
        print(f"shape {dims}: expected {list(want.shape)}, TVM gives {list(got.shape)}")
        wrong.append(got.shape != want.shape)
    sys.exit(0 if all(wrong) else 1)
