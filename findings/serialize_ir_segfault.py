"""Serializing IR crashes the process (SIGSEGV): ``tvm.ir.save_json`` of any IR
node (an ``IntImm`` as much as a Relax constant), ``pickle.dumps`` and
``copy.deepcopy`` of any Relax module, and ``mod.script(show_meta=True)`` of a
module holding a tensor constant.

TVM 0.27.0 (apache-tvm 0.27.0.post1 from PyPI), CPU, Linux x86_64. Expected:
a JSON string, bytes, a copy, a script (``pickle`` of an IR object goes
through the same JSON graph writer as ``save_json``, ``ffi.ToJSONGraphString``;
``copy.deepcopy`` through tvm_ffi's ``DeepCopy``). Actual: the process dies with a
segmentation fault in each case. ``save_json`` of plain FFI containers
(``tvm.runtime.convert([1, 2])``) returns, and ``mod.script(show_meta=True)``
of a module without a tensor constant returns.

Exit status: 0 when every one still crashes, 1 when one does not.
"""

import subprocess
import sys

SETUP = """
import copy, pickle
import numpy as np
import tvm
from tvm import relax
bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorType((2,), "float32"))
with bb.function("main", [x]):
    y = bb.emit(relax.op.add(x, {operand}))
    bb.emit_func_output(y)
mod = bb.get()
"""
# (call, the operand added to x in the module)
CRASHES = (("tvm.ir.save_json(tvm.tirx.IntImm('int32', 3))", "x"),
           ("tvm.ir.save_json(relax.const(np.ones(2, 'float32')))", "x"),
           ("pickle.dumps(mod)", "x"), ("copy.deepcopy(mod)", "x"),
           ("mod.script(show_meta=True)", "relax.const(np.ones(2, 'float32'))"))
RETURNS = (("tvm.ir.save_json(tvm.runtime.convert([1, 2]))", "x"), ("mod.script(show_meta=True)", "x"))


def status(call: str, operand: str) -> int:
    source = SETUP.format(operand=operand) + call + "\n"
    return subprocess.run([sys.executable, "-c", source], capture_output=True).returncode


if __name__ == "__main__":
    crashed = [status(call, operand) for call, operand in CRASHES]
    returned = [status(call, operand) for call, operand in RETURNS]
    for (call, operand), code in zip(CRASHES + RETURNS, crashed + returned):
        print(f"{call}{' (module with a constant)' if operand != 'x' else ''}: exit {code} (-11: SIGSEGV)")
    sys.exit(0 if all(c in (-11, 139) for c in crashed) and not any(returned) else 1)
