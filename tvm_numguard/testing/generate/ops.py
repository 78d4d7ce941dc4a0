"""Operator specs of the random model generator, in NNSmith's manner.

An ``OpSpec`` says, for one Relax operator: how its operands are chosen
(``kind``: the shape rule, builder.py), the valid domain of each operand
(``domain``: the generator adapts an operand that may leave it), how the value
interval of the result follows from the operands' (``value``), and how it is
written in Relax (``make``). ``discontinuous`` operators (round, floor, compare,
casts to int) make tiny differences into large ones and are off by default.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

from ...judge.rangecheck.interval import UNIT, Interval

# domains an operand must stay in; builder.py brings an operand into one with an adapter
POSITIVE = "positive"  # >= POSITIVE_MARGIN: log, rsqrt, divisor, power base
EXP_SAFE = "exp-safe"  # <= EXP_LIMIT: exp stays far from float32 overflow
POSITIVE_MARGIN = 0.05
EXP_LIMIT = 8.0

# operand rules (builder.py): how a spec's operands and attributes are drawn
KINDS = ("unary", "binary", "reduce", "softmax", "layer_norm", "matmul", "conv2d", "batch_norm",
         "permute", "reshape", "concat", "power")


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """One operator. ``make(args, attrs)`` -> a Relax expression of relax Vars
    ``args``; ``value(intervals, attrs, shapes)`` -> the result's Interval."""

    name: str
    kind: str
    make: Callable
    value: Callable
    domain: tuple = ()  # per operand: None or POSITIVE / EXP_SAFE
    discontinuous: bool = False


def _relax():
    from tvm import relax

    return relax


def _unary(op_name: str) -> Callable:
    def make(args, attrs):
        relax = _relax()
        namespace = relax.op.nn if op_name.startswith("nn.") else relax.op
        return getattr(namespace, op_name.split(".")[-1])(args[0])

    return make


def _binary(op_name: str) -> Callable:
    return lambda args, attrs: getattr(_relax().op, op_name)(args[0], args[1])


def _gelu_like(floor: float) -> Callable:
    return lambda v, a, s: Interval(floor if v[0].lo < 0 else 0.0, max(v[0].hi, 0.0))


def _reduce(op_name: str) -> Callable:
    return lambda args, attrs: getattr(_relax().op, op_name)(args[0], axis=[attrs["axis"]], keepdims=attrs["keepdims"])


def _reduced_size(shapes, attrs) -> int:
    return shapes[0][attrs["axis"]]


def _log_softmax_value(v, attrs, shapes) -> Interval:
    n = shapes[0][attrs["axis"]]
    return Interval(v[0].lo - v[0].hi - math.log(n), 0.0)


def _layer_norm_value(v, attrs, shapes) -> Interval:
    bound = math.sqrt(shapes[0][-1]) * 1.5 + 0.5  # |normalized| <= sqrt(n); gamma <= 1.5, |beta| <= 0.5
    return Interval(-bound, bound)


def _dot_value(v, attrs, shapes) -> Interval:
    bound = attrs["fan_in"] * v[0].magnitude * v[1].magnitude
    return Interval(-bound, bound)


def _batch_norm_value(v, attrs, shapes) -> Interval:
    # mean in [-0.5, 0.5], var in [0.5, 1.5], gamma in [0.5, 1.5], beta in [-0.5, 0.5] (builder.py)
    bound = (v[0].magnitude + 0.5) * 1.5 / math.sqrt(0.5) + 0.5
    return Interval(-bound, bound)


def _power_value(v, attrs, shapes) -> Interval:
    e = attrs["exponent"]
    lo, hi = v[0].lo ** e, v[0].hi ** e
    return Interval(min(lo, hi), max(lo, hi))


def _make_power(args, attrs):
    relax = _relax()
    import numpy as np

    return relax.op.power(args[0], relax.const(np.float32(attrs["exponent"])))


def _make_softmax(op_name):
    return lambda args, attrs: getattr(_relax().op.nn, op_name)(args[0], axis=attrs["axis"])


def _make_layer_norm(args, attrs):
    return _relax().op.nn.layer_norm(args[0], args[1], args[2], axes=[-1])


def _make_conv2d(args, attrs):
    return _relax().op.nn.conv2d(args[0], args[1], padding=attrs["padding"])


def _make_batch_norm(args, attrs):
    relax = _relax()
    # Relax's own default is training=True; imported models are in inference mode
    return relax.TupleGetItem(relax.op.nn.batch_norm(*args, axis=1, training=attrs.get("training", False)), 0)


def _make_clip(args, attrs):
    return _relax().op.clip(args[0], attrs["min"], attrs["max"])


def _make_cast_round_trip(args, attrs):
    relax = _relax()
    return relax.op.astype(relax.op.astype(args[0], "int32"), "float32")


def _make_greater(args, attrs):
    relax = _relax()
    return relax.op.astype(relax.op.greater(args[0], args[1]), "float32")


def _floor_ceil(v, a, s) -> Interval:
    return Interval(math.floor(v[0].lo), math.ceil(v[0].hi))


