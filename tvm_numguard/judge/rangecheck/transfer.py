"""Interval transfer functions of Relax operators: what a call's result can be,
given what its arguments can be.

``TRANSFER[op name](call, args, out)`` returns the result's ``Interval``
(a tuple of them for an operator that returns a tuple). ``args`` are the
arguments' ``Abstract`` values, in order; ``out`` is the result's (dtype, shape)
as Relax inferred it. Every function is sound for exact arithmetic: each element
of the result lies in the interval for every argument value in the arguments'
intervals (the analysis widens for rounding). Weighted sums (matmul, conv) use
the actual weights when they are constants: per output column the sum of the
positive and of the negative weights, which is exact for a scalar input interval.
An operator not in the table widens to its dtype's whole range (analysis.py).

What the analysis knows of one tensor is an ``Abstract`` (its interval, dtype,
static shape and, for a constant, the values); ``attr`` reads a call's
attribute as a transfer function needs it.

Weighted sums and normalizations (matmul and convolution with their actual
weights, pooling, layer/group/RMS/batch norm): for a constant weight, each
output column's sum of positive and of negative weights bounds every sum of
products over an input interval exactly (``weighted_sum``); a normalized value
lies at most sqrt(n - 1) standard deviations from its mean, and at most its
spread over sqrt(eps).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional, overload

import numpy as np

from .interval import EVERYTHING, Interval, dtype_limits


@dataclasses.dataclass(frozen=True)
class Abstract:
    """What the analysis knows of one tensor: its interval, dtype, static shape
    (None: not static) and, for a constant, the values themselves."""

    interval: Interval
    dtype: str
    shape: Optional[tuple] = None
    const: Optional[np.ndarray] = None
    depth: int = 0  # weighted sums (matmul, conv) between the inputs and this bound (analysis.py)

    @property
    def size(self) -> Optional[int]:
        return None if self.shape is None else int(np.prod(self.shape, dtype=np.int64))


def attr(call, name, default=None):
    """The call's attribute ``name``, or ``default`` where it has none (or it is None)."""
    value = getattr(call.attrs, name, None) if call.attrs is not None else None
    return default if value is None else value


def ints(values) -> list:
    return [int(v) for v in values] if values is not None else []


def axes_size(shape, axes) -> Optional[int]:
    """How many elements the ``axes`` of ``shape`` hold together (None: no static shape)."""
    if shape is None:
        return None
    return int(np.prod([shape[int(a)] for a in axes], dtype=np.int64))


def _normalized(x: Interval, n: Optional[int], eps: float, centred: bool = True) -> Interval:
    """Where (x - mean)/sqrt(var + eps) lies (``centred``; else x/sqrt(mean(x^2) + eps)):
    at most sqrt(n - 1) (sqrt(n)) standard deviations, and at most the spread over sqrt(eps)."""
    spread = (x.hi - x.lo) if centred else x.magnitude
    bound = spread / math.sqrt(eps) if eps > 0 else math.inf
    if n is not None:
        bound = min(bound, math.sqrt(max(n - (1 if centred else 0), 0)))
    return Interval(-bound, bound)


def _affine(normal: Interval, args, scale_at: int, shift_at: int, has_scale=True, has_shift=True) -> Interval:
    y = normal * args[scale_at].interval if has_scale and len(args) > scale_at else normal
    return y + args[shift_at].interval if has_shift and len(args) > shift_at else y


def layer_norm(call, args, out):
    n = axes_size(args[0].shape, ints(attr(call, "axes")))
    normal = _normalized(args[0].interval, n, float(attr(call, "epsilon", 1e-5)))
    return _affine(normal, args, 1, 2, bool(attr(call, "scale", True)), bool(attr(call, "center", True)))


