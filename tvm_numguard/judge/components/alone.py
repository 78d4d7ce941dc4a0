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
the precision question of a narrow-float kernel. ``standalone_script`` prints
the same as a script a user runs on stock TVM, without numguard.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import tvm
from tvm import relax

from ...build.compile import call_main, device_array

# the values a script embeds as literals, at most (more are read from an .npz beside the script)
EMBEDDED_ELEMENTS = 4096


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


def standalone_script(call, values: Sequence, target: str, truth_code: str, where: Optional[list],
                      data_path: Optional[str] = None) -> str:
    """A script that compiles ``call`` alone with stock TVM, runs it on ``values`` and prints
    TVM's value at ``where`` beside the operator's meaning (``truth_code``: an expression over
    ``args``, the numpy arrays, that computes it in float64)."""
    mod, fed = alone(call, values)
    text = mod.script(show_meta=False)
    small = sum(v.size for v in fed) <= EMBEDDED_ELEMENTS or data_path is None
    lines = ["# Shows, with stock TVM and numpy only, an operator whose TVM kernel computes other numbers than",
             "# the operator means (numguard named it; this script does not need numguard).",
             "import numpy as np", "import tvm", "from tvm import relax", "from tvm.script import ir as I",
             "from tvm.script import relax as R", "", text.strip(), "",
             "mod = Module", f"executable = tvm.compile(mod, {target!r})",
             "vm = relax.VirtualMachine(executable, tvm.cpu())"]
    if small:
        lines.append("args = [" + ", ".join(_literal(v) for v in fed) + "]")
    else:
        lines += [f"saved = np.load({data_path!r})", f"args = [saved['a{i}'] for i in range({len(fed)})]"]
    at = "" if where is None else "[" + ", ".join(str(i) for i in where) + "]"
    lines += ["tvm_out = vm['main'](*[tvm.runtime.tensor(a) for a in args])",
              "tvm_out = (tvm_out[0] if isinstance(tvm_out, (list, tuple)) or hasattr(tvm_out, '__getitem__') "
              "and not hasattr(tvm_out, 'numpy') else tvm_out).numpy()",
              "wide = [a.astype(np.float64) if a.dtype.kind == 'f' else a for a in args]",
              f"expected = np.asarray({truth_code})",
              f"print('TVM computes     ', tvm_out{at})",
              f"print('the operator means', expected{at})",
              "print('max |difference| ', np.nanmax(np.abs(tvm_out.astype(np.float64) - expected)))"]
    return "\n".join(lines) + "\n", (None if small else {f"a{i}": v for i, v in enumerate(fed)})


def _literal(value: np.ndarray) -> str:
    return f"np.array({np.asarray(value).tolist()!r}, dtype={str(value.dtype)!r})"


def device_values(values: Sequence) -> list:
    return [device_array(v) for v in values]


__all__ = ["EMBEDDED_ELEMENTS", "alone", "run_alone", "standalone_script"]
