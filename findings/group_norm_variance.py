"""R.nn.group_norm is lowered with the variance as E[x^2] - E[x]^2 in float32:
NaN on groups whose mean is large against their spread.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU. ``R.nn.group_norm`` legalizes to
``topi.nn.group_norm`` (include/tvm/topi/nn/group_norm.h), which sums x and
x*x in one pass and takes ``var = sum(x*x)/n - mean*mean``. Both torch's
``nn.GroupNorm`` (exported and imported with ``from_exported_program``) and
ONNX's ``GroupNormalization`` become this operator. On groups of 1000 + u, u
uniform in [0, 1) (the exact variance is about 0.08), float32 E[x^2] and
E[x]^2 are both about 1e6 and their difference keeps no correct digit: it
comes out negative and ``rsqrt(var + eps)`` is NaN in every element, where
the exact output is of magnitude 1-2 (PyTorch eager: errors of order 1e-3).

Exit status: 0 when the NaN still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from tvm import relax


def module(shape, groups):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, "float32"))
    gamma = relax.const(np.ones(shape[1], "float32"))
    beta = relax.const(np.full(shape[1], 0.5, "float32"))
    with bb.function("main", [x]):
        y = bb.emit(relax.op.nn.group_norm(x, gamma, beta, num_groups=groups, channel_axis=1, axes=[2, 3]))
        bb.emit_func_output(y)
    return bb.get()


def run(x: np.ndarray, groups: int) -> np.ndarray:
    executable = tvm.compile(module(x.shape, groups), "llvm")
    return relax.VirtualMachine(executable, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()


def exact(x: np.ndarray, groups: int) -> np.ndarray:
    n, c, h, w = x.shape
    g = x.astype(np.float64).reshape(n, groups, -1)
    centered = g - g.mean(axis=-1, keepdims=True)
    normalized = centered / np.sqrt((centered ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    return normalized.reshape(n, c, h, w) + 0.5


if __name__ == "__main__":
    x = (1000.0 + np.random.default_rng(0).random((1, 4, 8, 8))).astype(np.float32)
    got = run(x, 2)
    want = exact(x, 2)
    print(f"1000 + uniform[0, 1): expected values of magnitude up to {np.abs(want).max():.3g}; "
          f"TVM gives {np.isnan(got).sum()} NaN of {got.size}")
    sys.exit(0 if np.isnan(got).any() else 1)
