"""ToMixedPrecision raises on ``clip`` downstream of a matmul.

TVM 0.27.0 (apache-tvm 0.27.0.post1). ``R.clip`` takes its bounds as
PrimValues; once a float16 producer (the matmul) feeds it, the pass's type
inference expects every argument of the op it rewrites to be a tensor.
Expected: a float16 module. Actual: ``InternalError: Check failed: (tensor)
is false: Expected TensorType, but got T.float64``. ``clip`` with no float16
producer upstream passes. (torch's ``nn.Hardswish`` and ``nn.ReLU6`` after a
convolution export as this pattern.)

Exit status: 0 when the error still reproduces, 1 when it does not.
"""

import sys

from tvm import relax


def module(after_matmul: bool):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 4), "float32"))
    w = relax.Var("w", relax.TensorType((4, 4), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            m = bb.emit(relax.op.matmul(x, w)) if after_matmul else x
            y = bb.emit_output(relax.op.clip(m, -1.0, 1.0))
        bb.emit_func_output(y)
    return bb.get()


def fails(mod) -> str:
    try:
        relax.transform.ToMixedPrecision(out_dtype="float16")(mod)
    except Exception as err:  # TVM's InternalError
        return [line for line in str(err).splitlines() if line.strip()][-1].strip()
    return ""


if __name__ == "__main__":
    error, control = fails(module(True)), fails(module(False))
    print(f"matmul -> clip: {error or 'passes'}; clip alone: {control or 'passes'}")
    sys.exit(0 if error and not control else 1)
