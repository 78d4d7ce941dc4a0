"""What one run of the builds on one input observed: the score an input search reads."""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class Observation:
    """One evaluation: the score, the reference's output values and the absolute
    differences of the optimized build, both flattened over all outputs in
    order (float64). ``score`` None: the reference is not finite here."""

    score: Optional[float]
    reference: Optional[np.ndarray] = None
    error: Optional[np.ndarray] = None


def score_of(outcome) -> Optional[float]:
    """The score of what an ``evaluate`` returned (a float, None or an Observation)."""
    return outcome.score if isinstance(outcome, Observation) else outcome


__all__ = ["Observation", "score_of"]
