"""How long an input search may run: a number of evaluations, seconds, or both.

``parse_budget("500")`` (evaluations), ``"60s"``, ``"2m"``, ``"500,60s"`` (both:
stop at whichever comes first).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Optional

from ..errors import RangeError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@dataclasses.dataclass(frozen=True)
class Budget:
    evaluations: Optional[int] = None
    seconds: Optional[float] = None
    at_least: int = 0  # evaluations granted even when the seconds run out first

    def __post_init__(self):
        if self.evaluations is None and self.seconds is None:
            raise RangeError("a search budget needs a number of evaluations or of seconds")
        evals = self.evaluations
        if evals is not None and (isinstance(evals, bool) or int(evals) != evals or evals <= 0):
            raise RangeError(f"budget evaluations must be a positive integer, got {self.evaluations!r}")
        if self.seconds is not None and not (math.isfinite(self.seconds) and self.seconds > 0):
            raise RangeError(f"budget seconds must be positive and finite, got {self.seconds!r}")

    def exhausted(self, evaluations_done: int, started_at: float) -> bool:
        """True once either limit is reached (``started_at`` from time.perf_counter())."""
        if evaluations_done < self.at_least:
            return False
        if self.evaluations is not None and evaluations_done >= self.evaluations:
            return True
        return self.seconds is not None and time.perf_counter() - started_at >= self.seconds

    def progress(self, evaluations_done: int, started_at: float) -> float:
        """How much of the budget is spent, in [0, 1] (the larger of the two)."""
        spent = 0.0
        if self.evaluations is not None:
            spent = evaluations_done / self.evaluations
        if self.seconds is not None:
            spent = max(spent, (time.perf_counter() - started_at) / self.seconds)
        return min(1.0, spent)

    def part(self, fraction: float) -> "Budget":
        """The first ``fraction`` of this budget (same start), at least one evaluation."""
        evals = None if self.evaluations is None else max(1, int(round(self.evaluations * fraction)))
        secs = None if self.seconds is None else self.seconds * fraction
        return Budget(evals, secs, min(self.at_least, evals or self.at_least))

    def to_json(self) -> dict:
        return {"evaluations": self.evaluations, "seconds": self.seconds, "at_least": self.at_least}

    def __str__(self) -> str:
        parts = [] if self.evaluations is None else [str(self.evaluations)]
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s")
        return ",".join(parts)


DEFAULT_BUDGET = Budget(evaluations=300)


def parse_budget(text: str) -> Budget:
    """``"500"``, ``"60s"``, ``"2m"``, ``"1.5h"``, ``"500,60s"`` -> Budget."""
    evaluations = seconds = None
    parts = [p.strip() for p in str(text).split(",")]
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise RangeError(f"--budget '{text}' must look like 500, 60s, 2m or 500,60s")
    for part in parts:
        unit = part[-1].lower()
        try:
            if unit in _UNITS:
                if seconds is not None:
                    raise ValueError
                seconds = float(part[:-1]) * _UNITS[unit]
            else:
                if evaluations is not None:
                    raise ValueError
                evaluations = int(part)
        except ValueError:
            raise RangeError(f"--budget '{text}' must look like 500, 60s, 2m or 500,60s") from None
    if (evaluations is not None and evaluations <= 0) or (seconds is not None and not seconds > 0):
        raise RangeError(f"--budget '{text}' must be positive")
    if seconds is not None and not math.isfinite(seconds):
        raise RangeError(f"--budget '{text}' must be finite")
    return Budget(evaluations, seconds)
