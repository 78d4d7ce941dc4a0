"""TVM's ONNX frontend ignores ``IsInf``'s ``detect_positive`` and
``detect_negative`` attributes: every infinity is reported, whatever its sign.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU, ``tvm.relax.frontend.onnx.from_onnx``.
ONNX IsInf (since opset 10) maps +inf to true only where ``detect_positive``
is 1 and -inf only where ``detect_negative`` is 1 (both default to 1). The
converter, ``IsInf._impl_v10`` (relax/frontend/onnx/onnx_frontend.py), is
``return relax.op.isinf(inputs[0])`` and never reads ``attr``. On x =
[-1.2, nan, inf, 2.8, -inf, inf]: ``detect_negative=0`` must give
[F, F, T, F, F, T], TVM gives [F, F, T, F, T, T]; ``detect_positive=0`` must
give [F, F, F, F, T, F], TVM gives [F, F, T, F, T, T]. The onnx wheel's own
node tests ``test_isinf_positive`` and ``test_isinf_negative`` fail this way;
ONNX Runtime passes them. Fix: ``isinf(x) & (x > 0)`` / ``& (x < 0)`` per the
attributes. No issue found on apache/tvm's tracker.

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def model(**attributes):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])
    y = helper.make_tensor_value_info("y", TensorProto.BOOL, [6])
    graph = helper.make_graph([helper.make_node("IsInf", ["x"], ["y"], **attributes)], "isinf", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def tvm_isinf(x: np.ndarray, **attributes) -> np.ndarray:
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model(**attributes)), "llvm"), tvm.cpu())
    return vm["main"](tvm.runtime.tensor(x)).numpy()


if __name__ == "__main__":
    x = np.array([-1.2, np.nan, np.inf, 2.8, -np.inf, np.inf], np.float32)
    cases = {"detect_negative=0": ({"detect_negative": 0}, np.isposinf(x)),
             "detect_positive=0": ({"detect_positive": 0}, np.isneginf(x))}
    wrong = 0
    for label, (attributes, want) in cases.items():
        got = tvm_isinf(x, **attributes)
        wrong += not np.array_equal(got, want)
        print(f"IsInf({label}) of {x.tolist()}: expected {want.tolist()}, TVM {got.tolist()}")
    sys.exit(0 if wrong else 1)
