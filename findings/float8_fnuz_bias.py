"""TVM computes ``float8_e4m3fnuz`` and ``float8_e5m2fnuz`` with the exponent
bias of ``float8_e4m3fn`` and ``float8_e5m2``: every value is stored at half,
and read at twice, what the format means.

TVM 0.27.0 (apache-tvm 0.27.0.post1), target ``llvm`` (any target without
native float8: ``FP8ComputeLegalize`` and ``FP8StorageLegalize`` act wherever
``tvm.support.nvcc.supports_fp8`` does not say otherwise). Those passes turn a
cast to or from a float8 type into the bit arithmetic of ``DTypeConversion``
(``src/tirx/transform/dtype_conversion.cc``), which shifts the exponent by the
difference of the two formats' biases. ``FloatConfig::FromDataType``
(``dtype_conversion.h``) gives ``kDLFloat8_e4m3fnuz`` the bias 7 and
``kDLFloat8_e5m2fnuz`` the bias 15, those of the FN/IEEE formats; the FNUZ
formats (ml_dtypes, ONNX's FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ, LLVM's APFloat)
have 8 and 16. Expected: ``astype(float8_e4m3fnuz)`` of 1.0 is the byte 0x40
(numpy with ml_dtypes, ONNX's ``saturate_cast``). Actual: 0x38, which the format
reads as 0.5; and a float8_e4m3fnuz tensor holding 1.0 (0x40) is read as 2.0.
Within one TVM module the two errors cancel, so TVM's own round trips pass;
every FNUZ tensor that crosses the module's boundary (inputs, outputs,
constants such as an ONNX initializer) is off by a factor of 2. The onnx
wheel's node tests ``test_cast*_FLOAT*_to_FLOAT8E*FNUZ`` and
``test_cast*_FLOAT8E*FNUZ_to_FLOAT*`` (Cast, CastLike and its function body;
36 cases) fail this way. The same ``FloatConfig`` gives
``float8_e4m3b11fnuz`` the bias 7 where it has 11 (1.0 is stored as 0x38, not
0x58: a factor of 16). Not found on
apache/tvm's tracker (apache/tvm#20315 is the zero/subnormal defect of the same
function, finding 20).

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper
from tvm import relax

FNUZ = {"float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ, "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ}
VALUES = np.float32([0.5, 1.0, 2.0, -3.0, 0.375, 96.0])  # exactly representable in both formats


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
    for name, onnx_type in FNUZ.items():
        numpy_type = helper.tensor_dtype_to_np_dtype(onnx_type)  # ml_dtypes' type, as ONNX reads the format
        want = VALUES.astype(numpy_type)
        stored = tvm_astype(VALUES, name)
        read = tvm_astype(want, "float32")
        print(f"float32 -> {name}: expected bytes {want.view(np.uint8).tolist()}, TVM "
              f"{stored.view(np.uint8).tolist()} (the format reads {stored.astype(np.float32).tolist()})")
        print(f"{name} -> float32 of {VALUES.tolist()}: TVM {read.tolist()}")
        wrong |= not np.array_equal(stored.view(np.uint8), want.view(np.uint8)) or not np.array_equal(read, VALUES)
    return wrong


if __name__ == "__main__":
    sys.exit(0 if reproduces() else 1)