SPECS = {spec.name: spec for spec in (
    OpSpec("exp", "unary", _unary("exp"), lambda v, a, s: v[0].monotone(math.exp), (EXP_SAFE,)),
    OpSpec("log", "unary", _unary("log"), lambda v, a, s: v[0].monotone(math.log), (POSITIVE,)),
    OpSpec("sqrt", "unary", _unary("sqrt"), lambda v, a, s: v[0].monotone(math.sqrt), (POSITIVE,)),
    OpSpec("rsqrt", "unary", _unary("rsqrt"), lambda v, a, s: Interval(v[0].hi ** -0.5, v[0].lo ** -0.5), (POSITIVE,)),
    OpSpec("tanh", "unary", _unary("tanh"), lambda v, a, s: v[0].monotone(math.tanh)),
    OpSpec("sigmoid", "unary", _unary("sigmoid"), lambda v, a, s: v[0].monotone(lambda x: 1 / (1 + math.exp(-x)))),
    OpSpec("erf", "unary", _unary("erf"), lambda v, a, s: v[0].monotone(math.erf)),
    OpSpec("sin", "unary", _unary("sin"), lambda v, a, s: UNIT),
    OpSpec("cos", "unary", _unary("cos"), lambda v, a, s: UNIT),
    OpSpec("abs", "unary", _unary("abs"), lambda v, a, s: v[0].abs()),
    OpSpec("negative", "unary", _unary("negative"), lambda v, a, s: -v[0]),
    OpSpec("square", "unary", _unary("square"), lambda v, a, s: v[0].square()),
    OpSpec("nn.relu", "unary", _unary("nn.relu"), lambda v, a, s: Interval(max(v[0].lo, 0.0), max(v[0].hi, 0.0))),
    OpSpec("nn.gelu", "unary", _unary("nn.gelu"), _gelu_like(-0.17)),
    OpSpec("nn.silu", "unary", _unary("nn.silu"), _gelu_like(-0.28)),
    OpSpec("add", "binary", _binary("add"), lambda v, a, s: v[0] + v[1]),
    OpSpec("subtract", "binary", _binary("subtract"), lambda v, a, s: v[0] - v[1]),
    OpSpec("multiply", "binary", _binary("multiply"), lambda v, a, s: v[0] * v[1]),
    OpSpec("divide", "binary", _binary("divide"), lambda v, a, s: v[0] * v[1].reciprocal(), (None, POSITIVE)),
    OpSpec("maximum", "binary", _binary("maximum"), lambda v, a, s: v[0].maximum(v[1])),
    OpSpec("minimum", "binary", _binary("minimum"), lambda v, a, s: v[0].minimum(v[1])),
    OpSpec("power", "power", _make_power, _power_value, (POSITIVE,)),
    OpSpec("sum", "reduce", _reduce("sum"), lambda v, a, s: v[0].scale(_reduced_size(s, a))),
    OpSpec("mean", "reduce", _reduce("mean"), lambda v, a, s: v[0]),
    OpSpec("max", "reduce", _reduce("max"), lambda v, a, s: v[0]),
    OpSpec("variance", "reduce", _reduce("variance"), lambda v, a, s: Interval(0.0, (v[0].hi - v[0].lo) ** 2)),
    OpSpec("nn.softmax", "softmax", _make_softmax("softmax"), lambda v, a, s: Interval(0.0, 1.0)),
    OpSpec("nn.log_softmax", "softmax", _make_softmax("log_softmax"), _log_softmax_value),
    OpSpec("nn.layer_norm", "layer_norm", _make_layer_norm, _layer_norm_value),
    OpSpec("matmul", "matmul", _binary("matmul"), _dot_value),
    OpSpec("nn.conv2d", "conv2d", _make_conv2d, _dot_value),
    OpSpec("nn.batch_norm", "batch_norm", _make_batch_norm, _batch_norm_value),
    OpSpec("permute_dims", "permute", lambda args, a: _relax().op.permute_dims(args[0], a["axes"]),
           lambda v, a, s: v[0]),
    OpSpec("reshape", "reshape", lambda args, a: _relax().op.reshape(args[0], a["shape"]), lambda v, a, s: v[0]),
    OpSpec("concat", "concat", lambda args, a: _relax().op.concat(list(args), axis=a["axis"]),
           lambda v, a, s: v[0].hull(v[1])),
    OpSpec("round", "unary", _unary("round"), _floor_ceil, discontinuous=True),
    OpSpec("floor", "unary", _unary("floor"), _floor_ceil, discontinuous=True),
    OpSpec("sign", "unary", _unary("sign"), lambda v, a, s: UNIT, discontinuous=True),
    OpSpec("cast-int", "unary", _make_cast_round_trip, _floor_ceil, discontinuous=True),
    OpSpec("greater", "binary", _make_greater, lambda v, a, s: Interval(0.0, 1.0), discontinuous=True),
)}

# the adapters builder.py puts in front of an operand that may leave its domain
CLIP = OpSpec("clip", "unary", _make_clip, lambda v, a, s: Interval(max(v[0].lo, a["min"]), min(v[0].hi, a["max"])))


def spec(name: str) -> Optional[OpSpec]:
    return SPECS.get(name) or (CLIP if name == "clip" else None)


def known_spec(name: str) -> OpSpec:
    """The spec of an operator the generator draws (every one it draws has one)."""
    found = spec(name)
    assert found is not None, name
    return found


def continuous_ops() -> list:
    return [name for name, s in SPECS.items() if not s.discontinuous]