def group_norm(call, args, out):
    shape = args[0].shape
    groups = int(attr(call, "num_groups", 1))
    axis = int(attr(call, "channel_axis", 1))
    n = None
    if shape is not None:
        n = shape[axis] // max(groups, 1) * axes_size(shape, ints(attr(call, "axes")))
    normal = _normalized(args[0].interval, n, float(attr(call, "epsilon", 1e-5)))
    return _affine(normal, args, 1, 2)


def rms_norm(call, args, out):
    n = axes_size(args[0].shape, ints(attr(call, "axes")))
    normal = _normalized(args[0].interval, n, float(attr(call, "epsilon", 1e-5)), centred=False)
    return _affine(normal, args, 1, 2, has_shift=False)


def batch_norm(call, args, out):
    """(normalized, new moving mean, new moving variance)."""
    x, gamma, beta, mean, var = args[:5]
    eps = float(attr(call, "epsilon", 1e-5))
    axis = int(attr(call, "axis", 1))
    training = bool(attr(call, "training", False))
    if not training and all(a.const is not None for a in (gamma, beta, mean, var)):
        scale = gamma.const.astype(np.float64) / np.sqrt(var.const.astype(np.float64) + eps)
        shift = beta.const.astype(np.float64) - mean.const.astype(np.float64) * scale
        y = _channel_affine(x.interval, scale.reshape(-1), shift.reshape(-1))
    elif not training:
        normal = (x.interval - mean.interval) * (var.interval + Interval.point(eps)).monotone(
            lambda v: math.inf if v <= 0 else 1.0 / math.sqrt(v)).hull(Interval.point(0.0))
        y = normal * gamma.interval + beta.interval
    else:
        n = None if x.shape is None else int(np.prod(x.shape, dtype=np.int64)) // x.shape[axis]
        y = _normalized(x.interval, n, eps) * gamma.interval + beta.interval
    # the new moving statistics are a convex mix of the old ones and the batch's: the hulls hold them
    spread = x.interval.hi - x.interval.lo
    new_mean = mean.interval.hull(x.interval) if training else mean.interval
    new_var = var.interval.hull(Interval(0.0, spread * spread)) if training else var.interval
    return (y, new_mean, new_var)


def _channel_affine(x: Interval, scale: np.ndarray, shift: np.ndarray) -> Interval:
    ends = np.concatenate([x.lo * scale + shift, x.hi * scale + shift]) if x.finite else None
    if ends is None:
        return EVERYTHING
    return Interval(float(ends.min()), float(ends.max()))


def weighted_sum(x: Interval, positive: np.ndarray, negative: np.ndarray) -> Interval:
    """Every sum of products w*v over one output (v in ``x``), given each output's
    sum of positive and of negative weights."""
    if not x.finite:
        return EVERYTHING
    lo = _scaled(x.lo, positive) + _scaled(x.hi, negative)
    hi = _scaled(x.hi, positive) + _scaled(x.lo, negative)
    return Interval(float(lo.min()), float(hi.max()))


def _scaled(v: float, weights: np.ndarray) -> np.ndarray:
    return np.zeros_like(weights) if v == 0 else v * weights


def _weights_sums(weights: np.ndarray, axes: tuple) -> tuple:
    w = weights.astype(np.float64)
    return np.maximum(w, 0).sum(axis=axes), np.minimum(w, 0).sum(axis=axes)


def matmul(call, args, out):
    a, b = args[0], args[1]
    if b.const is not None and b.const.ndim >= 1:
        axis = 0 if b.const.ndim == 1 else b.const.ndim - 2
        return weighted_sum(a.interval, *_weights_sums(b.const, (axis,)))
    if a.const is not None and a.const.ndim >= 1:
        return weighted_sum(b.interval, *_weights_sums(a.const, (a.const.ndim - 1,)))
    k = None if a.shape is None or not a.shape else a.shape[-1]
    return _all_terms(a.interval * b.interval, k)


def _all_terms(term: Interval, k: Optional[int]) -> Interval:
    if k is None:
        return EVERYTHING
    return term.scale(k)


