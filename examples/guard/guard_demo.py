"""Wrap your own compile in numguard.guard: the unsafe pass is found and switched off.

    .venv/bin/python examples/guard/guard_demo.py
"""

import os
import warnings

import numpy as np
import tvm
from tvm import relax

import tvm_numguard as numguard

HERE = os.path.dirname(os.path.abspath(__file__))
mod = numguard.load_model(os.path.join(HERE, "..", "mlp", "mlp.onnx")).mod  # or any Relax IRModule


def my_pipeline(mod):
    mod = relax.transform.ToMixedPrecision()(mod)  # float16 arithmetic: loses bits
    return relax.transform.FoldConstant()(mod)


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", numguard.NumericalRiskWarning)
    with numguard.guard(low=0.0, high=1.0, action="disable") as g:
        mod_opt = my_pipeline(mod)
        ex = tvm.compile(mod_opt, target="llvm")

for warning in caught:
    print("warning:", warning.message)
print(g.report.summary())

x = np.random.default_rng(0).uniform(0, 1, (1, 32)).astype("float32")
vm = relax.VirtualMachine(ex, tvm.cpu())
print("output of the returned executable:", vm["main"](tvm.runtime.tensor(x)).numpy()[0, :4])
