"""A user pass that breaks the build: it refuses float16 tensors, as a vendor
pass written for float32 models does. After ToMixedPrecision it raises."""

import tvm
from tvm import relax


@tvm.transform.module_pass(opt_level=0, name="RejectFloat16")
def reject_float16(mod, ctx):
    for _, func in mod.functions.items():
        if isinstance(func, relax.Function) and "float16" in func.script():
            raise ValueError("RejectFloat16: float16 tensors are not supported")
    return mod
