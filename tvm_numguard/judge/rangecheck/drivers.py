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
there (``locate/aimed.py``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Mapping, Optional

import numpy as np

from .interval import Interval

if TYPE_CHECKING:
    from .analysis import RangeWarning

STEPS = 12  # bisection steps per band end: 1/4096 of the range


@dataclasses.dataclass(frozen=True)
class Driver:
    """What drives one warning, for one input. ``pattern``: for a mixed corner
    the check could resolve (``patterns.py``), +1 where an element should sit at
    the high end and -1 at the low end, in the input's shape."""

    corner: str  # high | low | both | mixed
    band: Interval
    pattern: Optional[np.ndarray] = dataclasses.field(default=None, compare=False)

    def to_json(self) -> dict:
        return {"corner": self.corner, "band": self.band.to_json(), "pattern": self.pattern is not None}


def drive(present: Callable[[Mapping[str, Interval]], Optional[RangeWarning]], ranges: Mapping[str, Interval],
          measure: Callable[[RangeWarning], float] = lambda w: w.excess) -> dict:
    """{input name: Driver} for the inputs with a non-empty range.

    ``present(ranges)`` re-runs the analysis on ``ranges`` and returns the warning
    there (None: gone); ``measure(warning)`` says how bad it is there (how far
    past the limit, on the side the warning fears most)."""
    out = {}
    for name, whole in ranges.items():
        if not whole.lo < whole.hi:
            continue

        def at(part: Interval):
            return present({**ranges, name: part})

        low, high = at(Interval.point(whole.lo)), at(Interval.point(whole.hi))
        if low is not None and high is not None:
            worse = measure(high) - measure(low)
            corner = "high" if worse > 0 else "low" if worse < 0 else "both"
        else:
            corner = "high" if high is not None else "low" if low is not None else "mixed"
        # a mixed corner needs both ends: no narrower band holds it
        out[name] = Driver(corner, whole if corner == "mixed" else _band(at, whole, low is not None, high is not None))
    return out


def _band(at, whole: Interval, low_present: bool, high_present: bool) -> Interval:
    """[a, b]: gone for the input in [lo, a) and in (b, hi] (``*_present``: whether
    it stands with the input held at that end, already known)."""
    start = whole.lo if low_present else _edge(lambda t: at(Interval(whole.lo, t)) is None, whole.lo, whole.hi)
    end = whole.hi if high_present else _edge(lambda t: at(Interval(t, whole.hi)) is None, whole.hi, start)
    return Interval(start, max(start, end))


def _edge(gone, inside: float, outside: float) -> float:
    """Bisection between ``inside`` (where ``gone`` holds) and ``outside`` (where it
    does not): the last point found where it holds."""
    for _ in range(STEPS):
        mid = (inside + outside) / 2
        if gone(mid):
            inside = mid
        else:
            outside = mid
    return inside
