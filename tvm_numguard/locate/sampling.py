"""The interface of an input search.

An input search proposes candidates and sees their scores through an
``evaluate`` callback (score > 1 is a violation, None an invalid candidate:
the reference itself is not finite there), and returns a SearchResult.
``evaluate`` may instead return an Observation, which adds what the builds
computed; searches that aim at single output elements use it, the others
only read its score.
The searches are in searches.py; FixedInputs stands in for a search when
the user gives the inputs.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Union

from ..base.frozen import freeze_fields
from ..build.observation import Observation, score_of

Inputs = dict  # input name -> numpy array
# what ended a search whose ranges hold one input (SearchResult.stopped_by): nothing else to try
ONE_POINT = "one point"


Evaluate = Callable[[Inputs], Union[Optional[float], Observation]]


@dataclasses.dataclass(frozen=True)
class SearchResult:
    best_inputs: Optional[Inputs]
    best_score: Optional[float]  # None: no valid input
    evaluations: int
    invalid: int
    history: list  # score per evaluation, None for invalid
    search: str  # the search that made it (searches.SEARCHES), or "given"
    # what ended the search: "evaluations", "time" (the seconds limit), "target score" or
    # ONE_POINT (the ranges hold one input, evaluated once)
    stopped_by: str = "evaluations"
    # the --budget that repeats exactly these inputs (None: a seconds-only budget cannot)
    repeat_budget: Optional[str] = None

    def __post_init__(self):
        freeze_fields(self, "best_inputs", "history")

    def to_json(self) -> dict:
        return {
            "search": self.search,
            "evaluations": self.evaluations,
            "invalid": self.invalid,
            "best_score": self.best_score,
            "stopped_by": self.stopped_by,
            "repeat_budget": self.repeat_budget,
        }

    @classmethod
    def from_json(cls, data) -> "SearchResult":
        """Read back from a document, which keeps no inputs (and history only where it lists it)."""
        return cls(None, float(data["best_score"]) if data["best_score"] is not None else None,
                   int(data["evaluations"]), int(data["invalid"]), list(data.get("history", [])),
                   data.get("search", data.get("strategy")),  # "strategy": reports before 0.2
                   data.get("stopped_by", "evaluations"), data.get("repeat_budget"))


class FixedInputs:
    """Use inputs the user gave (``--inputs witness.npz``) instead of searching."""

    name = "given"

    def __init__(self, inputs: Inputs):
        self.inputs = inputs

    def run(self, evaluate: Evaluate, specs, ranges, seed, stop_at=None, aim=None) -> SearchResult:
        score = score_of(evaluate(self.inputs))
        best = -1.0 if score is None else score
        return SearchResult(self.inputs if score is not None else None, best, 1, int(score is None), [score], self.name)