def conv_output_axis(call) -> int:
    """The output channel's axis of a conv's weight, in either layout (OIHW, IOHW)."""
    return str(attr(call, "kernel_layout", "OIHW")).index("O")


@overload
def conv_terms(call, weight_shape: tuple) -> int: ...


@overload
def conv_terms(call, weight_shape: Optional[tuple]) -> Optional[int]: ...


def conv_terms(call, weight_shape) -> Optional[int]:
    """How many products one output of a conv sums: every weight of its output channel."""
    if weight_shape is None:
        return None
    return int(np.prod(weight_shape, dtype=np.int64)) // int(weight_shape[conv_output_axis(call)])


def conv(call, args, out):
    data, weight = args[0], args[1]
    transposed = "transpose" in call.op.name
    padded = any(int(p) for p in ints(attr(call, "padding")))
    # where an output may miss some products (padding; a transposed conv's edges), the
    # input's interval takes 0 in: a missing product is a product with 0, so the
    # full sums bound every subset of them
    x = data.interval.hull(Interval.point(0.0)) if padded or transposed else data.interval
    if weight.const is not None:
        o = conv_output_axis(call)
        others = tuple(i for i in range(weight.const.ndim) if i != o)
        return weighted_sum(x, *_weights_sums(weight.const, others))
    return _all_terms(x * weight.interval, conv_terms(call, weight.shape))


def avg_pool(call, args, out):
    x = args[0].interval
    padded = any(int(p) for p in ints(attr(call, "padding")))
    return x.hull(Interval.point(0.0)) if padded and bool(attr(call, "count_include_pad", False)) else x


GELU_MIN = -0.17004  # min of x * Phi(x), at x = -0.7518
SILU_MIN = -0.27847  # min of x * sigmoid(x), at x = -1.2785


def _reduced(args, call) -> Optional[int]:
    """How many elements a reduction over the call's ``axis`` attribute folds into one."""
    shape = args[0].shape
    axes = attr(call, "axis")
    return axes_size(shape, range(len(shape)) if shape is not None and axes is None else ints(axes))


def _safe(f, x: float) -> float:
    try:
        return f(x)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan


def _monotone(f):
    return lambda call, args, out: Interval(_safe(f, args[0].interval.lo), _safe(f, args[0].interval.hi))


def _exp(x):
    return math.exp(x) if x < 710 else math.inf


def _on_domain(f, low: float, below: float):
    """An increasing ``f`` defined from ``low``; ``below`` where the argument can be lower."""
    def transfer(call, args, out):
        x = args[0].interval
        lo = below if x.lo < low or (x.lo == low and below != f(low)) else f(x.lo)
        return Interval(lo, f(max(x.hi, low)) if x.hi >= low else below)
    return transfer


def _log(base: float):
    return _on_domain(lambda v: -math.inf if v <= 0 else math.log(v) / math.log(base), 0.0, -math.inf)


def _sqrt(call, args, out):
    x = args[0].interval
    return Interval(math.sqrt(max(x.lo, 0.0)), math.sqrt(max(x.hi, 0.0)))


def _rsqrt(call, args, out):
    x = args[0].interval
    hi = math.inf if x.lo <= 0 else 1.0 / math.sqrt(x.lo)
    lo = 0.0 if x.hi == math.inf else (math.inf if x.hi <= 0 else 1.0 / math.sqrt(x.hi))
    return Interval(lo, hi)


