"""Reducing a violation to a few Relax operators that still show it.

The question (``PassQuestion``) is passed into the search, as XLA's hlo_bisect does:
a candidate module and its inputs are built with the configuration (the pass
under test in brackets) and its reference (the same without the pass), and
compared by the one violation rule. The search, within a build budget:

1. **probe**: main with every binding an output, built with and without the
   pass and run on the witness (2 builds): each binding's reference value is
   captured, and the first binding whose value violates is the **origin**
   (else the model's first output stands in).
2. **cut**: keep the bindings within depth 0, 1, 2, ... upstream of the origin;
   every other value a kept binding reads is replaced by its captured
   reference value, fed as an input. The first depth that still violates wins.
3. **drop**: while the budget lasts, leave out one more binding of the cone
   (farthest first) where the violation survives it.
4. **shrink**: halve dimension sizes while the violation survives
   (``shrink_shapes``; shapes the operators cannot take are refused without a
   build); the witness is sliced with them.
5. **verify**: the repro is rebuilt from scratch and checked again (it
   reproduces twice), and its float64 build tells the pass's error from the
   reference's (the repro is clean without the pass).

Shrinking a repro's shapes halves one dimension size everywhere it occurs.
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

import dataclasses
from typing import Callable, Mapping, Optional

import numpy as np
import tvm
from tvm import relax

from ...base.errors import BuildError, UsageError
from ...ir.model import load_model
from ...ir.pipeline import CompileConfig
from ...base.compare import Comparison, compare_output, compare_outputs
from ...base.tolerance import Tolerance
from ...ir.relax_ir import tensor_type
from ...ir.targets import local_target
from ...build.session import RunContext, BuildSession
from ...build.tasks import RunFailure
from .cut import CutModule, cut, emit_main, is_operator, is_tensor, lift_constants, main_bindings, upstream

BUILD_BUDGET = 20
VERIFY_BUILDS = 3  # a second question from scratch (2) and the float64 build (1)


class ReduceError(UsageError):
    """The violation cannot be reduced (it does not show on the model as given)."""


@dataclasses.dataclass
class Answer:
    violated: bool
    score: float
    reference: list  # the outputs without the pass
    builds: int


class PassQuestion:
    """Does a module, on given inputs, still violate with the pass under test?"""

    def __init__(self, config: CompileConfig, tol: Tolerance):
        self.config, self.tol, self.builds = config, tol, 0

    def sessions(self, mod) -> BuildSession:
        """A BuildSession of ``mod`` with both builds made (2 builds)."""
        session = BuildSession(load_model(mod), self.config, self.tol, RunContext().in_process())
        try:
            session.prepare(record=False)
        finally:
            self.builds += session.build_count
        return session

    def __call__(self, mod, inputs: Mapping[str, np.ndarray]) -> Optional[Answer]:
        """The comparison on ``inputs``; None when a build or run fails (untestable)."""
        try:
            session = self.sessions(mod)
            comparison: Comparison = session.runs.compare(session.built, inputs)
            reference = session.runs.reference_outputs(inputs)
        except (BuildError, RunFailure):
            return None
        return Answer(comparison.violated, comparison.score, reference, session.build_count)


@dataclasses.dataclass
class Reduction:
    """``cut``: the reduced module and its inputs; ``inputs``: the witness of
    the repro; ``operators``: Relax operators before and after; ``steps``: what
    was tried, one line each; ``verified``: the final checks."""

    cut: CutModule
    inputs: dict
    operators_before: int
    operators: int
    builds: int
    origin: Optional[str]
    score: float
    steps: list
    verified: dict

    def to_json(self) -> dict:
        return {"operators_before": self.operators_before, "operators": self.operators, "builds": self.builds,
                "origin": self.origin, "score": self.score, "steps": list(self.steps), "verified": self.verified,
                "inputs": {n: list(v.shape) for n, v in self.inputs.items()}}


def reduce_violation(model, config: CompileConfig, witness: Mapping[str, np.ndarray], tol: Tolerance,
                     budget: int = BUILD_BUDGET, progress: Callable[[str], None] = lambda message: None,
                     question: Optional[PassQuestion] = None) -> Reduction:
    """See the module docstring. ``model``: a Model; ``witness``: its inputs
    that violate; ``question``: the PassQuestion to ask (default: ``config``'s)."""
    question = question or PassQuestion(config, tol)
    bindings = main_bindings(model.mod)
    operators_before = sum(is_operator(b) for b in bindings)
    steps: list = []
    tensors = [k for k, b in enumerate(bindings) if is_tensor(b.var)]
    captured, origin = _probe(question, model, bindings, tensors, dict(witness), tol, steps)
    progress(steps[-1])
    sink = origin if origin is not None else _first_output(model.mod, bindings)
    if sink is None:
        raise ReduceError("the model's main returns no tensor binding to reduce toward")

    def inputs_of(candidate: CutModule) -> dict:
        return {name: (witness[name] if k is None else captured[k]) for name, k in candidate.inputs}

    def attempt(keep: set, label: str):
        if captured is None and len(keep) < len(bindings):
            return None
        candidate = cut(model.mod, keep, [sink])
        inputs = inputs_of(candidate)
        result = question(candidate.mod, inputs)
        ops = sum(is_operator(b) for b in main_bindings(candidate.mod))
        steps.append(_step(f"{label}: {ops} operator(s)", result))
        progress(steps[-1])
        return (candidate, inputs, result.score, keep) if result is not None and result.violated else None

    found = _grow_cone(bindings, sink, attempt, lambda: question.builds + 2 <= budget - VERIFY_BUILDS)
    if found is None:
        raise ReduceError(f"no cut of the model shows the violation within {budget} builds "
                          f"({'; '.join(steps)})")
    found = _drop(found, bindings, sink, attempt, question, budget)
    candidate, inputs, score, _ = found
    scores = [score]

    def attempt_shapes(mod, feeds: dict, label: str) -> bool:
        result = question(mod, feeds)
        steps.append(_step(label, result))
        progress(steps[-1])
        if result is not None and result.violated:
            scores.append(result.score)
        return result is not None and result.violated

    candidate, inputs = shrink_shapes(candidate, inputs, attempt_shapes,
                                      lambda: question.builds + 2 <= budget - VERIFY_BUILDS)
    score = scores[-1]
    verified = _verify(question, candidate, inputs, config, tol)
    return Reduction(candidate, inputs, operators_before, sum(is_operator(b) for b in main_bindings(candidate.mod)),
                     question.builds + verified.pop("oracle_builds"),
                     None if origin is None else bindings[origin].var.name, score, steps, verified)


def _grow_cone(bindings: list, sink: int, attempt, affordable: Callable[[], bool]):
    """The first cut toward ``sink`` that shows the violation: the cone of
    bindings up to depth 0, 1, 2 ... above it, then the whole model, while
    ``affordable()``; ``attempt(keep, label)`` tries one (None: it does not)."""
    found, depth, tried = None, 0, set()
    while found is None and affordable():
        cone = frozenset(upstream(bindings, sink, depth))
        if cone in tried:  # the cone stopped growing: the whole model is the last candidate
            cone = frozenset(range(len(bindings)))
            if cone in tried:
                break
        tried.add(cone)
        found = attempt(set(cone), f"cut at depth {depth}" if len(cone) < len(bindings) else "whole model")
        depth += 1
    return found


def _step(label: str, result: Optional[Answer]) -> str:
    """One line of a reduction's log: what was tried and what the question said."""
    if result is None:
        return f"{label}: untestable (build or run failed)"
    return f"{label}: score {result.score:.3g}, " + ("violates" if result.violated else "clean")


def _probe(question: PassQuestion, model, bindings: list, tensors: list, witness: dict, tol: Tolerance,
           steps: list) -> tuple:
    """(captured reference value per binding position or None, the origin's position or None)."""
    if not tensors:
        steps.append("probe: no tensor bindings")
        return None, None
    probe = cut(model.mod, range(len(bindings)), tensors)
    try:
        session = question.sessions(probe.mod)
        reference = session.run(session.reference, witness)
        optimized = session.run(session.built, witness)
    except (BuildError, RunFailure) as err:
        steps.append(f"probe: every binding as an output does not build or run ({err}); cutting blind")
        return None, None
    captured = dict(zip(tensors, reference))
    for k, ref, opt in zip(tensors, reference, optimized):
        if compare_output(0, ref, opt, tol.plain(), top_k=0).violated:
            steps.append(f"probe: the first binding that violates is {bindings[k].var.name} (the origin)")
            return captured, k
    steps.append("probe: no binding violates when every binding is an output; reducing toward the output")
    return captured, None


def _first_output(mod, bindings: list) -> Optional[int]:
    from tvm import relax

    position = {b.var: k for k, b in enumerate(bindings)}
    body = mod["main"].body.body
    returned = list(body.fields) if isinstance(body, relax.Tuple) else [body]
    for var in returned:
        k = position.get(var)
        while k is not None and not is_operator(bindings[k]):  # gv = lv: the binding it names
            value = bindings[k].value
            k = position.get(value) if isinstance(value, relax.Var) else None
        if k is not None and is_tensor(bindings[k].var):
            return k
    return None


def _drop(found: tuple, bindings: list, sink: int, attempt, question: PassQuestion, budget: int) -> tuple:
    """Leave out one more binding at a time, farthest from the sink first, while the budget lasts."""
    keep = found[3]
    for k in sorted(keep - {sink}):
        if question.builds + 2 > budget - VERIFY_BUILDS:
            break
        smaller = attempt(keep - {k}, f"without {bindings[k].var.name}")
        if smaller is not None:
            found, keep = smaller, smaller[3]
    return found


def _verify(question: PassQuestion, candidate: CutModule, inputs: dict, config: CompileConfig, tol: Tolerance) -> dict:
    from ...judge.float64 import Float64Build

    again = question(candidate.mod, inputs)
    verified = {"violates_with_pass": True, "reproduced_twice": bool(again is not None and again.violated),
                "clean_without_pass": None, "oracle_builds": 0}
    try:
        oracle = Float64Build(candidate.mod, [n for n, _ in candidate.inputs], local_target(config.target))
        verified["oracle_builds"] = 1
        truth = oracle.run(inputs)
        if again is not None:
            # the float64 truth at the repro's own dtypes: the tolerance is float32's
            truth = [t.astype(r.dtype) for t, r in zip(truth, again.reference)]
            verified["clean_without_pass"] = not compare_outputs(truth, again.reference, tol).violated
    except Exception:  # noqa: BLE001 - no float64 build of this repro: the flag stays None (unknown)
        pass
    return verified


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
