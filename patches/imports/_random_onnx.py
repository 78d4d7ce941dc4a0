"""A small seeded generator of random ONNX graphs (NNSmith-style) for the
clean corpus: 3 to 10 common operators over one (4, 16) input, each tensor
carrying an interval so every operator stays in its domain (``Log`` of
``|t| + 1``, ``Exp`` of a bounded value, a ``Div`` by ``|t| + 1``) and no
value grows past what float16 holds. No import defect is planted: TVM's
import of these graphs must be judged right.
"""

from __future__ import annotations

import numpy as np

from ._graph import INPUT, OnnxGraph

SHAPE = (4, 16)
RANGES = ((-2.0, 2.0), (0.0, 1.0), (-1.0, 1.0), (0.5, 3.0))
BIG = 30.0  # a tensor bounded beyond this is squashed (Tanh) before an operator that grows it


def random_graph(seed: int, dtype) -> tuple:
    """(ModelProto, low, high): graph ``seed`` in ``dtype`` and its input range."""
    rng = np.random.default_rng(seed)
    low, high = RANGES[seed % len(RANGES)]
    g = OnnxGraph(dtype)
    pool = [(INPUT, (low, high))]
    for _ in range(int(rng.integers(3, 11))):
        step = OPERATORS[int(rng.integers(len(OPERATORS)))]
        pool.append(step(g, pool, rng))
    outputs = [pool[-1][0]]
    if len(pool) > 3 and rng.random() < 0.5:
        outputs.append(pool[int(rng.integers(1, len(pool) - 1))][0])
    return g.model(SHAPE, outputs), low, high


def _pick(pool, rng):
    """A recent tensor more often than an old one."""
    k = len(pool) - 1 - min(int(rng.geometric(0.5)) - 1, len(pool) - 1)
    return pool[k]


def _bounded(g, tensor):
    name, (lo, hi) = tensor
    if max(abs(lo), abs(hi)) <= BIG:
        return tensor
    return g.node("Tanh", [name]), (-1.0, 1.0)


def _unary(op, interval, **attrs):
    def step(g, pool, rng):
        name, bounds = _pick(pool, rng)
        return g.node(op, [name], **attrs), interval(*bounds)
    return step


def _exp(g, pool, rng):
    name, (lo, hi) = _pick(pool, rng)
    if hi > 4.0 or lo < -20.0:
        name, (lo, hi) = g.node("Tanh", [name]), (-1.0, 1.0)
    return g.node("Exp", [name]), (float(np.exp(lo)), float(np.exp(hi)))


def _log(g, pool, rng):
    name, (lo, hi) = _pick(pool, rng)
    top = max(abs(lo), abs(hi)) + 1.0
    return g.node("Log", [g.node("Add", [g.node("Abs", [name]), g.const(1.0)])]), (0.0, float(np.log(top)))


def _sqrt(g, pool, rng):
    name, (lo, hi) = _pick(pool, rng)
    top = max(abs(lo), abs(hi)) + 0.1
    return g.node("Sqrt", [g.node("Add", [g.node("Abs", [name]), g.const(0.1)])]), (0.3, float(np.sqrt(top)))


def _binary(op):
    def step(g, pool, rng):
        (a, (alo, ahi)), (b, (blo, bhi)) = _bounded(g, _pick(pool, rng)), _bounded(g, _pick(pool, rng))
        corners = {"Add": [alo + blo, ahi + bhi], "Sub": [alo - bhi, ahi - blo], "Max": [max(alo, blo), max(ahi, bhi)],
                   "Min": [min(alo, blo), min(ahi, bhi)],
                   "Mul": [alo * blo, alo * bhi, ahi * blo, ahi * bhi]}[op]
        return g.node(op, [a, b]), (min(corners), max(corners))
    return step


def _div(g, pool, rng):
    (a, (lo, hi)), (b, _) = _bounded(g, _pick(pool, rng)), _pick(pool, rng)
    return g.node("Div", [a, g.node("Add", [g.node("Abs", [b]), g.const(1.0)])]), (min(lo, 0.0), max(hi, 0.0))


def _matmul(g, pool, rng):
    name, (lo, hi) = _bounded(g, _pick(pool, rng))
    weight = g.const(rng.uniform(-1.0, 1.0, (16, 16)) / 4.0)
    top = 4.0 * max(abs(lo), abs(hi))
    if rng.random() < 0.5:
        return g.node("MatMul", [name, weight]), (-top, top)
    bias = g.const(rng.uniform(-0.5, 0.5, (16,)))
    return g.node("Gemm", [name, weight, bias], transB=1), (-top - 0.5, top + 0.5)


def _centered(g, pool, rng):
    name, (lo, hi) = _pick(pool, rng)
    mean = g.node("ReduceMean", [name], axes=[1], keepdims=1)
    return g.node("Sub", [name, mean]), (lo - hi, hi - lo)


def _layernorm(g, pool, rng):
    name, _ = _pick(pool, rng)
    scale, bias = g.const(rng.uniform(0.5, 1.5, (16,))), g.const(rng.uniform(-0.2, 0.2, (16,)))
    return g.node("LayerNormalization", [name, scale, bias], axis=-1), (-6.0, 6.0)


def _floor(g, pool, rng):
    name, (lo, hi) = _bounded(g, _pick(pool, rng))
    return g.node("Floor", [g.node("Mul", [name, g.const(2.0)])]), (float(np.floor(2 * lo)), float(np.floor(2 * hi)))


def _where(g, pool, rng):
    (a, (alo, ahi)), (b, (blo, bhi)) = _pick(pool, rng), _pick(pool, rng)
    return g.node("Where", [g.node("Greater", [a, b]), a, b]), (min(alo, blo), max(ahi, bhi))


def _bool_round_trip(g, pool, rng):
    name, _ = _pick(pool, rng)
    flag = g.node("Cast", [g.node("Sub", [name, g.const(0.5)])], to=9)  # BOOL
    return g.node("Cast", [flag], to=int(g.elem)), (0.0, 1.0)


OPERATORS = (
    _unary("Relu", lambda lo, hi: (max(lo, 0.0), max(hi, 0.0))),
    _unary("LeakyRelu", lambda lo, hi: (min(lo, 0.1 * lo), hi), alpha=0.1),
    _unary("Tanh", lambda lo, hi: (-1.0, 1.0)),
    _unary("Sigmoid", lambda lo, hi: (0.0, 1.0)),
    _unary("Abs", lambda lo, hi: (0.0, max(abs(lo), abs(hi)))),
    _unary("Neg", lambda lo, hi: (-hi, -lo)),
    _unary("Sin", lambda lo, hi: (-1.0, 1.0)),
    _unary("Erf", lambda lo, hi: (-1.0, 1.0)),
    _unary("Softsign", lambda lo, hi: (-1.0, 1.0)),
    _unary("Softmax", lambda lo, hi: (0.0, 1.0), axis=-1),
    _exp, _log, _sqrt, _div, _matmul, _centered, _layernorm, _floor, _where, _bool_round_trip,
    _binary("Add"), _binary("Sub"), _binary("Mul"), _binary("Max"), _binary("Min"),
)