def _power(call, args, out):
    base, exponent = args[0].interval, args[1]
    p = None if exponent.const is None or exponent.const.size != 1 else float(exponent.const.reshape(-1)[0])
    if p is None:
        return EVERYTHING
    if p == int(p):
        if p == 0:
            return Interval(1.0, 1.0)
        if p > 0:
            if int(p) % 2 == 0:
                a = base.abs()
                return Interval(_pow(a.lo, p), _pow(a.hi, p))
            return Interval(_pow(base.lo, p), _pow(base.hi, p))
        if base.contains(0.0):
            return EVERYTHING
        inner = _power(call, [args[0], Abstract(Interval.point(-p), "float32", (), np.asarray(-p))], out)
        return inner.reciprocal()
    if base.hi < 0:
        return Interval(math.nan, math.nan)
    lo, hi = max(base.lo, 0.0), base.hi
    if p > 0:
        return Interval(_pow(lo, p), _pow(hi, p))
    return Interval(_pow(hi, p), math.inf if lo == 0 else _pow(lo, p))


def _pow(x: float, p: float) -> float:
    try:
        return math.pow(x, p)
    except OverflowError:
        return math.inf if x > 0 or int(p) % 2 == 0 else -math.inf
    except ValueError:
        return math.nan


def _same_var(call) -> bool:
    a, b = call.args[0], call.args[1]
    return a.same_as(b)


def _multiply(call, args, out):
    if _same_var(call):
        return args[0].interval.square()
    return args[0].interval * args[1].interval


def _divide(call, args, out):
    return args[0].interval * args[1].interval.reciprocal()


def _floor_divide(call, args, out):
    return _divide(call, args, out).outward()


def _mod(call, args, out):
    m = args[1].interval.magnitude
    return Interval(-m, m) if math.isfinite(m) else EVERYTHING


def _gelu(call, args, out):
    x = args[0].interval
    def g(v):
        return v * 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) if math.isfinite(v) else (v if v > 0 else 0.0)

    return Interval(GELU_MIN if x.lo < 0 else g(x.lo), max(g(x.lo), g(x.hi)))


def _silu(call, args, out):
    x = args[0].interval
    def s(v):
        return v / (1.0 + _exp(-v)) if math.isfinite(v) else (v if v > 0 else 0.0)

    return Interval(SILU_MIN if x.lo < 0 else s(x.lo), max(s(x.lo), s(x.hi)))


def _clip(call, args, out):
    return args[0].interval.clip(args[1].interval.lo, args[2].interval.hi)


def _leaky(call, args, out):
    alpha = float(attr(call, "alpha", 0.01))
    x = args[0].interval
    def f(v):
        return v if v >= 0 else alpha * v

    return Interval(min(f(x.lo), f(x.hi)), max(f(x.lo), f(x.hi)))


def _prelu(call, args, out):
    """x where x >= 0, alpha * x below (alpha: the second argument)."""
    x, alpha = args[0].interval, args[1].interval
    positive = Interval(max(x.lo, 0.0), max(x.hi, 0.0))
    return positive.hull(Interval(min(x.lo, 0.0), min(x.hi, 0.0)) * alpha)


def _first(call, args, out):
    return args[0].interval


def _hull(call, args, out):
    """Concatenation, stacking: any element is one of the parts' (given as a tuple)."""
    items = [a for a in (args[0] if args and isinstance(args[0], tuple) else args) if isinstance(a, Abstract)]
    if not items:
        return EVERYTHING
    result = items[0].interval
    for a in items[1:]:
        result = result.hull(a.interval)
    return result


def _round(call, args, out):
    return args[0].interval.outward()


def _const(value: float):
    return lambda call, args, out: Interval.point(value)


def _fixed(lo: float, hi: float):
    return lambda call, args, out: Interval(lo, hi)


def _sum(call, args, out):
    n = _reduced(args, call)
    x = args[0].interval
    if n is None:
        return Interval(-math.inf if x.lo < 0 else 0.0, math.inf if x.hi > 0 else 0.0)
    return x.scale(n)


def _prod(call, args, out):
    n = _reduced(args, call)
    x = args[0].interval
    if n is None:
        return EVERYTHING
    if x.lo >= 0:
        return Interval(_pow(x.lo, n), _pow(x.hi, n))
    m = _pow(x.magnitude, n)
    return Interval(-m, m)


