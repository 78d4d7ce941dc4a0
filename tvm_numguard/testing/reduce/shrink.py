"""Shrinking a repro's shapes: halve one dimension size everywhere it occurs.

A candidate takes every input (constants lifted to inputs, cut.lift_constants)
whose shape has a dimension of size ``d``, keeps the first half along it
(values sliced to match), and writes main again at the smaller shapes: Relax
re-infers every binding's shape, so a candidate whose ops cannot take the new
shapes (a reshape to a fixed shape, a mismatched matmul) is refused without a
build. One that Relax takes is checked like any cut (the constants bound back,
so passes that act on constants still see constants); it is kept if the
violation survives.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import tvm
from tvm import relax

from ...ir.relax_ir import tensor_type
from .cut import CutModule, emit_main, lift_constants, main_bindings


def resize(lifted: tvm.IRModule, values: dict, size: int, half: int) -> Optional[tuple]:
    """(module, values) with every dimension of ``size`` cut to ``half``; None if Relax refuses the shapes."""
    func = lifted["main"]
    params, new_values = [], {}
    for param in func.params:
        shape = tensor_type(param)[0]
        new_shape = tuple(half if d == size else d for d in shape)
        params.append(relax.Var(param.name, relax.TensorType(list(new_shape), param.ty.dtype)))
        new_values[param.name] = np.ascontiguousarray(
            values[param.name][tuple(slice(0, half) if d == size else slice(None) for d in shape)])
    body = func.body.body
    outputs = list(body.fields) if isinstance(body, relax.Tuple) else [body]
    try:
        mod = emit_main(params, [(b.var, b.value) for b in main_bindings(lifted)], outputs,
                        dict(zip(func.params, params)))
    except (RuntimeError, ValueError, TypeError):  # TVM raises these for shapes an op refuses
        return None
    return mod, new_values


def bind_constants(lifted: tvm.IRModule, values: dict, constant_names) -> tvm.IRModule:
    bound = {name: tvm.runtime.tensor(values[name]) for name in constant_names}
    return relax.transform.BindParams("main", bound)(lifted) if bound else lifted


def shrink_shapes(candidate: CutModule, inputs: dict, attempt: Callable, room: Callable[[], bool]) -> tuple:
    """(CutModule, inputs) at the smallest shapes that still violate. ``attempt(mod,
    inputs, label)`` checks a candidate (True: violates); ``room()``: budget left for one more."""
    lifted, constants = lift_constants(candidate.mod)
    values = {**inputs, **constants}
    sizes = sorted({d for p in lifted["main"].params for d in tensor_type(p)[0] if d > 1}, reverse=True)
    for size in sizes:
        while size > 1 and room():
            half = (size + 1) // 2
            resized = resize(lifted, values, size, half)
            if resized is None:
                break
            mod, new_values = resized
            feeds = {n: v for n, v in new_values.items() if n not in constants}
            if not attempt(bind_constants(mod, new_values, constants), feeds, f"shapes {size} -> {half}"):
                break
            lifted, values, size = mod, new_values, half
    shrunk = bind_constants(lifted, values, constants)
    return CutModule(shrunk, candidate.inputs), {n: v for n, v in values.items() if n not in constants}
