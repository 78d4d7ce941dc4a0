"""Patterns that stock passes rewrite: what ``--target-pass`` favours.

A motif grows the graph from node ``k`` with a few nodes that a pass is known
to rewrite (measured on TVM 0.27: CombineParallelMatmul fires only when the
weights are function parameters, so its motif makes them inputs). A target
that is no pass name here may be a comma list of operator names
(``exp,divide``): the motif then applies one of them.
"""

from __future__ import annotations

from typing import Callable, Optional

from ...base.errors import UsageError
from .builder import Builder
from ...judge.rangecheck.interval import Interval
from .ops import SPECS


def _rank_at_least(b: Builder, k: int, rank: int, exact: bool = False) -> int:
    """``k`` if its rank fits, else a new input that does."""
    shape = b.nodes[k].shape
    if len(shape) == rank or (not exact and len(shape) >= rank):
        return k
    return b.input(b.random_shape(rank))


def conv_batch_norm(b: Builder, k: int) -> Optional[int]:
    conv = b.conv2d(_rank_at_least(b, k, 4, exact=True))
    return None if conv is None else b.batch_norm(conv)


def matmul_chain(b: Builder, k: int) -> Optional[int]:
    first = b.matmul(_rank_at_least(b, k, 2), width=b.choices.choice((16, 8, 12)))
    return None if first is None else b.matmul(first, width=b.choices.choice((1, 2, 3)))


def matmul_of_sum(b: Builder, k: int) -> Optional[int]:
    x = _rank_at_least(b, k, 2)
    fan_in, width = b.nodes[x].shape[-1], b.choices.integer(1, 8)
    total = b.apply("add", (b.weight((fan_in, width), fan_in), b.weight((fan_in, width), fan_in)))
    return None if total is None else b.matmul(x, rhs=total)


def parallel_matmul(b: Builder, k: int) -> Optional[int]:
    x = _rank_at_least(b, k, 2)
    fan_in = b.nodes[x].shape[-1]
    last = None
    for _ in range(b.choices.integer(2, 3)):
        weight = b.input((fan_in, b.choices.integer(1, 8)), Interval(-0.5, 0.5))
        last = b.matmul(x, rhs=weight) or last
    return last


def constant_subexpression(b: Builder, k: int) -> Optional[int]:
    shape = b.nodes[k].shape
    folded = b.apply(b.choices.choice(("multiply", "add", "subtract")), (b.const(shape, -1, 1), b.const(shape, -1, 1)))
    return None if folded is None else b.binary("add", k, folded)


def fast_math(b: Builder, k: int) -> Optional[int]:
    name = b.choices.choice(("exp", "tanh", "erf", "nn.softmax"))
    return b.op(name, k)


def common_subexpression(b: Builder, k: int) -> Optional[int]:
    name = b.choices.choice(("tanh", "sigmoid", "abs", "square"))
    first, second = b.unary(name, k), b.unary(name, k)
    return None if first is None or second is None else b.binary("add", first, second)


def dead_value(b: Builder, k: int) -> Optional[int]:
    b.apply(b.choices.choice(("tanh", "negative", "abs")), (k,), live=False)
    return k


def batch_norm(b: Builder, k: int) -> Optional[int]:
    # DecomposeOpsForInference rewrites batch_norm (measured: not layer_norm or variance)
    return b.batch_norm(_rank_at_least(b, k, 2))


def dot(b: Builder, k: int) -> Optional[int]:
    return b.op(b.choices.choice(("matmul", "nn.conv2d")), _rank_at_least(b, k, 4, exact=True))


MOTIFS = {
    "FoldBatchnormToConv2D": conv_batch_norm,
    "AdjustMatmulOrder": matmul_chain,
    "ExpandMatmulOfSum": matmul_of_sum,
    "CombineParallelMatmul": parallel_matmul,
    "FoldConstant": constant_subexpression,
    "FastMathTransform": fast_math,
    "EliminateCommonSubexpr": common_subexpression,
    "DeadCodeElimination": dead_value,
    "DecomposeOpsForInference": batch_norm,
    "ToMixedPrecision": dot,
}


def motif_for(target: Optional[str]) -> Optional[Callable]:
    """The motif of a pass name, or one that applies the listed operators; UsageError otherwise."""
    if not target:
        return None
    if target in MOTIFS:
        return MOTIFS[target]
    names = [n.strip() for n in target.split(",") if n.strip()]
    unknown = [n for n in names if n not in SPECS]
    if not names or unknown:
        raise UsageError(f"the target pass '{target}' is not a pass with a known pattern ({', '.join(MOTIFS)}) "
                         f"nor a list of operators ({', '.join(SPECS)})")
    return lambda b, k: b.op(b.choices.choice(names), k)
