"""A generated model as a small graph of Nodes, and the choices that draw it.

``Graph`` is pure data (no TVM): nodes in topological order, each with its
shape and value interval, and the outputs. ``Graph.to_irmodule()`` writes it as
a Relax ``main``; ``Graph.ranges()`` gives each input's range. ``Choices`` is
where every random decision comes from: ``RandomChoices`` (a seeded numpy
generator) for ``numguard regress --random``, or a hypothesis ``draw``
(strategy.py), so that hypothesis can shrink a model by shrinking its choices.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Protocol, Sequence

import numpy as np

from ...judge.rangecheck.interval import Interval
from .ops import known_spec


class Choices(Protocol):
    """The random decisions of one generation."""

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high]."""

    def choice(self, options: Sequence):
        """One of ``options`` (the first is the simplest: hypothesis shrinks toward it)."""

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""


class RandomChoices:
    """Choices from a seeded numpy generator: the same seed, the same model."""

    def __init__(self, seed: int):
        self._rng = np.random.default_rng(seed)

    def integer(self, low: int, high: int) -> int:
        return int(self._rng.integers(low, high + 1))

    def choice(self, options: Sequence):
        return options[int(self._rng.integers(0, len(options)))]

    def chance(self, p: float) -> bool:
        return bool(self._rng.random() < p)


@dataclasses.dataclass(frozen=True)
class Node:
    """``op``: "input", "const" or an OpSpec name; ``args``: indices of earlier
    nodes; ``attrs``: sorted (name, value) pairs; ``data``: a constant's value."""

    op: str
    args: tuple
    attrs: tuple
    shape: tuple
    interval: Interval
    data: Optional[np.ndarray] = dataclasses.field(default=None, compare=False, repr=False)
    live: bool = True  # False: nothing reads it and it is no output (dead code, on purpose)

    @property
    def is_operator(self) -> bool:
        return self.op not in ("input", "const")

    def attr(self, name: str):
        return dict(self.attrs)[name]


@dataclasses.dataclass(frozen=True)
class Graph:
    nodes: tuple
    outputs: tuple

    def input_names(self) -> list:
        return [f"x{k}" for k, _ in enumerate(n for n in self.nodes if n.op == "input")]

    def ranges(self) -> dict:
        """Each input's name -> (low, high): the range the graph is valid in."""
        inputs = [n for n in self.nodes if n.op == "input"]
        return {name: (n.interval.lo, n.interval.hi) for name, n in zip(self.input_names(), inputs)}

    def operators(self) -> list:
        return [n.op for n in self.nodes if n.is_operator]

    def to_irmodule(self):
        """The Relax IRModule of this graph (``main`` takes the inputs in order)."""
        from tvm import relax

        names = iter(self.input_names())
        params, values = [], {}
        for k, node in enumerate(self.nodes):
            if node.op == "input":
                params.append(relax.Var(next(names), relax.TensorType(list(node.shape), "float32")))
                values[k] = params[-1]
        builder = relax.BlockBuilder()
        with builder.function("main", params):
            with builder.dataflow():
                for k, node in enumerate(self.nodes):
                    if node.op == "const":
                        values[k] = relax.const(node.data)
                    elif node.is_operator:
                        values[k] = builder.emit(known_spec(node.op).make([values[a] for a in node.args],
                                                                          dict(node.attrs)))
                outs = [values[k] for k in self.outputs]
                result = builder.emit_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
            builder.emit_func_output(result)
        return builder.get()

    def describe(self) -> str:
        """One line per node, for a report or a failing test."""
        lines = []
        for k, n in enumerate(self.nodes):
            args = ", ".join(f"%{a}" for a in n.args)
            attrs = "".join(f", {key}={value}" for key, value in n.attrs)
            lines.append(f"%{k} = {n.op}({args}{attrs}) : {list(n.shape)} in [{n.interval.lo:.3g}, {n.interval.hi:.3g}]"
                         + ("" if n.live else "  (dead)"))
        return "\n".join(lines + [f"outputs: {', '.join(f'%{k}' for k in self.outputs)}"])
