"""Drawing a valid Graph: operands that fit each operator's shape rule and domain.

Generation grows a graph forward, NNSmith's way: pick an operator, find (or
make) operands its shape rule accepts, bring each operand into the operator's
valid domain (an ``abs(x) + c`` or a ``clip`` in front when its interval may
leave it), and keep the node only if the result's interval stays bounded.
Plain search is enough here: every rule has a concrete fallback (a fresh
constant or input of the right shape), so no constraint solver is needed.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .model_graph import Choices, Graph, Node
from ...judge.rangecheck.interval import Interval
from .ops import EXP_LIMIT, EXP_SAFE, POSITIVE, POSITIVE_MARGIN, known_spec

INPUT_RANGES = ((-1.0, 1.0), (0.0, 1.0), (-3.0, 3.0), (0.1, 2.0))
MAX_DIM = 6
MAX_ELEMENTS = 2048


class Builder:
    """The graph being drawn; every method returns a node index (or None: refused)."""

    def __init__(self, choices: Choices, batch_norm_training: bool = False):
        self.choices = choices
        self.batch_norm_training = batch_norm_training  # GeneratorConfig's
        self.nodes: list = []
        self.read: set = set()
        self._data = np.random.default_rng(choices.integer(0, 2**31 - 1))

    # -- leaves --------------------------------------------------------------

    def input(self, shape: tuple, interval: Optional[Interval] = None) -> int:
        interval = interval or Interval(*self.choices.choice(INPUT_RANGES))
        return self._add(Node("input", (), (), tuple(shape), interval))

    def const(self, shape: tuple, lo: float, hi: float) -> int:
        data = self._data.uniform(lo, hi, size=shape).astype("float32")
        return self._add(Node("const", (), (), tuple(shape), Interval(lo, hi), data=np.asarray(data, dtype="float32")))

    def weight(self, shape: tuple, fan_in: int) -> int:
        scale = 1.0 / math.sqrt(max(fan_in, 1))
        return self.const(shape, -scale, scale)

    def random_shape(self, rank: Optional[int] = None) -> tuple:
        rank = self.choices.integer(1, 4) if rank is None else rank
        return tuple(self.choices.integer(1, MAX_DIM) for _ in range(rank))

    # -- operators -----------------------------------------------------------

    def apply(self, op: str, args: tuple, attrs: Optional[dict] = None, shape: Optional[tuple] = None,
              live: bool = True) -> Optional[int]:
        """Node ``op(args)`` with result ``shape`` (default: the first operand's);
        None when its value interval is unbounded or it is too large."""
        attrs = attrs or {}
        shape = self.nodes[args[0]].shape if shape is None else tuple(shape)
        if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            return None
        op_spec = known_spec(op)
        intervals = [self.nodes[a].interval for a in args]
        shapes = [self.nodes[a].shape for a in args]
        try:
            interval = op_spec.value(intervals, attrs, shapes)
        except (ValueError, OverflowError, ZeroDivisionError):
            return None
        if not interval.bounded:
            return None
        self.read.update(args)
        return self._add(Node(op, tuple(args), tuple(sorted(attrs.items())), shape, interval, live=live))

    def operand(self, k: int, domain: Optional[str]) -> Optional[int]:
        """``k``, or ``k`` behind an adapter that keeps it in ``domain``."""
        value = self.nodes[k].interval
        if domain == POSITIVE and not value.positive(POSITIVE_MARGIN):
            magnitude = self.apply("abs", (k,))
            shift = self.const((), 0.1, 1.0)
            return None if magnitude is None else self.apply("add", (magnitude, shift), shape=self.nodes[k].shape)
        if domain == EXP_SAFE and value.hi > EXP_LIMIT:
            return self.apply("clip", (k,), {"min": max(value.lo, -EXP_LIMIT * 10), "max": EXP_LIMIT})
        return k

    def unary(self, op: str, k: int) -> Optional[int]:
        domain = known_spec(op).domain
        kept = self.operand(k, domain[0] if domain else None)
        return None if kept is None else self.apply(op, (kept,))

    def binary(self, op: str, a: int, b: Optional[int] = None) -> Optional[int]:
        """``op(a, b)``; ``b`` drawn when not given: a value of the same shape,
        a constant of a's shape or of its last dimension (a bias), a scalar, or a new input."""
        shape = self.nodes[a].shape
        if b is None:
            b = self._second_operand(op, shape)
        domain = known_spec(op).domain or (None, None)
        x, y = self.operand(a, domain[0]), self.operand(b, domain[1])
        if x is None or y is None:
            return None
        out = np.broadcast_shapes(self.nodes[x].shape, self.nodes[y].shape)
        return self.apply(op, (x, y), shape=out)

    def _second_operand(self, op: str, shape: tuple) -> int:
        same = [k for k, n in enumerate(self.nodes) if n.is_operator and n.shape == shape]
        kinds = ["const", "bias", "scalar", "input"] + (["value"] if same else [])
        kind = self.choices.choice(kinds)
        lo, hi = (0.5, 2.0) if op == "divide" else (-1.0, 1.0)
        if kind == "value":
            return self.choices.choice(same)
        if kind == "input":
            return self.input(shape)
        if kind == "bias" and shape:
            return self.const(shape[-1:], lo, hi)
        if kind == "scalar":
            return self.const((), lo, hi)
        return self.const(shape, lo, hi)

    def reduce(self, op: str, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if not shape:
            return None
        axis, keepdims = self.choices.integer(0, len(shape) - 1), self.choices.chance(0.5)
        out = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
        return self.apply(op, (k,), {"axis": axis, "keepdims": keepdims}, shape=out)

    def softmax(self, op: str, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if not shape:
            return None
        return self.apply(op, (k,), {"axis": self.choices.integer(-len(shape), -1)})

    def layer_norm(self, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if not shape:
            return None
        gamma, beta = self.const(shape[-1:], 0.5, 1.5), self.const(shape[-1:], -0.5, 0.5)
        return self.apply("nn.layer_norm", (k, gamma, beta))

    def matmul(self, k: int, rhs: Optional[int] = None, width: Optional[int] = None) -> Optional[int]:
        shape = self.nodes[k].shape
        if len(shape) < 2:
            return None
        fan_in = shape[-1]
        if rhs is None:
            rhs = self.weight((fan_in, width or self.choices.integer(1, 8)), fan_in)
        return self.apply("matmul", (k, rhs), {"fan_in": fan_in}, shape=shape[:-1] + self.nodes[rhs].shape[-1:])

    def conv2d(self, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if len(shape) != 4:
            return None
        n, c, h, w = shape
        padding = self.choices.integer(0, 1)
        kh, kw = self.choices.integer(1, min(3, h + 2 * padding)), self.choices.integer(1, min(3, w + 2 * padding))
        out_channels = self.choices.integer(1, MAX_DIM)
        weight = self.weight((out_channels, c, kh, kw), c * kh * kw)
        out = (n, out_channels, h + 2 * padding - kh + 1, w + 2 * padding - kw + 1)
        return self.apply("nn.conv2d", (k, weight), {"padding": padding, "fan_in": c * kh * kw}, shape=out)

    def batch_norm(self, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if len(shape) < 2:
            return None
        c = (shape[1],)
        params = (self.const(c, 0.5, 1.5), self.const(c, -0.5, 0.5), self.const(c, -0.5, 0.5), self.const(c, 0.5, 1.5))
        return self.apply("nn.batch_norm", (k, *params), {"training": self.batch_norm_training})

    def permute(self, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if len(shape) < 2:
            return None
        axes = list(range(len(shape)))
        i = self.choices.integer(0, len(shape) - 2)
        axes[i], axes[i + 1] = axes[i + 1], axes[i]
        return self.apply("permute_dims", (k,), {"axes": tuple(axes)}, shape=tuple(shape[a] for a in axes))

    def reshape(self, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if len(shape) < 2:
            return self.apply("reshape", (k,), {"shape": (1,) + shape}, shape=(1,) + shape)
        i = self.choices.integer(0, len(shape) - 2)
        out = shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:]
        return self.apply("reshape", (k,), {"shape": out}, shape=out)

    def concat(self, k: int) -> Optional[int]:
        shape = self.nodes[k].shape
        if not shape:
            return None
        axis = self.choices.integer(0, len(shape) - 1)
        fits = [j for j, n in enumerate(self.nodes) if n.is_operator and len(n.shape) == len(shape)
                and all(d == e for i, (d, e) in enumerate(zip(n.shape, shape)) if i != axis)]
        other = self.choices.choice(fits) if fits else k
        out = shape[:axis] + (shape[axis] + self.nodes[other].shape[axis],) + shape[axis + 1:]
        return self.apply("concat", (k, other), {"axis": axis}, shape=out)

    def power(self, k: int) -> Optional[int]:
        kept = self.operand(k, POSITIVE)
        if kept is None:
            return None
        return self.apply("power", (kept,), {"exponent": self.choices.choice((2.0, 0.5, -1.0))})

    def op(self, name: str, k: int) -> Optional[int]:
        """Apply operator ``name`` to node ``k``, drawing what else it needs."""
        kind = known_spec(name).kind
        if kind == "unary":
            return self.unary(name, k)
        if kind == "binary":
            return self.binary(name, k)
        if kind in ("reduce", "softmax"):
            return getattr(self, kind)(name, k)
        return getattr(self, kind)(k)

    # -- the result ----------------------------------------------------------

    def focus(self) -> int:
        """A value to grow from: mostly one of the newest (depth), sometimes any."""
        values = [k for k, n in enumerate(self.nodes) if n.op != "const"]
        recent = values[-3:]
        return self.choices.choice(recent if self.choices.chance(0.7) else values)

    def graph(self) -> Graph:
        outputs = tuple(k for k, n in enumerate(self.nodes) if n.is_operator and n.live and k not in self.read)
        return Graph(tuple(self.nodes), outputs)

    def _add(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1
