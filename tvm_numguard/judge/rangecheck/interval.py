"""Value intervals: every value a tensor's elements can take, for every input in range.

One ``Interval`` bounds all elements of a tensor (not each element: cheap, and
enough to tell where a value can reach a dtype's limit or leave an operator's
domain). The arithmetic is exact-real interval arithmetic on float64 bounds that
may be infinite; ``0 * inf`` counts as 0, since an exact zero times any finite
value is zero. Users: the static range check (``judge/rangecheck/analysis.py``), which
widens each result for rounding, and the random model generator, whose bounds
are loose on purpose (``MAGNITUDE``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

MAGNITUDE = 1e4  # the generator refuses a value interval beyond this: float32 chains would lose everything


def _product(a: float, b: float) -> float:
    return 0.0 if a == 0.0 or b == 0.0 else a * b


@dataclasses.dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    @classmethod
    def point(cls, value: float) -> "Interval":
        return cls(float(value), float(value))

    @classmethod
    def of_array(cls, values) -> "Interval":
        """The hull of an array's values (NaN ignored: it has no place on the line)."""
        values = np.asarray(values, dtype=np.float64)
        values = values[~np.isnan(values)]
        if values.size == 0:
            return cls(0.0, 0.0)
        return cls(float(values.min()), float(values.max()))

    @property
    def magnitude(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def finite(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    @property
    def bounded(self) -> bool:
        return self.finite and self.magnitude <= MAGNITUDE

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi

    def positive(self, margin: float = 0.0) -> bool:
        return self.lo > margin

    def monotone(self, f) -> "Interval":
        """The image under an increasing function."""
        return Interval(f(self.lo), f(self.hi))

    def hull(self, other: "Interval") -> "Interval":
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    def clip(self, lo: float, hi: float) -> "Interval":
        return Interval(min(max(self.lo, lo), hi), max(min(self.hi, hi), lo))

    def outward(self) -> "Interval":
        """The ends rounded away from each other to integers (finite ends only)."""
        return Interval(math.floor(self.lo) if math.isfinite(self.lo) else self.lo,
                        math.ceil(self.hi) if math.isfinite(self.hi) else self.hi)

    def widen(self, relative: float, absolute: float = 0.0) -> "Interval":
        """Room for rounding: each end moved out by ``relative`` of its size plus ``absolute``."""
        return Interval(self.lo - relative * abs(self.lo) - absolute, self.hi + relative * abs(self.hi) + absolute)

    def __add__(self, other: "Interval") -> "Interval":
        return Interval(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> "Interval":
        return Interval(-self.hi, -self.lo)

    def __sub__(self, other: "Interval") -> "Interval":
        return self + (-other)

    def __mul__(self, other: "Interval") -> "Interval":
        products = [_product(a, b) for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        return Interval(min(products), max(products))

    def scale(self, k: float) -> "Interval":
        """k copies summed (k >= 0): a sum over k elements."""
        return Interval(_product(self.lo, k), _product(self.hi, k))

    def reciprocal(self) -> "Interval":
        """1/x; where the interval holds zero (or touches it) the result is unbounded."""
        if self.lo > 0 or self.hi < 0:
            return Interval(1.0 / self.hi if self.hi else -math.inf, 1.0 / self.lo if self.lo else math.inf)
        if self.lo == 0 and self.hi > 0:
            return Interval(1.0 / self.hi, math.inf)
        if self.hi == 0 and self.lo < 0:
            return Interval(-math.inf, 1.0 / self.lo)
        return Interval(-math.inf, math.inf)

    def abs(self) -> "Interval":
        if self.lo >= 0:
            return self
        if self.hi <= 0:
            return -self
        return Interval(0.0, self.magnitude)

    def square(self) -> "Interval":
        a = self.abs()
        return Interval(a.lo * a.lo, a.hi * a.hi)

    def maximum(self, other: "Interval") -> "Interval":
        return Interval(max(self.lo, other.lo), max(self.hi, other.hi))

    def minimum(self, other: "Interval") -> "Interval":
        return Interval(min(self.lo, other.lo), min(self.hi, other.hi))

    def to_json(self) -> list:
        return [self.lo, self.hi]


UNIT = Interval(-1.0, 1.0)
EVERYTHING = Interval(-math.inf, math.inf)


def dtype_limits(dtype: str) -> Interval:
    """The finite values of ``dtype`` (``bool``: 0 and 1)."""
    dtype = str(dtype)
    if dtype == "bool":
        return Interval(0.0, 1.0)
    if dtype == "bfloat16":
        return Interval(-3.3895313892515355e38, 3.3895313892515355e38)
    kind = np.dtype(dtype).kind
    if kind in "iu":
        info = np.iinfo(dtype)
        return Interval(float(info.min), float(info.max))
    finfo = np.finfo(dtype)
    return Interval(-float(finfo.max), float(finfo.max))


def dtype_epsilon(dtype: str) -> float:
    """The relative rounding step of a float dtype (0 for integers)."""
    dtype = str(dtype)
    if dtype == "bfloat16":
        return 2.0 ** -8
    if dtype == "bool" or np.dtype(dtype).kind in "iub":
        return 0.0
    return float(np.finfo(dtype).eps)
