"""One Relax operator call alone, as a module of its own: TVM compiling just that operator.

Its tensor arguments become parameters (constants too, so that the values can
be fed), everything else (shapes, PrimValues, attributes) stays as the model
has it::

    # the binding in the model's main            # alone
    lv3 = R.nn.group_norm(lv2, gamma, beta, ...)  @R.function
                                                   def main(a0: R.Tensor(...), a1: ..., a2: ...):
                                                       lv = R.nn.group_norm(a0, a1, a2, ...)
                                                       return lv

``run_alone`` builds and runs it (plain LegalizeOps, the default TIR
pipeline), optionally with the operator kept in float32 (``ir/narrow/widen``):
the precision question of a narrow-float kernel; ``scripts.py`` prints the
same as a script a user runs on stock TVM.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tvm
from tvm import relax

from ...build.compile import call_main


def alone(call, values: Sequence) -> tuple:
    """(an IRModule whose main computes ``call`` on parameters, the values those parameters take)."""
    params, args, fed = [], [], []
    for index, (arg, value) in enumerate(zip(call.args, values)):
        if isinstance(value, np.ndarray) and (isinstance(arg, relax.Var) or hasattr(arg, "data")):
            param = relax.Var(f"a{index}", relax.TensorType(list(value.shape), str(value.dtype)))
            params.append(param)
            fed.append(value)
            args.append(param)
        elif isinstance(arg, relax.Tuple) and all(isinstance(v, np.ndarray) for v in value):
            fields = []
            for k, item in enumerate(value):
                param = relax.Var(f"a{index}_{k}", relax.TensorType(list(item.shape), str(item.dtype)))
                params.append(param)
                fed.append(item)
                fields.append(param)
            args.append(relax.Tuple(fields))
        else:
            args.append(arg)
    builder = relax.BlockBuilder()
    with builder.function("main", params):
        with builder.dataflow():
            out = builder.emit_output(relax.Call(call.op, args, call.attrs, call.ty_args))
        builder.emit_func_output(out)
    return builder.get(), fed


def run_alone(call, values: Sequence, target, keep_float32: bool = False) -> np.ndarray:
    """``call`` compiled alone by TVM for ``target`` and run on ``values``: its (first) output."""
    mod, fed = alone(call, values)
    if keep_float32:
        from ...ir.narrow.widen import keep_float32 as widen

        name = mod["main"].body.blocks[0].bindings[-1].var.name
        mod = widen(mod, [name])
    executable = tvm.compile(mod, target)
    device = tvm.cpu()
    vm = relax.VirtualMachine(executable, device)
    outputs = call_main(vm, device, [f"p{i}" for i in range(len(fed))], {f"p{i}": v for i, v in enumerate(fed)})
    return np.asarray(outputs[0])


__all__ = ["alone", "run_alone"]
