"""Which node of the model TVM's import gets wrong.

The framework runs the model with every intermediate value kept (ONNX Runtime
with each node output made a graph output; PyTorch node by node through FX),
TVM runs its imported ``main`` legalized and built plainly with every kernel's
output captured (``capture/``), and the two meet through the frontend's own
tables (``provenance.py``: a binding's ``key`` is its ONNX tensor or FX node).
The first value in the framework's execution order whose TVM counterpart
differs beyond the tolerance (or in shape) is the origin: values after it
inherit its error.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

import numpy as np
import tvm

from ...build.capture import CaptureError, capture_values, value_graph
from ...build.capture.kernels import with_views
from ...base.errors import summarize_error
from ..framework import FrameworkError
from ...build.compile import compile_plain, legalized
from ...base.compare import compare_output
from .agreement import element_at
from ...base.tolerance import Tolerance
from ...ir.targets import target_of
from .judgement import ImportOrigin


# operators whose result jumps where their input crosses a threshold: a difference
# within the tolerance upstream may flip them (flips.py asks for the proof)
DISCONTINUOUS = frozenset({
    "relax.ceil", "relax.floor", "relax.round", "relax.sign", "relax.equal", "relax.not_equal", "relax.less",
    "relax.less_equal", "relax.greater", "relax.greater_equal", "relax.argmax", "relax.argmin",
    "relax.isnan", "relax.isinf", "relax.isfinite", "relax.trunc",
})


def is_discontinuous(op, dtype) -> bool:
    """A discontinuous operator, or a cast to an integer or bool (``dtype``: the value's)."""
    return op in DISCONTINUOUS or (op == "relax.astype" and np.dtype(dtype).kind in "iub")


@dataclasses.dataclass(frozen=True)
class TVMRun:
    """TVM's import of the model legalized (``legal``: every operator a kernel
    call, binding names kept), built plainly and run once on the witness:
    ``captured``, each kernel's own output by its binding's name (and the
    inputs), and ``values``, every binding's value with casts and aliases
    given their argument's value (a cast to bool is no float)."""

    legal: tvm.IRModule
    captured: dict
    values: dict


def tvm_run(model, witness: Mapping[str, np.ndarray], target, kernels=None) -> TVMRun:
    """The imported main legalized, built plainly and run on ``witness`` with every kernel captured
    (``kernels``: a KernelCache its machine code is taken from and kept in)."""
    target = target_of(target)
    legal = legalized(model.mod, target)
    graph = value_graph(legal, model.mod)
    build = compile_plain(legal, target, kernels)
    if not build.ok:
        raise CaptureError(f"the imported module does not build on its own: {build.error}")
    # a view no kernel computes (a reshape the build made a view of its argument) has its argument's elements
    captured = with_views(graph, capture_values(build.executable, build.device, graph, model.input_names(), witness))
    out = {}
    for name in graph.order:
        if graph.canon(name) in captured:
            value = np.asarray(captured[graph.canon(name)])
            dtype = graph.nodes[name].dtype
            out[name] = value.astype(dtype) if dtype and dtype != str(value.dtype) and dtype != "bfloat16" else value
    return TVMRun(legal, captured, out)


def tvm_values(model, witness: Mapping[str, np.ndarray], target) -> dict:
    """{binding name of the imported main: its value on the witness} for every
    binding a kernel computes, and the inputs."""
    return tvm_run(model, witness, target).values


def named_bindings(model) -> dict:
    """{the model's name of a value: (binding of main, its Provenance)}, a value's own binding first."""
    named: dict = {}
    for name, provenance in model.provenance.items():  # main's order: a value's own binding before its aliases
        if provenance.key and not provenance.inside:
            named.setdefault(provenance.key, (name, provenance))
    return named


class Located:
    """What localizing met: the model's values (``expected``) and TVM's
    (``computed``) on the witness, or ``error`` where either could not be had."""

    def __init__(self, model, framework, witness, target, expected: Optional[dict] = None, kernels=None):
        self.model, self.framework, self.witness, self.target = model, framework, witness, target
        self.named = named_bindings(model)
        self.history = _model_history(framework, witness)
        self.expected: dict = {}
        self.computed: dict = {}
        self.run: Optional[TVMRun] = None
        self.error = None if self.named else "the model's frontend kept no names for its values"
        if self.error is None:
            try:
                self.expected = framework.values(witness) if expected is None else expected
                self.run = tvm_run(model, witness, target, kernels)
                self.computed = self.run.values
            except (FrameworkError, CaptureError) as err:
                self.error = str(err)
            except Exception as err:  # TVM raises many types; naming the node is a help
                self.error = summarize_error(err)

    def of(self, mod, kernels=None) -> "Located":
        """The same witness and framework values, with TVM's values computed by
        ``mod`` (the imported main with some bindings kept in float32; the
        bindings keep their names, and the tolerance its history); ``kernels``: a
        KernelCache shared by such modules, which differ from each other in a few kernels."""
        located = Located(dataclasses.replace(self.model, mod=mod), self.framework, self.witness, self.target,
                          self.expected, kernels)
        located.named = self.named
        return located

    def tvm_value(self, key: str):
        """TVM's value of the model's value ``key`` (None: TVM has no counterpart)."""
        name, _ = self.named.get(self.held_as(key), (None, None))
        return None if name is None else self.computed.get(name)

    def held_as(self, key: str) -> str:
        """The model's value under whose name TVM holds ``key``: ``key`` itself, or, where
        TVM's import has no binding of its own for it, the argument of an identity the
        frontend left out (torch's ``clone`` after an ``expand``, ONNX ``Identity``: the
        converter returns its argument's Relax value, so the table names that value once,
        by the first node), followed while the framework's node has one argument and
        computes exactly that argument's value on the witness."""
        seen = set()
        while key not in self.named and key not in self.witness and key not in seen:
            seen.add(key)
            try:
                args = self.framework.node_arguments(key)
            except Exception:  # noqa: BLE001 - no such node (an input, a weight): TVM holds nothing else
                return key
            if len(args) != 1 or not _same(self.expected.get(key), self.expected.get(args[0])):
                return key
            key = args[0]
        return key

    def is_discontinuous(self, key: str) -> bool:
        """Whether the model's value ``key`` comes from a discontinuous operator (a flip's business)."""
        _, provenance = self.named.get(key, (None, None))
        value = self.expected.get(key)
        return provenance is not None and value is not None and is_discontinuous(provenance.op,
                                                                                 np.asarray(value).dtype)

    def tolerance_of(self, key: str, tol: Tolerance) -> Tolerance:
        """``tol`` at the precision of the narrowest float arithmetic ``key``'s value
        passed through in the model itself (not in TVM's import of it)."""
        return tol.through([self.history.get(key)])


def _same(a, b) -> bool:
    if a is None or b is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def _model_history(framework, witness) -> dict:
    """{the model's value name: the narrowest float the model computes it in}; {} where unknown
    (each value then at its own dtype's tolerance, the strict choice)."""
    try:
        return framework.float_history(witness)[0]
    except Exception:  # noqa: BLE001 - a help, not a requirement
        return {}


def origin_at(located: Located, key: str, tol: Tolerance, expected: Optional[Mapping] = None) -> Optional[ImportOrigin]:
    """The model's value ``key`` as an ImportOrigin where TVM's differs from
    ``expected``'s (default: the framework's) beyond ``tol``; else None."""
    expected = located.expected if expected is None else expected
    name, provenance = located.named.get(key, (None, None))
    if name not in located.computed or key not in expected:  # no TVM value to compare (a view a widened build lost)
        return None
    mine, theirs = np.asarray(located.computed[name]), np.asarray(expected[key])
    metrics = compare_output(0, theirs, mine, tol, top_k=1)
    if not metrics.violated:
        return None
    worst = element_at(metrics.worst[0]["index"] if metrics.worst else None, theirs, mine)
    return ImportOrigin(provenance.label, key, provenance.op, list(mine.shape), list(theirs.shape), metrics.score,
                        metrics.max_abs, worst, binding=name,
                        discontinuous=is_discontinuous(provenance.op, theirs.dtype))


def folded_origin(located: Located, key: str, tol: Tolerance,
                  expected: Optional[Mapping] = None) -> Optional[ImportOrigin]:
    """The model's value ``key``, which TVM's frontend folded into a constant at import, as an
    ImportOrigin where the constant differs from ``expected``'s (default: the framework's) value."""
    expected = located.expected if expected is None else expected
    folded = located.model.folded[key]
    mine, theirs = np.asarray(folded.value), np.asarray(expected[key])
    metrics = compare_output(0, theirs, mine, tol, top_k=1)
    if not metrics.violated:
        return None
    worst = element_at(metrics.worst[0]["index"] if metrics.worst else None, theirs, mine)
    return ImportOrigin(folded.label, key, "a constant folded at import", list(mine.shape), list(theirs.shape),
                        metrics.score, metrics.max_abs, worst)


def first_difference(located: Located, expected: Mapping, tol: Tolerance, skip: frozenset = frozenset()) -> tuple:
    """(ImportOrigin or None, why none was named): the first of ``expected``
    (the framework's values, in its order) whose TVM counterpart differs;
    ``skip``: TVM bindings not asked (kept in float32 on purpose: they differ
    from a framework that computes them in float16 too)."""
    if located.error is not None:
        return None, located.error
    compared = 0
    for key in expected:
        name, _ = located.named.get(key, (None, None))
        if name is None and key in located.model.folded:  # a value the frontend folded at import
            compared += 1
            origin = folded_origin(located, key, located.tolerance_of(key, tol), expected)
            if origin is not None:
                return origin, None
            continue
        if name is None or name not in located.computed or name in skip:
            continue
        compared += 1
        # each value at the precision of the narrowest float arithmetic it passed through
        origin = origin_at(located, key, located.tolerance_of(key, tol), expected)
        if origin is not None:
            return origin, None
    if not compared:
        return None, "no value of the model could be paired with one TVM computes"
    return None, (f"none of the {compared} values both compute differs beyond the tolerance on the witness "
                  "(the difference is below it at every node, and adds up)")


__all__ = ["DISCONTINUOUS", "Located", "first_difference", "folded_origin", "is_discontinuous", "named_bindings",
           "origin_at", "tvm_values"]
