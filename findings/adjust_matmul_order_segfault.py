"""AdjustMatmulOrder crashes the process (SIGSEGV) on a matmul chain whose two
orders cost the same and whose result is bound to another var.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU. Expected: the pass returns a module
(either order is valid: (a @ b) @ c and a @ (b @ c) cost the same on 4x4
operands). Actual: the process dies with a segmentation fault. Without the
last binding (``gv = o``; returning ``o`` itself) the pass returns normally.

Exit status: 0 when the crash still reproduces, 1 when it does not.
"""

import os
import subprocess
import sys
import tempfile

CHAIN = '''
import tvm
from tvm import relax
from tvm.script import relax as R

@R.function
def main(a: R.Tensor((4, 4), "float32"), b: R.Tensor((4, 4), "float32"), c: R.Tensor((4, 4), "float32")):
    with R.dataflow():
        ab = R.matmul(a, b)
        o = R.matmul(ab, c)
        gv = o{rebind}
        R.output(gv)
    return gv

relax.transform.AdjustMatmulOrder()(tvm.IRModule({{"main": main}}))
print("returned")
'''


def run(rebind: bool) -> int:
    """The exit status of the chain in a fresh process (TVMScript reads its source from a file)."""
    # ``gv = o`` rebinds the chain's result; ``gv = o + 0`` is a new value
    source = CHAIN.format(rebind="" if rebind else " + R.const(0, 'float32')")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "chain.py")
        with open(path, "w") as f:
            f.write(source)
        return subprocess.run([sys.executable, path], capture_output=True).returncode


if __name__ == "__main__":
    crashed, control = run(rebind=True), run(rebind=False)
    print(f"with gv = o: exit {crashed} (expected 0; -11 is SIGSEGV); with gv = o + 0: exit {control}")
    sys.exit(0 if crashed in (-11, 139) and control == 0 else 1)