def _variance(call, args, out):
    x = args[0].interval
    return Interval(0.0, (x.hi - x.lo) ** 2 / 4.0)


def _std(call, args, out):
    x = args[0].interval
    return Interval(0.0, (x.hi - x.lo) / 2.0)


def _cumsum(call, args, out):
    x = args[0].interval
    axis = attr(call, "axis")
    shape = args[0].shape
    if shape is None:
        return _sum(call, args, out).hull(x)
    n = int(np.prod(shape, dtype=np.int64)) if axis is None else shape[int(axis)]
    return x.hull(x.scale(n))


def _log_softmax(call, args, out):
    x = args[0].interval
    axis = int(attr(call, "axis", -1))
    n = 1 if args[0].shape is None else args[0].shape[axis]
    return Interval(-(x.hi - x.lo) - math.log(max(n, 1)), 0.0)


def _pad(call, args, out):
    x = args[0].interval
    value = float(attr(call, "pad_value", 0.0))
    if len(args) > 1 and isinstance(args[1], Abstract):
        return x.hull(args[1].interval)
    return x.hull(Interval.point(value))


def _resize(call, args, out):
    x = args[0].interval
    if str(attr(call, "method", "linear")) == "cubic":  # cubic weights go negative: overshoot
        spread = x.hi - x.lo
        return Interval(x.lo - 0.5 * spread, x.hi + 0.5 * spread)
    return x


def _index(call, args, out):
    shape = args[0].shape
    if shape is None:
        return Interval(0.0, dtype_limits(out[0]).hi)
    axis = attr(call, "axis")
    n = int(np.prod(shape, dtype=np.int64)) if axis is None else shape[int(axis)]
    return Interval(0.0, float(max(n - 1, 0)))


def _full(call, args, out):
    return args[-1].interval if args and isinstance(args[-1], Abstract) else EVERYTHING


def _arange(call, args, out):
    """[start, end): the hull of its start and end (PrimValue arguments)."""
    ends = [a.interval for a in args[:2] if isinstance(a, Abstract)]
    return ends[0].hull(ends[1]) if len(ends) == 2 else EVERYTHING


def _dropout(call, args, out):
    return (args[0].interval, Interval(0.0, 1.0 / max(1e-9, 1.0 - float(attr(call, "rate", 0.5)))))


def _split(call, args, out):
    return tuple(args[0].interval for _ in range(len(out)))


def _where(call, args, out):
    return args[1].interval.hull(args[2].interval)


def _attention(call, args, out):
    return args[2].interval  # a convex combination of the values, whatever the scores


def _tanh_like(lo: float, hi: float):
    def transfer(call, args, out):
        x = args[0].interval
        f = {"relax.tanh": math.tanh, "relax.erf": math.erf, "relax.sigmoid": lambda v: 1.0 / (1.0 + _exp(-v)),
             "relax.atan": math.atan, "relax.asinh": math.asinh}[call.op.name]
        return Interval(f(x.lo) if math.isfinite(x.lo) else lo, f(x.hi) if math.isfinite(x.hi) else hi)
    return transfer


_COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
            "logical_not", "logical_xor", "isnan", "isinf", "isfinite")
_SHAPE_ONLY = ("reshape", "permute_dims", "expand_dims", "squeeze", "flatten", "broadcast_to", "strided_slice",
               "dynamic_strided_slice", "take", "index_tensor", "gather_elements", "gather_nd", "flip", "tile",
               "repeat",
               "layout_transform", "nn.batch_flatten", "nn.pixel_shuffle", "max", "min", "nn.max_pool1d",
               "nn.max_pool2d", "nn.max_pool3d", "mean", "nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d",
               "nn.adaptive_avg_pool3d", "sort", "median", "hint_on_device", "to_vdevice", "collapse_sum_like",
               "wrap_param", "astype", "tril", "triu")

