"""Transfer functions of weighted sums and normalizations: matmul and
convolution with their actual weights, pooling, layer/group/RMS/batch norm.

For a constant weight, each output column's sum of positive and of negative
weights bounds every sum of products over an input interval exactly
(``weighted_sum``); a normalized value lies at most sqrt(n - 1) standard
deviations from its mean, and at most its spread over sqrt(eps).
"""

from __future__ import annotations

import math
from typing import Optional, overload

import numpy as np

from .abstract import attr, axes_size, ints
from .interval import EVERYTHING, Interval


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
