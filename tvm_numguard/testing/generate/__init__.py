"""Random valid Relax models for regression-testing passes (NNSmith's manner).

``generate(seed, index, config)`` draws model ``index`` of the stream ``seed``
(the same pair gives the same model, in any process), as a ``Graph``: its
``to_irmodule()`` is the model, its ``ranges()`` the input ranges in which its
float32 reference is finite by construction (interval arithmetic keeps every
operand in its operator's valid domain). ``GeneratorConfig.target`` favours the
patterns a pass rewrites (motifs.py). ``strategy.relax_graphs`` is the same
generator as a hypothesis strategy (the ``hypothesis`` extra), for shrinking.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ...base.errors import UsageError
from .builder import Builder
from .model_graph import Choices, Graph, Node, RandomChoices
from .motifs import MOTIFS, motif_for
from .ops import SPECS, continuous_ops

__all__ = ["GeneratorConfig", "Graph", "Node", "Choices", "RandomChoices", "generate", "draw_graph", "MOTIFS",
           "model_seed"]


@dataclasses.dataclass(frozen=True)
class GeneratorConfig:
    """``min_ops``..``max_ops`` operators per model (adapters included);
    ``discontinuous``: also round, floor, sign, compares and int casts;
    ``target``: a pass name of ``MOTIFS`` or a comma list of operator names;
    ``batch_norm_training``: batch norms in training mode (normalized by the
    batch's own statistics). Off by default: imported models are in inference
    mode (the ONNX and torch importers set ``training=False``), and TVM's
    inference passes (DecomposeOpsForInference, FoldBatchnormToConv2D) treat
    every batch norm as inference mode by design."""

    min_ops: int = 2
    max_ops: int = 8
    discontinuous: bool = False
    target: Optional[str] = None
    batch_norm_training: bool = False

    def validate(self) -> "GeneratorConfig":
        if not 1 <= self.min_ops <= self.max_ops:
            raise UsageError(f"the generator needs 1 <= min_ops <= max_ops, got {self.min_ops}..{self.max_ops}")
        motif_for(self.target)
        return self


def model_seed(seed: int, index: int) -> int:
    """The seed of model ``index`` in stream ``seed`` (independent streams, stable across numpy versions)."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def generate(seed: int, index: int = 0, config: GeneratorConfig = GeneratorConfig()) -> Graph:
    return draw_graph(RandomChoices(model_seed(seed, index)), config)


def draw_graph(choices: Choices, config: GeneratorConfig = GeneratorConfig()) -> Graph:
    """A valid graph from ``choices``: see the module docstring."""
    motif = motif_for(config.target)
    names = continuous_ops() + ([n for n, s in SPECS.items() if s.discontinuous] if config.discontinuous else [])
    builder = Builder(choices, config.batch_norm_training)
    builder.input(builder.random_shape(choices.choice((4, 2, 3, 1))))
    wanted = choices.integer(config.min_ops, config.max_ops)
    for attempt in range(4 * config.max_ops):
        operators = sum(n.is_operator for n in builder.nodes)
        if operators >= wanted:
            break
        k = builder.focus()
        if motif is not None and (attempt == 0 or choices.chance(0.5)):
            motif(builder, k)
        else:
            builder.op(choices.choice(names), k)
    if not builder.graph().outputs:
        builder.unary("tanh", 0)
    return _reachable(builder.graph())


def _reachable(graph: Graph) -> Graph:
    """The graph without nodes no output reads (an input or constant a refused step left behind)."""
    keep = set()
    stack = list(graph.outputs) + [k for k, n in enumerate(graph.nodes) if not n.live]
    while stack:
        k = stack.pop()
        if k not in keep:
            keep.add(k)
            stack.extend(graph.nodes[k].args)
    order = sorted(keep)
    index = {old: new for new, old in enumerate(order)}
    nodes = tuple(dataclasses.replace(graph.nodes[k], args=tuple(index[a] for a in graph.nodes[k].args)) for k in order)
    return Graph(nodes, tuple(index[k] for k in graph.outputs))
