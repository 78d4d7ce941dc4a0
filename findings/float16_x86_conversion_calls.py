"""On ``llvm`` (x86-64 without ``-mcpu``/``-mattr``), every float16 value a
kernel reads or writes goes through a library call, lane by lane.

TVM 0.27.0 (apache-tvm 0.27.0.post1), target ``llvm`` (x86_64). LLVM's default
x86-64 CPU has no F16C, so each half-to-float and float-to-half conversion of
a float16 kernel (``ToMixedPrecision``'s output on a CPU) is a call to
compiler-rt's ``__extendhfsf2`` / ``__truncsfhf2``, and TVM's vectorized loops
are split into one call per lane: an attention-like kernel (transpose,
multiply, broadcast of a float16 tensor) becomes thousands of calls. Its
machine code takes seconds to generate when the first VirtualMachine is made,
and every run pays the calls. Not a wrong result: with ``-mattr=+f16c`` the
same kernel uses ``vcvtph2ps``/``vcvtps2ph``, no call, and its outputs are the
same bit for bit (the conversions are exact), generated and run many times
faster. Measured here (2 cores, beside other work): see the printed line.

Exit status: 0 when the default target's kernel calls the conversion
functions and the F16C build computes the same bits without them, 1 when not.
"""

import re
import sys
import time

import numpy as np
import tvm
from tvm import relax


def module():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 197, 12, 64), "float16"))
    s = relax.Var("s", relax.TensorType((1,), "float16"))
    with bb.function("main", [x, s]):
        with bb.dataflow():
            t = bb.emit(relax.op.permute_dims(x, [0, 2, 3, 1]))
            m = bb.emit(relax.op.multiply(t, s))
            y = bb.emit_output(relax.op.reshape(m, (12, 64, 197)))
        bb.emit_func_output(y)
    return bb.get()


def measure(target) -> tuple:
    """(conversion calls in the kernels' assembly, seconds to build and make the VM, one run's seconds, outputs)."""
    start = time.perf_counter()
    executable = tvm.compile(module(), target)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    made = time.perf_counter() - start
    asm = "".join(m.inspect_source("asm") for m in executable.mod.imports if m.kind == "llvm")
    calls = len(re.findall(r"call\w*\s+__(extendhfsf2|truncsfhf2)", asm))
    rng = np.random.default_rng(0)
    x = tvm.runtime.tensor(rng.uniform(-4, 4, (1, 197, 12, 64)).astype("float16"))
    s = tvm.runtime.tensor(np.array([0.125], "float16"))
    start = time.perf_counter()
    out = vm["main"](x, s).numpy()
    return calls, made, time.perf_counter() - start, out


if __name__ == "__main__":
    default = measure(tvm.target.Target("llvm"))
    f16c = measure(tvm.target.Target({"kind": "llvm", "mattr": ["+f16c"]}))
    same = default[3].tobytes() == f16c[3].tobytes()
    print(f"llvm: {default[0]} conversion calls, built and VM made in {default[1]:.2f} s, a run {default[2]:.4f} s; "
          f"llvm -mattr=+f16c: {f16c[0]} calls, {f16c[1]:.2f} s, a run {f16c[2]:.4f} s; "
          f"outputs {'the same bit for bit' if same else 'DIFFER'}")
    sys.exit(0 if default[0] > 0 and f16c[0] == 0 and same else 1)
