"""TVM's ONNX frontend imports MeanVarianceNormalization with the variance as
E[x^2] - E[x]^2, which cancels in float32: NaN or large errors on inputs whose
mean is large against their spread.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU, ``tvm.relax.frontend.onnx.from_onnx``.
ONNX defines MVN(X) = (X - E[X]) / sqrt(E[(X - E[X])^2]) (the converter,
``MeanVarianceNormalization._impl_v9``, computes
``(x - mean) / sqrt(mean(x**2) - mean(x)**2)``). On x = 1000 + u, u uniform in
[0, 1), the exact result is of magnitude 1-2; float32 E[x^2] and E[x]^2 are
both about 1e6 and agree to about 6 digits, so their difference, the variance
(about 0.08), keeps almost none: TVM returns NaN where the variance comes out
negative, and errors of order 0.1-1 elsewhere. ONNX Runtime computes the same
model to about 1e-4.

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 2, 3])
    graph = helper.make_graph([node], "mvn", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def exact(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    centered = x - x.mean(axis=(0, 2, 3), keepdims=True)
    return centered / np.sqrt((centered ** 2).mean(axis=(0, 2, 3), keepdims=True))


if __name__ == "__main__":
    x = (1000.0 + np.random.default_rng(0).random((1, 2, 4, 4))).astype(np.float32)
    executable = tvm.compile(from_onnx(model()), "llvm")
    got = relax.VirtualMachine(executable, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()
    want = exact(x)
    error = np.abs(got.astype(np.float64) - want)
    worst = float(np.nanmax(error)) if np.isfinite(error).any() else float("inf")
    print(f"expected values of magnitude up to {np.abs(want).max():.3g}; TVM: {np.isnan(got).sum()} NaN of "
          f"{got.size}, largest finite error {worst:.3g} (float32 rounding would be about 1e-4)")
    sys.exit(0 if np.isnan(got).any() or worst > 1e-2 else 1)
