"""The interface of an input search.

A search strategy proposes candidates and sees their scores through an
``evaluate`` callback (score > 1 is a violation, None an invalid candidate:
the reference itself is not finite there), and returns a SearchResult.
The strategies are in strategies.py; FixedInputs stands in for a search when
the user gives the inputs.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional



Inputs = dict  # input name -> numpy array
Evaluate = Callable[[Inputs], Optional[float]]


@dataclasses.dataclass
class SearchResult:
    best_inputs: Optional[Inputs]
    best_score: float
    evaluations: int
    invalid: int
    history: list  # score per evaluation, None for invalid
    strategy: str

    def to_json(self) -> dict:
        return {
            "strategy": self.strategy,
            "evaluations": self.evaluations,
            "invalid": self.invalid,
            "best_score": self.best_score,
        }


class FixedInputs:
    """Use inputs the user gave (``--inputs witness.npz``) instead of searching."""

    name = "given"

    def __init__(self, inputs: Inputs):
        self.inputs = inputs

    def run(self, evaluate: Evaluate, specs, ranges, seed, stop_at=None) -> SearchResult:
        score = evaluate(self.inputs)
        best = -1.0 if score is None else score
        return SearchResult(self.inputs if score is not None else None, best, 1, int(score is None), [score], self.name)
