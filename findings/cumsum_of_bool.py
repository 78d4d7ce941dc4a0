"""``R.cumsum`` of a bool tensor is typed bool and does not build; GPT-2 and
Llama blocks imported from torch fail to build on it.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU. torch (and numpy) give the
cumulative sum of a bool tensor as int64 counts; TVM's torch importer maps
``cumsum`` of a bool (the attention mask's position ids in transformers'
GPT-2 and Llama, ``use_cache=False``) to ``R.cumsum`` with no dtype, which
Relax types bool. Expected: int64 counts, as torch computes. Actual:
``tvm.compile`` fails with ``Check failed:
(t.MatchesCode(DLDataTypeCode::kDLFloat)) is false``, the error the GPT-2 and
Llama blocks stop at with every pipeline. With ``dtype="int64"`` given, the
same cumsum builds and counts.

Exit status: 0 when it still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from tvm import relax


def module(dtype):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((6,), "bool"))
    with bb.function("main", [x]):
        y = bb.emit(relax.op.cumsum(x, axis=0, dtype=dtype))
        bb.emit_func_output(y)
    return bb.get()


def run(dtype):
    mod = module(dtype)
    typed = str(mod["main"].ret_ty) if hasattr(mod["main"], "ret_ty") else "?"
    try:
        executable = tvm.compile(mod, "llvm")
    except Exception as err:  # TVM's InternalError
        return typed, [line for line in str(err).splitlines() if line.strip()][-1].strip()
    mask = np.array([1, 1, 0, 1, 0, 1], bool)
    return typed, relax.VirtualMachine(executable, tvm.cpu())["main"](tvm.runtime.tensor(mask)).numpy().tolist()


if __name__ == "__main__":
    (typed, as_bool), (_, as_int) = run(None), run("int64")
    print(f"cumsum of bool, no dtype: typed {typed}, builds to: {as_bool}")
    print(f"with dtype int64: {as_int} (torch: [1, 2, 2, 3, 3, 4])")
    sys.exit(0 if isinstance(as_bool, str) and as_int == [1, 2, 2, 3, 3, 4] else 1)
