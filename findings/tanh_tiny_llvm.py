"""llvm's lowering of tirx.tanh returns 0 for tiny arguments (relative error 1).

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU. For the llvm target ``tirx.tanh``
is lowered by the ``llvm.FLowerIntrinsic`` rule ``DispatchNumericalStableTanh``
(src/target/intrin_rule.cc): (1 - exp(-2x)) / (1 + exp(-2x)) for x >= 0 and
(exp(2x) - 1) / (exp(2x) + 1) below. For |x| at or below about 1e-8, exp(-2x)
rounds to 1 in float32 and the numerator cancels to exactly 0, where
tanh(x) = x; above that the cancellation leaves few digits (measured: relative
error 0.1 at x = 1e-7, 1.3e-2 at 1e-6, 1.4e-3 at 1e-5). The
C library's tanhf (which the ``default.FLowerIntrinsic`` rule calls) is right.
A model computing ``Tanh`` of small activations (a scaled attention logit, a
regression head on tiny values) gets 0 or few correct digits.

Exit status: 0 when the zero still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from tvm import relax


def tanh_module(n: int):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((n,), "float32"))
    with bb.function("main", [x]):
        y = bb.emit(relax.op.tanh(x))
        bb.emit_func_output(y)
    return bb.get()


if __name__ == "__main__":
    x = np.array([1e-12, -3e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-3], dtype=np.float32)
    vm = relax.VirtualMachine(tvm.compile(tanh_module(x.size), "llvm"), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(x)).numpy()
    want = np.tanh(x.astype(np.float64))
    for value, mine, exact in zip(x, got, want):
        print(f"tanh({value:.3g}): TVM {mine:.9g}, exact {exact:.9g}, "
              f"relative error {abs(mine - exact) / abs(exact):.3g}")
    sys.exit(0 if got[0] == 0.0 and want[0] != 0.0 else 1)
