"""Where operators change behaviour inside a range: the values a search must try, not hope to draw.

A rounding rule differs from another only on exact ties (x.5), a floor or a
cast only at integers, an ``exp`` only past its overflow threshold in the
input's float (88.72 in float32, 11.09 in float16), a formula like
``(exp(2x) - 1) / (exp(2x) + 1)`` past half of it, a subnormal path only
below the smallest normal. Uniform and evolved floats almost never land on
any of them. ``edge_values`` lists them for one input's range and float,
each kind on its own (``EDGE_KINDS``); only values inside the declared range
are ever given: the range is the user's contract.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

# the kinds of edge, in the order candidates are made of them
EDGE_KINDS = ("ties", "thresholds", "powers of two", "integers")
# values of one kind kept, at most (nearest the range's ends and zero first)
PER_KIND = 24


def exp_thresholds(dtype) -> list:
    """Where exp-like operators of ``dtype`` overflow and underflow, and half of
    each (an ``exp(2x)`` inside ``tanh`` or ``sinh``), with both signs: ln(max),
    ln(2 max) (``sinh``/``cosh``), ln(smallest normal), ln(smallest subnormal)."""
    info = np.finfo(np.dtype(dtype))
    tiny = float(info.smallest_subnormal)
    points = [math.log(float(info.max)), math.log(2.0 * float(info.max)), math.log(float(info.tiny)), math.log(tiny)]
    out = []
    for point in points:
        for value in (point, point / 2.0):
            out += [value, -value]
    return out


def edge_values(dtype, low: float, high: float, integer: bool = False) -> dict:
    """{kind: values inside [low, high]} for an input of ``dtype``: exact ties, exp-like
    thresholds (each with its neighbours one rounding either side), powers of two
    (the smallest normal and subnormal among them), integers."""
    if integer:
        return {"integers": _integers(low, high)}
    try:
        dtype = np.dtype(dtype)
        np.finfo(dtype)
    except (TypeError, ValueError):  # a float numpy has no finfo for (bfloat16 without ml_dtypes): float32's edges
        dtype = np.dtype("float32")
    out = {"ties": [v + 0.5 for v in _integers(low - 0.5, high - 0.5)],
           "thresholds": _around([t for t in exp_thresholds(dtype)], dtype),
           "powers of two": _powers_of_two(dtype),
           "integers": _integers(low, high)}
    # every threshold is kept (at most 16 points, each with its two neighbours): each is some operator's edge
    kept = {kind: _inside(values, low, high, None if kind == "thresholds" else PER_KIND)
            for kind, values in out.items() if kind != "powers of two"}
    kept["powers of two"] = _spread_out(_inside(out["powers of two"], low, high, limit=None))
    return {kind: kept[kind] for kind in out}


def _spread_out(values: list) -> list:
    """At most PER_KIND of ``values`` (sorted), evenly over them: the tiniest and the largest magnitudes both."""
    if len(values) <= PER_KIND:
        return values
    picks = np.linspace(0, len(values) - 1, PER_KIND).round().astype(int)
    return [values[i] for i in sorted(set(picks.tolist()))]


def _inside(values, low: float, high: float, limit: Optional[int] = PER_KIND) -> list:
    kept = sorted({float(v) for v in values if low <= v <= high and math.isfinite(v)})
    if limit is None or len(kept) <= limit:
        return kept
    # the extremes first: nearest the ends and nearest zero, where the edges bite
    by_interest = sorted(kept, key=lambda v: min(abs(v - low), abs(v - high), abs(v)))
    return sorted(by_interest[:limit])


def _integers(low: float, high: float) -> list:
    lo, hi = math.ceil(low), math.floor(high)
    if hi < lo:
        return []
    if hi - lo + 1 <= 4 * PER_KIND:
        return list(range(lo, hi + 1))
    near = list(range(lo, lo + PER_KIND // 3)) + list(range(hi - PER_KIND // 3 + 1, hi + 1))
    zero = [v for v in range(-PER_KIND // 6, PER_KIND // 6 + 1) if lo <= v <= hi]
    return sorted(set(near + zero))


def _powers_of_two(dtype) -> list:
    info = np.finfo(dtype)
    lowest, highest = int(math.floor(math.log2(float(info.smallest_subnormal)))), int(info.maxexp) - 1
    return [sign * 2.0 ** k for k in range(lowest, highest + 1) for sign in (1.0, -1.0)]


def _around(values, dtype) -> list:
    """Each value as ``dtype`` rounds it, and its neighbours one rounding either side."""
    out = []
    for value in values:
        v = dtype.type(value)
        if not np.isfinite(v):
            continue
        out += [float(np.nextafter(v, dtype.type(-np.inf))), float(v), float(np.nextafter(v, dtype.type(np.inf)))]
    return out


def edge_candidates(specs, ranges, gen, conform) -> list:
    """One candidate per edge kind that has values in every float input's range: each
    element of each input drawn from that kind (an input with none keeps its middle)."""
    out = []
    for kind in EDGE_KINDS:
        cand, found = {}, False
        for spec in specs:
            r = ranges[spec.name]
            values = edge_values(spec.dtype, r.low, r.high, spec.is_integer).get(kind, [])
            if values:
                found = True
                cand[spec.name] = conform(gen.choice(values, size=spec.shape), spec, r)
            else:
                cand[spec.name] = conform((r.low + r.high) / 2.0, spec, r)
        if found:
            out.append(cand)
    return out


__all__ = ["EDGE_KINDS", "PER_KIND", "edge_candidates", "edge_values", "exp_thresholds"]
