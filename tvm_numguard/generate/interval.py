"""Value intervals: what a generated tensor's elements can be, for every input in range.

The generator keeps each operator's arguments inside the operator's valid
domain by interval arithmetic (the bound is sound for exact arithmetic and
loose on purpose: a model whose interval says "finite" has a finite float32
reference everywhere in its range, with margins for rounding).
"""

from __future__ import annotations

import dataclasses
import math

MAGNITUDE = 1e4  # a value interval beyond this is refused: float32 chains would lose everything


@dataclasses.dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    @property
    def magnitude(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi) and self.magnitude <= MAGNITUDE

    def positive(self, margin: float = 0.0) -> bool:
        return self.lo > margin

    def excludes_zero(self, margin: float) -> bool:
        return self.lo > margin or self.hi < -margin

    def monotone(self, f) -> "Interval":
        """The image under an increasing function."""
        return Interval(f(self.lo), f(self.hi))

    def hull(self, other: "Interval") -> "Interval":
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    def __add__(self, other: "Interval") -> "Interval":
        return Interval(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> "Interval":
        return Interval(-self.hi, -self.lo)

    def __sub__(self, other: "Interval") -> "Interval":
        return self + (-other)

    def __mul__(self, other: "Interval") -> "Interval":
        products = (self.lo * other.lo, self.lo * other.hi, self.hi * other.lo, self.hi * other.hi)
        return Interval(min(products), max(products))

    def scale(self, k: float) -> "Interval":
        """k copies summed (k >= 0): a sum over k elements."""
        return Interval(self.lo * k, self.hi * k)

    def reciprocal(self) -> "Interval":
        """1/x; the caller has checked that the interval excludes zero."""
        return Interval(1.0 / self.hi, 1.0 / self.lo)

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


UNIT = Interval(-1.0, 1.0)
