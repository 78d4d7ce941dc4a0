"""``R.mean`` over the last axis of a (4, 5, 2, 6) tensor does not build at
LLVM's default optimization level.

TVM 0.27.0 (apache-tvm 0.27.0.post1), target ``llvm`` (x86_64). Expected: the
module builds. Actual: ``LLVM module verification failed ... Instruction does
not dominate all uses!`` (a ``shufflevector``). The IR TVM emits is valid: the
same module builds with the target's LLVM ``opt-level`` at 2, 1 or 0, and
fails only at 3 (the default): LLVM's own optimizer breaks it. This is the
failure class of apache/tvm#20015 (``avg_pool2d`` of shape [1, 4, 6, 3]),
whose analysis (apache/tvm#20025) traces it to LLVM's vectorizers; reported
there, not a new finding.

Exit status: 0 when it still fails at opt-level 3 and builds at 2, 1 when not.
"""

import sys

import tvm
from tvm import relax


def module():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 5, 2, 6), "float32"))
    with bb.function("main", [x]):
        y = bb.emit(relax.op.mean(x, axis=[3], keepdims=True))
        bb.emit_func_output(y)
    return bb.get()


def builds(level: int) -> bool:
    try:
        tvm.compile(module(), tvm.target.Target({"kind": "llvm", "opt-level": level}))
    except Exception:  # TVM's InternalError: LLVM module verification failed
        return False
    return True


if __name__ == "__main__":
    results = {level: builds(level) for level in (3, 2)}
    print("LLVM opt-level 3: " + ("builds" if results[3] else "fails verification")
          + "; opt-level 2: " + ("builds" if results[2] else "fails"))
    sys.exit(0 if not results[3] and results[2] else 1)
