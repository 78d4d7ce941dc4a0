"""TVM reads a float8 zero as 2^-7 (``float8_e4m3fn``) or 2^-15
(``float8_e5m2``), reads every subnormal wrong, and writes subnormals as zero.

TVM 0.27.0 (apache-tvm 0.27.0.post1), target ``llvm`` (any target without
native float8). ``FP8ComputeLegalize`` turns casts to and from float8 into
``DTypeConversion`` (``src/tirx/transform/dtype_conversion.cc``): widening
adds the difference of the biases to the exponent field whatever it holds, so
the exponent field 0 (zero and the subnormals) becomes a normal exponent;
narrowing maps every value below the smallest normal to +0 (``round_to_zero``).
Expected (numpy with ml_dtypes, ONNX's Cast): float8_e4m3fn bytes
[0x00, 0x01, 0x03, 0x04, 0x80] are [0, 2^-9, 3 * 2^-9, 2^-7, -0] in float32,
and 2^-9 in float32 is the byte 0x01. Actual: [2^-7, 1.125 * 2^-7,
1.375 * 2^-7, 1.5 * 2^-7, -2^-7], and 0x00 (every one of them is written as +0).
Every zero in a float8 tensor TVM widens is nonzero: the onnx wheel's
node tests ``test_cast*_FLOAT8E4M3FN_to_FLOAT*`` and
``test_cast*_FLOAT8E5M2_to_FLOAT*`` (Cast, CastLike and its function body; 12
cases) fail on their zeros ("tvm 0.00781 vs expected 0"). Reported for
float8_e5m2 as apache/tvm#20315 (open); float8_e4m3fn is the same code path.
Not to be filed again: add float8_e4m3fn to that issue.

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper
from tvm import relax

FORMATS = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "float8_e5m2": TensorProto.FLOAT8E5M2}
CODES = np.uint8([0x00, 0x01, 0x03, 0x04, 0x80])  # +0, subnormals (0x04 is e5m2's smallest normal), -0


def tvm_astype(x: np.ndarray, dtype: str) -> np.ndarray:
    """``R.astype(x, dtype)`` built for llvm and run on the CPU."""
    bb = relax.BlockBuilder()
    var = relax.Var("x", relax.TensorType(x.shape, str(x.dtype)))
    with bb.function("main", [var]):
        out = bb.emit(relax.op.astype(var, dtype))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(tvm.compile(bb.get(), "llvm"), tvm.cpu())
    return vm["main"](tvm.runtime.tensor(x)).numpy()


def reproduces() -> bool:
    wrong = False
    for name, onnx_type in FORMATS.items():
        small = CODES.view(helper.tensor_dtype_to_np_dtype(onnx_type))  # ml_dtypes' type, as ONNX reads it
        want = small.astype(np.float32)
        read = tvm_astype(small, "float32")
        written = tvm_astype(want, name)
        print(f"{name} bytes {CODES.tolist()} -> float32: expected {want.tolist()}, TVM {read.tolist()}")
        print(f"float32 {want.tolist()} -> {name}: expected bytes {CODES.tolist()}, TVM "
              f"{written.view(np.uint8).tolist()}")
        wrong |= not np.array_equal(read, want) or not np.array_equal(written.astype(np.float32), want)
    return wrong


if __name__ == "__main__":
    sys.exit(0 if reproduces() else 1)
