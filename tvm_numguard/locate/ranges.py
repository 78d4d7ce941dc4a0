"""Input ranges: where the user says the model's inputs live."""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Optional, Sequence

import numpy as np

from ..base.errors import RangeError, named


@dataclasses.dataclass(frozen=True)
class InputRange:
    low: float
    high: float

    def to_json(self) -> dict:
        return {"low": self.low, "high": self.high}

    @classmethod
    def from_json(cls, data) -> "InputRange":
        return cls(float(data["low"]), float(data["high"]))


def parse_range_spec(text: str) -> tuple:
    """``NAME=LO:HI`` -> (name, lo, hi)."""
    name, sep, bounds = text.rpartition("=")
    lo_text, sep2, hi_text = bounds.partition(":")
    if not sep or not sep2 or not name:
        raise RangeError(f"{named('ranges')} '{text}' must look like NAME=LO:HI")
    try:
        return name, float(lo_text), float(hi_text)
    except ValueError:
        raise RangeError(f"{named('ranges')} '{text}': bounds must be numbers") from None


def resolve_ranges(
    specs: Sequence,
    low: Optional[float],
    high: Optional[float],
    per_input: Optional[Mapping[str, tuple]] = None,
) -> dict:
    """One InputRange per model input; bad bounds and unknown names are refused."""
    per_input = dict(per_input or {})
    names = [s.name for s in specs]
    unknown = sorted(set(per_input) - set(names))
    if unknown:
        raise RangeError(f"range given for unknown input(s) {', '.join(unknown)}; the model has {', '.join(names)}")
    ranges = {}
    for spec in specs:
        lo, hi = per_input.get(spec.name, (low, high))
        if lo is None or hi is None:
            raise RangeError(f"no range for input '{spec.name}': give {named('low')} and {named('high')}, or "
                             f"{named('ranges')} for it")
        validate_bounds(spec.name, float(lo), float(hi), spec.dtype)
        ranges[spec.name] = InputRange(float(lo), float(hi))
    return ranges


def validate_span(name: str, lo: float, hi: float) -> None:
    """The bounds rule that needs no model: finite and ordered (``name``: whose bounds)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RangeError(f"bounds for '{name}' must be finite, got [{lo}, {hi}]")
    if lo > hi:
        raise RangeError(f"low > high for '{name}': [{lo}, {hi}]")


def validate_bounds(name: str, lo: float, hi: float, dtype: str) -> None:
    """``validate_span``, and the bounds fit the input's dtype."""
    validate_span(name, lo, hi)
    kind = np.dtype(dtype).kind if dtype != "bfloat16" else "f"
    if kind in "iu":
        info = np.iinfo(dtype)
        if lo < info.min or hi > info.max:
            raise RangeError(f"bounds [{lo}, {hi}] for '{name}' are outside the range of {dtype}")
        if math.ceil(lo) > math.floor(hi):
            raise RangeError(f"[{lo}, {hi}] for integer input '{name}' holds no integer")
    elif kind == "f":
        big = float(np.finfo(dtype).max) if dtype != "bfloat16" else 3.38e38
        if lo < -big or hi > big:
            raise RangeError(f"bounds [{lo}, {hi}] for '{name}' are outside the range of {dtype}")
