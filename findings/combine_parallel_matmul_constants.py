"""CombineParallelMatmul raises on a matmul whose left operand is a constant.

TVM 0.27.0 (apache-tvm 0.27.0.post1). A LoRA update merged into its weight,
``x @ (W + A @ B)`` with W, A, B constants (what ``torch.export`` makes of a
module holding them as parameters). Expected: the pass returns a module (or
leaves a matmul it cannot group alone). Actual: ``TypeError: Cannot treat type
`ir.GenericConst` as type `ir.Var``` (the pass assumes the left operand of
every matmul it groups is a Var). ``tvm.compile`` of the module without the
pass works.

Exit status: 0 when the error still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from tvm import relax


def module():
    rng = np.random.default_rng(0)
    const = lambda *shape: relax.const(rng.random(shape).astype("float32"))  # noqa: E731
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            update = bb.emit(relax.op.matmul(const(16, 2), const(2, 16)))
            merged = bb.emit(relax.op.add(const(16, 16), update))
            y = bb.emit_output(relax.op.matmul(x, merged))
        bb.emit_func_output(y)
    return bb.get()


if __name__ == "__main__":
    mod = module()
    tvm.compile(mod, "llvm")  # the model itself builds
    try:
        relax.transform.CombineParallelMatmul()(mod)
    except TypeError as err:
        print(f"CombineParallelMatmul raises TypeError: {str(err).strip().splitlines()[-1]}")
        sys.exit(0)
    print("CombineParallelMatmul returns a module: the finding no longer reproduces")
    sys.exit(1)
