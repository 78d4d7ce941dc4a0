"""Relax modules for unit tests: one op around an input, built and run plainly."""

import numpy as np

def unary_module(fn, shape=(64,), dtype: str = "float32"):
    """A Relax module ``main(x) = fn(x)`` for one input of ``shape``: ``fn``
    takes and returns a relax expression (``lambda x: relax.op.log(x)``)."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, dtype))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(fn(x))
        bb.emit_func_output(y)
    return bb.get()


def run_module(mod, x: np.ndarray) -> np.ndarray:
    """Build ``mod`` with the plain lowering and run ``main`` on one input."""
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    return vm["main"](tvm.runtime.tensor(x)).numpy()
