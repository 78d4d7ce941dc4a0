"""Which part of the input range drives a warning there.

A warning of the interval analysis says an operator *can* misbehave for some
input in range. ``drive`` re-runs the analysis on parts of the range to say
which, per input (the others keep their whole range):

  - ``corner``: ``high`` or ``low`` when the warning survives with that input
    held at that end and not at the other; ``both`` when it survives at either;
    ``mixed`` when it survives at neither: some elements must sit at one end and
    others at the other (a weighted sum with weights of both signs);
  - ``band``: the narrowest [a, b] such that with the input below a, or above b,
    the warning is gone (bisection to a thousandth of the range). For an
    overflow of ``exp`` it is [where exp passes the limit, high]; for a
    piecewise split, the split point.

Both are over-approximations, as the analysis is: the warning is impossible
outside the band, not certain inside it. The search aims its first candidates
there (``search/aimed.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from .interval import Interval

STEPS = 12  # bisection steps per band end: 1/4096 of the range


@dataclasses.dataclass(frozen=True)
class Driver:
    """What drives one warning, for one input."""

    corner: str  # high | low | both | mixed
    band: Interval

    def to_json(self) -> dict:
        return {"corner": self.corner, "band": self.band.to_json()}


def drive(present: Callable[[Mapping[str, Interval]], object], ranges: Mapping[str, Interval],
          names=None) -> dict:
    """{input name: Driver} for the inputs ``names`` (default: all with a non-empty range).

    ``present(ranges)`` re-runs the analysis on ``ranges`` and returns the warning
    there (None: gone); its ``excess`` says how far past the limit it goes."""
    out = {}
    for name in names if names is not None else list(ranges):
        whole = ranges[name]
        if not whole.lo < whole.hi:
            continue

        def at(part: Interval):
            return present({**ranges, name: part})

        low, high = at(Interval.point(whole.lo)), at(Interval.point(whole.hi))
        if low is not None and high is not None:
            corner = "high" if high.excess > low.excess else "low" if low.excess > high.excess else "both"
        else:
            corner = "high" if high is not None else "low" if low is not None else "mixed"
        out[name] = Driver(corner, _band(at, whole))
    return out


def _band(at, whole: Interval) -> Interval:
    """[a, b]: gone for the input in [lo, a) and in (b, hi]."""
    # a: the largest t with the warning gone on [lo, t]
    lo, hi = whole.lo, whole.hi
    if at(Interval(lo, lo)) is None:
        for _ in range(STEPS):
            mid = (lo + hi) / 2
            if at(Interval(whole.lo, mid)) is None:
                lo = mid
            else:
                hi = mid
        start = lo
    else:
        start = whole.lo
    # b: the smallest t with the warning gone on [t, hi]
    lo, hi = start, whole.hi
    if at(Interval(hi, hi)) is None:
        for _ in range(STEPS):
            mid = (lo + hi) / 2
            if at(Interval(mid, whole.hi)) is None:
                hi = mid
            else:
                lo = mid
        end = hi
    else:
        end = whole.hi
    return Interval(start, max(start, end))
