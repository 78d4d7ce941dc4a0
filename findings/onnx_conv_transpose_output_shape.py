"""TVM's ONNX frontend ignores ``ConvTranspose``'s ``output_shape`` attribute:
the output has the shape the strides and kernel give without it.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU, ``tvm.relax.frontend.onnx.from_onnx``.
ONNX ConvTranspose: "output_shape can also be explicitly specified in which
case pads values are auto generated" (total_padding = stride * (in - 1) +
output_padding + (kernel - 1) * dilation + 1 - output_shape; a negative total
pads the end of the output). The converter, ``ConvTranspose._impl_v1``
(relax/frontend/onnx/onnx_frontend.py), reads strides, dilations,
output_padding, kernel_shape, auto_pad and pads, never ``output_shape``. Here
X (1, 1, 3, 3), W (1, 2, 3, 3), strides [3, 2] and output_shape [10, 8] (the
onnx wheel's node test ``test_convtranspose_output_shape``) must give
(1, 2, 10, 8), as ONNX Runtime and onnx's reference evaluator do; TVM returns
(1, 2, 9, 7). With output_shape [8, 6] (a positive total padding) ONNX gives
(1, 2, 8, 6) and TVM again (1, 2, 9, 7): a wrong shape, and wrong values
where the shapes happen to meet.

Related: apache/tvm#19450 (the converter's ``auto_pad``, fixed) says in its
description that ``output_shape`` "remains unsupported"; no issue of its own
found. The old Relay frontend supported it (apache/tvm#11076).

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def model(output_shape):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 3, 3])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 2, 3, 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], strides=[3, 2], output_shape=output_shape)
    return helper.make_model(helper.make_graph([node], "convtranspose", [x, w], [y]),
                             opset_imports=[helper.make_opsetid("", 22)])


def expected(x: np.ndarray, w: np.ndarray, strides, output_shape) -> np.ndarray:
    """ONNX's result: the full transposed convolution, cropped by the spec's
    pads (start: total - total // 2, end: total // 2), or padded with zeros at
    the end where the total is negative (as ONNX Runtime and onnx's reference do)."""
    (kh, kw), (h, wd) = w.shape[2:], x.shape[2:]
    full = np.zeros((1, w.shape[1], strides[0] * (h - 1) + kh, strides[1] * (wd - 1) + kw))
    for i in range(h):
        for j in range(wd):
            full[0, :, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw] += x[0, 0, i, j] * w[0]
    out = np.zeros((1, w.shape[1], *output_shape))
    for axis, size in ((2, output_shape[0]), (3, output_shape[1])):
        total = full.shape[axis] - size
        start = total - total // 2 if total > 0 else 0
        full = np.take(full, range(start, start + min(size, full.shape[axis] - start)), axis=axis)
    out[:, :, :full.shape[2], :full.shape[3]] = full
    return out


if __name__ == "__main__":
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 2, 3, 3), np.float32)
    wrong = 0
    for output_shape in ([10, 8], [8, 6]):
        want = expected(x, w, (3, 2), output_shape)
        vm = relax.VirtualMachine(tvm.compile(from_onnx(model(output_shape)), "llvm"), tvm.cpu())
        got = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
        agree = got.shape == want.shape and np.allclose(got, want)
        wrong += not agree
        print(f"output_shape={output_shape}: expected shape {list(want.shape)}, TVM {list(got.shape)}"
              + ("" if got.shape != want.shape else f", values {'agree' if agree else 'differ'}"))
    sys.exit(0 if wrong else 1)
