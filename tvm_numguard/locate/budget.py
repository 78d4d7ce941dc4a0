"""How long an input search may run: a number of evaluations, seconds, or both.

``parse_budget("500")`` (evaluations), ``"60s"``, ``"2m"``, ``"500,60s"`` (both:
stop at whichever comes first), ``"37/500"`` (the first 37 evaluations of a
500-evaluation search: what a replay line says when a time limit stopped one).

With a number of evaluations, the search's plan (how many evaluations each
phase gets, how its mutations shrink) depends on that number alone, and the
seconds are one deadline for the whole search: a time limit only cuts the
same sequence of inputs short, so ``K/N`` repeats it exactly. A seconds-only
budget plans its phases by time and cannot be repeated.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Optional

from ..base.errors import RangeError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@dataclasses.dataclass(frozen=True)
class Budget:
    evaluations: Optional[int] = None
    seconds: Optional[float] = None
    at_least: int = 0  # evaluations granted even when the seconds run out first
    stop: Optional[int] = None  # stop after this many evaluations of the plan (K of K/N)
    # the seconds are a time to be done by: no evaluation starts that, as long as the mean one so far, would end
    # past them (the guard's automatic budget: its last evaluation ran 0.28 plain compiles past it on SqueezeNet)
    done_by: bool = False

    def __post_init__(self):
        if self.evaluations is None and self.seconds is None:
            raise RangeError("a search budget needs a number of evaluations or of seconds")
        evals = self.evaluations
        if evals is not None and (isinstance(evals, bool) or int(evals) != evals or evals <= 0):
            raise RangeError(f"budget evaluations must be a positive integer, got {self.evaluations!r}")
        if self.seconds is not None and not (math.isfinite(self.seconds) and self.seconds > 0):
            raise RangeError(f"budget seconds must be positive and finite, got {self.seconds!r}")
        if self.stop is not None and (evals is None or not 0 < self.stop <= evals):
            raise RangeError(f"a budget K/N needs 0 < K <= N, got {self.stop!r}/{evals!r}")

    def exhausted(self, evaluations_done: int, started_at: float) -> bool:
        """True once either limit is reached (``started_at`` from time.perf_counter())."""
        if self.stop is not None and evaluations_done >= self.stop:
            return True
        if evaluations_done < self.at_least:
            return False
        if self.evaluations is not None and evaluations_done >= self.evaluations:
            return True
        if self.seconds is None:
            return False
        elapsed = time.perf_counter() - started_at
        mean = elapsed / evaluations_done if self.done_by and evaluations_done else 0.0
        return elapsed + mean >= self.seconds

    def progress(self, evaluations_done: int, started_at: float) -> float:
        """How much of the plan is spent, in [0, 1]: by evaluations when it has
        a number of them (so time never changes the search's course), else by time."""
        if self.evaluations is not None:
            return min(1.0, evaluations_done / self.evaluations)
        assert self.seconds is not None  # a budget without evaluations has seconds
        return min(1.0, (time.perf_counter() - started_at) / self.seconds)

    def part(self, fraction: float) -> "Budget":
        """The first ``fraction`` of this budget's plan (same start), at least one
        evaluation; the seconds stay one deadline for the whole search."""
        if self.evaluations is None:
            assert self.seconds is not None  # a budget without evaluations has seconds
            return Budget(None, self.seconds * fraction, self.at_least, done_by=self.done_by)
        evals = max(1, int(round(self.evaluations * fraction)))
        return Budget(evals, self.seconds, min(self.at_least, evals),
                      None if self.stop is None else min(self.stop, evals), self.done_by)

    def stopped_by(self, evaluations_done: int) -> str:
        """What ended a search that used it all: "evaluations" or "time"."""
        planned = self.stop if self.stop is not None else self.evaluations
        return "evaluations" if planned is not None and evaluations_done >= planned else "time"

    def repeat(self, evaluations_done: int) -> Optional["Budget"]:
        """The budget that repeats the inputs of a search that made ``evaluations_done``
        evaluations under this one (None: a seconds-only plan cannot be repeated)."""
        if self.evaluations is None:
            return None
        if evaluations_done >= self.evaluations:
            return Budget(self.evaluations)
        return Budget(self.evaluations, stop=max(1, evaluations_done))

    def to_json(self) -> dict:
        return {"evaluations": self.evaluations, "seconds": self.seconds, "at_least": self.at_least,
                "stop": self.stop}

    def __str__(self) -> str:
        if self.stop is not None:
            return f"{self.stop}/{self.evaluations}"
        parts = [] if self.evaluations is None else [str(self.evaluations)]
        if self.seconds is not None:  # rounded as said (the guard's automatic budget is 4.39596 s): a deadline
            parts.append(f"{self.seconds:.2g}s" if self.seconds < 10 else f"{self.seconds:.0f}s")
        return ",".join(parts)


DEFAULT_BUDGET = Budget(evaluations=300)
REGRESS_BUDGET = "100,20s"  # the search budget per (pass, model) of regress: a corpus has many


def parse_budget(text: str) -> Budget:
    """``"500"``, ``"60s"``, ``"2m"``, ``"1.5h"``, ``"500,60s"``, ``"37/500"`` -> Budget."""
    form = "must look like 500, 60s, 2m, 500,60s or 37/500"
    if "/" in str(text):
        first, _, planned = str(text).partition("/")
        try:
            stop, planned_evaluations = int(first), int(planned)
        except ValueError:
            raise RangeError(f"budget '{text}' {form}", "budget") from None
        if not 0 < stop <= planned_evaluations:
            raise RangeError(f"budget '{text}': K/N needs 0 < K <= N", "budget")
        return Budget(planned_evaluations, stop=stop)
    evaluations = seconds = None
    parts = [p.strip() for p in str(text).split(",")]
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise RangeError(f"budget '{text}' {form}", "budget")
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
            raise RangeError(f"budget '{text}' {form}", "budget") from None
    if (evaluations is not None and evaluations <= 0) or (seconds is not None and not seconds > 0):
        raise RangeError(f"budget '{text}' must be positive", "budget")
    if seconds is not None and not math.isfinite(seconds):
        raise RangeError(f"budget '{text}' must be finite", "budget")
    return Budget(evaluations, seconds)
