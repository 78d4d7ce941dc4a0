"""The conversion component: does TVM's frontend turn the model's node into Relax that means the same?

Its truth is the framework's node in float64 (``Framework.run_node(double=True)``)
on TVM's own values of the node's arguments. What it judges is the Relax the
frontend emitted for the node, evaluated binding by binding by each operator's
meaning (``meaning.py``: numpy and PyTorch, never TVM), on the same values:

- in float64 with every cast to a float kept in float64 (as the framework's
  float64 run widens the model's casts): another formula (an ignored attribute,
  a wrong default, a wrong axis) shows beyond the node's tolerance;
- with each binding rounded to the dtype it declares: a conversion that
  computes in a float narrower than the model's own for the node (a float32
  sum done in float16) shows there.

Neither evaluation runs a TVM kernel, so a wrong legalization or code
generation below a right conversion leaves this component agreeing.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
from tvm import relax

from ...ir.relax_ir import FLOAT_WIDTHS, tensor_type
from ..framework import FrameworkError
from .meaning import meaning_of
from .node import NodeCase
from ..elements import CONDITIONING_RUNS, conditioning_scale, conditioning_bound
from ..framework.runtimes import moved
from ..numbers import MOVED_BY, MOVED_ROUNDS
from .rule import fault_of
from .kernels import run_prim_func
from .values import MissingValue, widened
from .verdict import Component, ComponentVerdict, NodePlacement, Outcome



class Unjudged(Exception):
    """The conversion cannot be evaluated without TVM (why, in one line)."""


def judge(case: NodeCase) -> ComponentVerdict:
    subject = converter_name(case)
    try:
        theirs = np.asarray(case.framework.run_node(case.key, case.framework_arguments(), case.witness,
                                                    double=True))
        ours = evaluate(case, declared=False)
        fault = fault_of(theirs, ours, theirs, formula_tolerance(case, theirs))
        if not fault.found:
            fault = _moved_formula_fault(case)
    except (Unjudged, MissingValue, FrameworkError, NotImplementedError) as err:
        return ComponentVerdict(Component.CONVERSION, Outcome.UNJUDGED, subject, f"not judged: {err}")
    except Exception as err:  # noqa: BLE001 - the framework's node or a meaning on these values: no truth
        return ComponentVerdict(Component.CONVERSION, Outcome.UNJUDGED, subject,
                                f"not judged: {type(err).__name__}: {str(err)[:160]}")
    if fault.found:
        return ComponentVerdict(Component.CONVERSION, Outcome.AT_FAULT, subject, (
            f"the Relax it emits for {case.label} computes another formula than the model's node: evaluated op by "
            f"op in float64 it gives {_num(fault.worst.get('tvm'))} where the node gives "
            f"{_num(fault.worst.get('truth'))} at {fault.worst.get('index')}{fault.worst.get('where', '')}"),
            case.output, fault.worst, fault.elements)
    return _precision_of(case, subject, theirs, ours)


def _precision_of(case: NodeCase, subject: str, theirs: np.ndarray, ours: np.ndarray) -> ComponentVerdict:
    """The same formula (``ours``: its Relax in float64): at fault still where its Relax, computed in the
    dtypes it declares, narrows the model's float or loses precision the model's own node does not."""
    narrowed = narrowed_bindings(case)
    declared = evaluate(case, declared=True)
    if narrowed:
        fault = fault_of(theirs, declared, theirs, case.tol)
        if not fault.found:  # a degenerate witness (a range's end) can make the narrowed sum exact: move it
            fault = _moved_formula_fault(case, declared=True)
        if fault.found:
            return ComponentVerdict(Component.CONVERSION, Outcome.AT_FAULT, subject, (
                f"it computes {', '.join(narrowed)} in a float narrower than the model computes {case.label} in "
                f"({_model_float(case)}): with each binding rounded to its dtype the node gives "
                f"{_num(fault.worst.get('tvm'))} where the model's gives {_num(fault.worst.get('truth'))}"),
                case.output, fault.worst, fault.elements)
    fault = _declared_fault(case, declared, theirs, ours)
    if fault.found:
        return ComponentVerdict(Component.CONVERSION, Outcome.AT_FAULT, subject, (
            f"the Relax it emits for {case.label}, computed in the dtypes it declares ({_model_float(case)}), loses "
            f"precision the model's node does not: {_num(fault.worst.get('tvm'))} where the node gives "
            f"{_num(fault.worst.get('truth'))} at {fault.worst.get('index')} (the framework's own {_model_float(case)} "
            f"node: {_num(fault.worst.get('honest'))}; an unstable formula, as E[x^2] - E[x]^2 for a variance)"),
            case.output, fault.worst, fault.elements)
    return ComponentVerdict(Component.CONVERSION, Outcome.AGREES, subject,
                            f"the Relax it emits for {case.label} means what the model's node computes, on TVM's "
                            "own arguments and near them")


def _moved_formula_fault(case: NodeCase, declared: bool = False):
    """The formula check again on TVM's arguments moved by MOVED_BY (relative): two formulas that
    agree at a degenerate point (a constant row, where an ignored epsilon cancels out) part there.
    ``declared``: the node's Relax rounded to its declared dtypes, at the node's own tolerance (a
    float64 matmul narrowed to float32 is exact where every input is -1 and the weights float32's)."""
    names = case.framework.node_arguments(case.key)
    inputs = {name: np.asarray(case.witness[name]) for name in names if name in case.witness}
    args = case.framework_arguments()
    fault = None
    for seed in range(MOVED_ROUNDS):
        rng = np.random.default_rng(seed)
        # a value TVM folded into a constant stays as it is on both sides: the Relax holds it unmoved
        moved_args = {name: _moved(value, rng) if _binding_of(case, name) is not None else value
                      for name, value in args.items()}
        moved_inputs = {**case.witness, **{name: _moved(value, rng) for name, value in inputs.items()}}
        theirs = np.asarray(case.framework.run_node(case.key, moved_args, moved_inputs, double=True))
        overrides = {_binding_of(case, name): value for name, value in {**moved_args, **{
            n: moved_inputs[n] for n in inputs}}.items() if _binding_of(case, name) is not None}
        ours = evaluate(case, declared=declared, overrides=overrides)
        fault = fault_of(theirs, ours, theirs, case.tol if declared else formula_tolerance(case, theirs))
        if fault.found:
            worst = dict(fault.worst, where=f" on TVM's arguments moved by {MOVED_BY:g} (seed {seed})")
            return type(fault)(fault.elements, worst)
    return fault


def formula_tolerance(case: NodeCase, theirs: np.ndarray):
    """The node's tolerance with its atol kept whatever the values' scale: two float64 evaluations of one
    formula differ by float64's rounding, which a degenerate point (a constant group, where the exact result
    is 0) leaves as the only digits; the own scale is for values a kernel computes, not for this."""
    return dataclasses.replace(case.tol, atol=case.tol.for_output(0, theirs.dtype)[1])


def _moved(value, rng):
    value = np.asarray(value)
    if value.dtype.kind != "f":
        return value
    return (value.astype(np.float64) * (1.0 + rng.uniform(-MOVED_BY, MOVED_BY, value.shape))).astype(value.dtype)


def _binding_of(case: NodeCase, name: str):
    """The imported main's value name that holds the model's value ``name`` (an input: its own name)."""
    if name in case.witness:
        return name
    found = case.located.named.get(case.located.held_as(name))
    return None if found is None else found[0]


def _declared_fault(case: NodeCase, declared: np.ndarray, theirs: np.ndarray, ours: np.ndarray):
    """The node's Relax rounded to its declared dtypes against the float64 node, with the framework's
    own node in the model's dtypes as the honest implementation, and the node's conditioning bound: how far its
    float64 value moves when everything it reads (its arguments, and the weights and constants it
    holds, which the model stores in its float too) moves by the roundings of the model's float."""
    honest = np.asarray(case.framework.run_node(case.key, case.framework_arguments(in_model_dtypes=True),
                                                case.witness))
    scale = conditioning_scale(_model_float(case))
    runs = []
    for seed in range(CONDITIONING_RUNS):
        rng = np.random.default_rng(seed)
        runs.append([evaluate(case, declared=False, mover=lambda value, rng=rng: moved(value, rng, scale))])
    # the movement of the Relax's own float64 value: measured from the truth, the conditioning bound would also hold
    # how far the formula is from the node's meaning (softplus as log(1 + exp(x)): 0 for x below -37, where
    # it means 4.2e-18), and excuse the very loss this check is for
    own = np.asarray(ours, dtype=np.float64)
    centre = own if own.shape == np.shape(theirs) else np.asarray(theirs, dtype=np.float64)
    bound = conditioning_bound([centre], runs)[0]
    return fault_of(honest, declared, theirs, case.tol, bound)


def folded(located, key: str, tol) -> NodePlacement:
    """The placement of a value TVM's frontend folded into a constant at import (its converters
    fold with numpy): no kernel computes it, so the conversion alone can be at fault; its truth is
    the framework's own value of it."""
    constant = located.model.folded[key]
    subject = f"TVM's frontend: the constant it folded at import for {constant.label}"
    theirs = np.asarray(located.expected[key])
    fault = fault_of(theirs, np.asarray(constant.value), theirs, located.tolerance_of(key, tol))
    if fault.found:
        verdict = ComponentVerdict(Component.CONVERSION, Outcome.AT_FAULT, subject, (
            f"the frontend computed {constant.label} at import (its inputs are all constants) and emitted "
            f"{_num(fault.worst.get('tvm'))} where the model's node gives {_num(fault.worst.get('truth'))} at "
            f"{fault.worst.get('index')}"), None, fault.worst, fault.elements)
    else:
        verdict = ComponentVerdict(Component.CONVERSION, Outcome.AGREES, subject,
                                   "the constant it folded is the model's own value")
    below = [ComponentVerdict(c, Outcome.AGREES, f"no kernel of {constant.label}",
                              "the frontend folded this value at import: no kernel computes it")
             for c in (Component.LEGALIZATION, Component.CODEGEN)]
    return NodePlacement(constant.label, key, (verdict, *below))


def evaluate(case: NodeCase, declared: bool, overrides: Optional[dict] = None, mover=None) -> np.ndarray:
    """The node's bindings evaluated by their meanings, on TVM's values of what they read
    from outside the node (``overrides``: other values for some, by name; ``mover``: a
    function applied to every float value read from outside, constants included): float64
    throughout, or (``declared``) rounded to each binding's dtype."""
    env: dict = {}
    inside = set(case.bindings)
    outside = dict(overrides or {})
    for name in case.bindings:
        var, value = case.arguments.named[name]
        out = _evaluate_binding(case, value, env, inside, declared, (outside, mover))
        dtype = tensor_type(var)[1]
        if declared and dtype in FLOAT_WIDTHS and dtype != "bfloat16" and isinstance(out, np.ndarray):
            out = out.astype(dtype)
        env[name] = widened(out)
    result = env[case.output]
    return np.asarray(result[0] if isinstance(result, (list, tuple)) else result)


def _evaluate_binding(case: NodeCase, value, env: dict, inside: set, declared: bool, reading: tuple):
    outside, mover = reading

    def read(expr):
        if isinstance(expr, relax.Var):
            name = case.arguments.name_of.get(expr, expr.name)
            if name in inside:
                return env[name]
            if name in outside:
                return widened(np.asarray(outside[name]))
        if isinstance(expr, relax.Tuple):
            return [read(field) for field in expr.fields]
        value = widened(case.arguments.argument(expr))
        # a scalar constant is the converter's formula (the 1 of log(1 + x) for log1p), not a value the model
        # stores: moved by a few roundings it moved log(1 + x) far beyond log1p's own conditioning near 0
        movable = isinstance(value, np.ndarray) and (isinstance(expr, relax.Var) or value.size > 1)
        return mover(value) if mover is not None and movable else value

    if isinstance(value, relax.TupleGetItem):
        return read(value.tuple_value)[value.index]
    if isinstance(value, relax.Tuple):
        return [read(field) for field in value.fields]
    if isinstance(value, relax.Var):
        return read(value)
    if not isinstance(value, relax.Call):
        raise Unjudged(f"a binding of {type(value).__name__}")
    if getattr(value.op, "name", None) == "relax.call_tir":  # a TE kernel the converter wrote itself
        return _converter_kernel(case, value, read)
    meaning = meaning_of(value)
    if meaning is None:
        raise Unjudged(f"{getattr(value.op, 'name', value.op)} has no meaning outside TVM in numguard")
    args = [read(arg) for arg in value.args]
    if (meaning.op == "relax.astype" and not declared
            and np.dtype(_float_or_none(value.attrs.dtype) or "int64").kind == "f"):
        return args[0]  # a cast to a float: float64 keeps the value, as the framework's float64 run does
    out = meaning.evaluate(args)
    return list(out) if isinstance(out, tuple) else out


def _converter_kernel(case: NodeCase, call, read):
    """A kernel the converter emitted itself (``bb.emit_te``: ONNX Clip's ``topi.maximum``), run by TVM on
    the values the evaluation reads for its arguments (in the kernel's own dtypes): it is the converter's
    formula, so it is judged with the conversion."""
    func = case.model.mod[call.args[0]]
    fields = call.args[1].fields if isinstance(call.args[1], relax.Tuple) else [call.args[1]]
    inputs = [np.asarray(read(field)).astype(str(param_dtype)) for field, param_dtype in
              zip(fields, [p.ty.dtype for p in func.params])]
    out_type = call.ty_args[0] if call.ty_args else call.ty
    outputs = [([int(d) for d in out_type.shape.values], str(out_type.dtype))]
    return np.asarray(run_prim_func(func, inputs, outputs, case.target)[0])


def _float_or_none(dtype) -> Optional[str]:
    name = str(dtype)
    return name if name in ("float16", "float32", "float64") else None


def narrowed_bindings(case: NodeCase) -> list:
    """The node's bindings (as ``op binding``) computed in a float narrower than the model computes the node in."""
    model = _model_float(case)
    if model not in FLOAT_WIDTHS:
        return []
    rank = FLOAT_WIDTHS.index(model)
    out = []
    for name in case.bindings:
        var, value = case.arguments.named[name]
        dtype = tensor_type(var)[1]
        if dtype in FLOAT_WIDTHS and FLOAT_WIDTHS.index(dtype) < rank:
            out.append(f"{getattr(getattr(value, 'op', None), 'name', 'a value')} ({name}: {dtype})")
    return out


def _model_float(case: NodeCase):
    """The narrowest float the model itself computes the node in (its value's dtype where unknown)."""
    return case.located.history.get(case.key) or str(case.framework_value().dtype)


def converter_name(case: NodeCase) -> str:
    """The converter, in the frontend's words: ``onnx_frontend.Elu`` / the torch importer's ``aten.gelu.default``."""
    try:
        kind = case.framework.node_op(case.key)
    except (FrameworkError, NotImplementedError, AttributeError):
        return f"the frontend's converter of {case.label}"
    if case.framework.name.startswith("onnxruntime"):
        return f"TVM's ONNX frontend: its {kind} converter (tvm.relax.frontend.onnx.onnx_frontend.{kind})"
    return f"TVM's torch frontend: its converter of {kind} (ExportedProgramImporter)"


def _num(value) -> str:
    return "?" if value is None else f"{value:.6g}"


__all__ = ["converter_name", "evaluate", "judge", "narrowed_bindings"]
