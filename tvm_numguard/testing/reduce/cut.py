"""Cutting a Relax ``main`` down to some of its bindings.

``main_bindings(mod)`` lists main's bindings in order; ``cut(mod, keep,
outputs)`` writes a new module whose ``main`` computes only the bindings
``keep`` names (positions in that list) and returns ``outputs``: every value a
kept binding reads from a binding left out becomes an input of its own (the
reducer feeds it the value captured from the reference run), so a binding is
"replaced by its captured reference value".
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

import tvm
from tvm import relax

from ...base.errors import ModelError
from ...ir.relax_ir import tensor_type


@dataclasses.dataclass(frozen=True)
class CutModule:
    """``mod``: the cut module; ``inputs``: its main's inputs in order, each
    (name, binding position or None for an original input of the model)."""

    mod: tvm.IRModule
    inputs: tuple


def main_bindings(mod: tvm.IRModule) -> list:
    """main's bindings (``relax.VarBinding``) in order; ModelError when it has others."""
    func = mod["main"]
    bindings = []
    for block in func.body.blocks:
        for binding in block.bindings:
            if not isinstance(binding, relax.VarBinding):
                raise ModelError("the reducer handles main functions of plain bindings (this one has a match_cast)")
            bindings.append(binding)
    return bindings


def is_operator(binding) -> bool:
    """A call of a Relax operator (what "≤ 3 Relax operators" counts)."""
    value = binding.value
    return isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)


def is_tensor(var) -> bool:
    """A tensor of static shape: a value the reference run captures and a cut can feed."""
    return tensor_type(var)[0] is not None


def reads(binding) -> list:
    return list(relax.analysis.free_vars(binding.value))


@relax.expr_functor.mutator
class _Substitute(relax.PyExprMutator):
    """Vars through ``mapping``; each tensor constant, when ``constants`` is a
    list, through a new parameter (appended there with its value)."""

    def __init__(self, mapping: dict, constants=None):
        super().__init__()
        self.mapping = mapping
        self.constants = constants

    def visit_var_(self, var):
        return self.mapping.get(var, var)

    def visit_dataflow_var_(self, var):
        return self.mapping.get(var, var)

    def visit_generic_const_(self, const):
        if self.constants is None:
            return const
        param = relax.Var(f"const{len(self.constants)}", const.ty)
        self.constants.append((param, const.value.numpy()))
        return param


def lift_constants(mod: tvm.IRModule) -> tuple:
    """(main with every constant a trailing parameter ``constK``, {constK: value}):
    TVMScript without metadata, which this TVM cannot print and parse back."""
    func = mod["main"]
    constants: list = []
    params = [relax.Var(p.name, p.ty) for p in func.params]
    mapping = dict(zip(func.params, params))
    values = [(b.var, _Substitute({}, constants).visit_expr(b.value)) for b in main_bindings(mod)]
    body = func.body.body
    outputs = list(body.fields) if isinstance(body, relax.Tuple) else [body]
    lifted = emit_main(params + [p for p, _ in constants], values, outputs, mapping)
    return lifted, {p.name: value for p, value in constants}


def cut(mod: tvm.IRModule, keep: Iterable[int], outputs: Sequence[int]) -> CutModule:
    """See the module docstring; ``outputs`` must be kept bindings of tensor type.
    A binding that is no tensor (a tuple) is never cut: it is kept with what reads it."""
    bindings = main_bindings(mod)
    position = {b.var: k for k, b in enumerate(bindings)}
    keep = sorted(_needed(bindings, position, _with_untensored(bindings, position, set(keep) | set(outputs)),
                          outputs))
    kept_vars = {bindings[k].var for k in keep}
    names: set
    params, inputs, mapping, names = [], [], {}, set()
    for k in keep:
        for var in reads(bindings[k]):
            if var in mapping or var in kept_vars:
                continue
            origin = position.get(var)
            name = _unique(var.name if origin is None else f"cut_{var.name}", names)
            mapping[var] = relax.Var(name, var.ty)
            params.append(mapping[var])
            inputs.append((name, origin))
    values = [(bindings[k].var, bindings[k].value) for k in keep]
    mod = emit_main(params, values, [bindings[k].var for k in outputs], mapping)
    return CutModule(mod, tuple(inputs))


def _with_untensored(bindings: list, position: dict, keep: set) -> set:
    """``keep`` and every binding it reads that is no tensor (a tuple such as
    batch_norm's): such a value cannot be fed as an input, so it is kept."""
    keep, stack = set(keep), list(keep)
    while stack:
        for var in reads(bindings[stack.pop()]):
            k = position.get(var)
            if k is not None and k not in keep and not is_tensor(var):
                keep.add(k)
                stack.append(k)
    return keep


def _needed(bindings: list, position: dict, keep: set, outputs) -> set:
    """The kept bindings the outputs read, through kept bindings (a kept binding nothing reads is left out)."""
    needed, stack = set(), list(outputs)
    while stack:
        k = stack.pop()
        if k in needed:
            continue
        needed.add(k)
        stack.extend(position[v] for v in reads(bindings[k]) if v in position and position[v] in keep)
    return needed


def emit_main(params: list, values: list, outputs: list, mapping: dict) -> tvm.IRModule:
    """A module whose main takes ``params``, binds ``values`` ((old var, value)
    pairs, vars renamed through ``mapping``) and returns the new ``outputs``."""
    builder = relax.BlockBuilder()
    with builder.function("main", params):
        with builder.dataflow():
            for k, (var, value) in enumerate(values):
                value = _Substitute(mapping).visit_expr(value)
                last = k == len(values) - 1 and outputs == [var]
                # the one output bound last is emitted as the output itself (no trailing gv = lv)
                emit = builder.emit_output if last else builder.emit
                mapping[var] = emit(value, name_hint=var.name)
            outs = [mapping.get(v, v) for v in outputs]
            result = outs[0] if len(outs) == 1 and outputs == [values[-1][0]] else builder.emit_output(
                outs[0] if len(outs) == 1 else relax.Tuple(outs))
        builder.emit_func_output(result)
    return builder.get()


def _unique(name: str, taken: set) -> str:
    candidate, n = name, 1
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate)
    return candidate


def upstream(bindings: list, sink: int, depth: int) -> set:
    """The bindings within ``depth`` reads upstream of ``sink`` (``sink`` included)."""
    position = {b.var: k for k, b in enumerate(bindings)}
    cone, frontier = {sink}, {sink}
    for _ in range(depth):
        frontier = {position[v] for k in frontier for v in reads(bindings[k]) if v in position} - cone
        if not frontier:
            break
        cone |= frontier
    return cone