TRANSFER = {
    "relax.add": lambda call, args, out: args[0].interval + args[1].interval,
    "relax.subtract": lambda call, args, out: args[0].interval - args[1].interval,
    "relax.multiply": _multiply,
    "relax.divide": _divide,
    "relax.floor_divide": _floor_divide,
    "relax.mod": _mod,
    "relax.floor_mod": _mod,
    "relax.power": _power,
    "relax.maximum": lambda call, args, out: args[0].interval.maximum(args[1].interval),
    "relax.minimum": lambda call, args, out: args[0].interval.minimum(args[1].interval),
    "relax.negative": lambda call, args, out: -args[0].interval,
    "relax.abs": lambda call, args, out: args[0].interval.abs(),
    "relax.square": lambda call, args, out: args[0].interval.square(),
    "relax.sign": _fixed(-1.0, 1.0),
    "relax.sin": _fixed(-1.0, 1.0),
    "relax.cos": _fixed(-1.0, 1.0),
    "relax.exp": _monotone(_exp),
    "relax.log": _log(math.e),
    "relax.log2": _log(2.0),
    "relax.log10": _log(10.0),
    "relax.sqrt": _sqrt,
    "relax.rsqrt": _rsqrt,
    "relax.tanh": _tanh_like(-1.0, 1.0),
    "relax.erf": _tanh_like(-1.0, 1.0),
    "relax.sigmoid": _tanh_like(0.0, 1.0),
    "relax.atan": _tanh_like(-math.pi / 2, math.pi / 2),
    "relax.asinh": _tanh_like(-math.inf, math.inf),
    "relax.round": _round,
    "relax.floor": _round,
    "relax.ceil": _round,
    "relax.trunc": _round,
    "relax.clip": _clip,
    "relax.nn.relu": lambda call, args, out: args[0].interval.maximum(Interval.point(0.0)),
    "relax.nn.leakyrelu": _leaky,
    "relax.nn.prelu": _prelu,
    "relax.nn.gelu": _gelu,
    "relax.nn.gelu_tanh": _gelu,
    "relax.nn.silu": _silu,
    "relax.nn.softplus": lambda call, args, out: Interval(0.0, max(args[0].interval.hi, 0.0) + math.log(2.0)),
    "relax.nn.softmax": _fixed(0.0, 1.0),
    "relax.nn.log_softmax": _log_softmax,
    "relax.sum": _sum,
    "relax.prod": _prod,
    "relax.variance": _variance,
    "relax.std": _std,
    "relax.cumsum": _cumsum,
    "relax.nn.layer_norm": layer_norm,
    "relax.nn.group_norm": group_norm,
    "relax.nn.rms_norm": rms_norm,
    "relax.nn.batch_norm": batch_norm,
    "relax.matmul": matmul,
    "relax.nn.conv1d": conv,
    "relax.nn.conv2d": conv,
    "relax.nn.conv3d": conv,
    "relax.nn.conv1d_transpose": conv,
    "relax.nn.conv2d_transpose": conv,
    "relax.nn.avg_pool1d": avg_pool,
    "relax.nn.avg_pool2d": avg_pool,
    "relax.nn.avg_pool3d": avg_pool,
    "relax.nn.pad": _pad,
    "relax.image.resize2d": _resize,
    "relax.concat": _hull,
    "relax.stack": _hull,
    "relax.where": _where,
    "relax.argmax": _index,
    "relax.argmin": _index,
    "relax.argsort": _index,
    "relax.full": _full,
    "relax.arange": _arange,
    "relax.full_like": _full,
    "relax.zeros": _const(0.0),
    "relax.zeros_like": _const(0.0),
    "relax.ones": _const(1.0),
    "relax.ones_like": _const(1.0),
    "relax.nn.dropout": _dropout,
    "relax.split": _split,
    "relax.nn.attention": _attention,
    **{"relax." + name: _fixed(0.0, 1.0) for name in _COMPARE},
    **{"relax." + name: _first for name in _SHAPE_ONLY},
}
