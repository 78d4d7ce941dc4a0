"""A Finding: what one check of one model found, as plain typed data.

The engine (engine.py) makes Findings; ``Report.from_finding`` is the only
place a report document is made of one; trace, the guard and replay read
Findings (or, for a saved report, the same BisectResult back from JSON), and
``Finding.blame()`` (BisectResult.blame: one rule) says what to blame and
what to switch off. Findings hold no TVM objects: they pickle, so they can
travel between processes.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from .bisect.result import Blame, BisectResult, blame_of
from .model import model_args
from .options import Options
from .pipeline import CompileConfig
from .search import SearchResult
from .shadow.compare import Comparison
from .shadow.oracle import OracleJudgement

VERDICTS = ("violation", "clean", "benign")


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """Which model was checked: where it came from, its bytes' sha256, its inputs (InputSpec)."""

    source: str
    sha256: str
    inputs: tuple

    @classmethod
    def of(cls, model) -> "ModelInfo":
        return cls(model.source, model.sha256, tuple(model.inputs))

    def to_json(self) -> dict:
        return {"source": self.source, "sha256": self.sha256, "inputs": [s.to_json() for s in self.inputs]}

    def to_args(self) -> list:
        return model_args(self.source, self.inputs)


@dataclasses.dataclass
class SearchOutcome:
    """The search behind a witness. ``result``: the search whose best input is
    the witness; ``budget``: the budget as the user gave it (None: the inputs
    were given, nothing was searched); ``invalid_causes``: ops.InvalidCall for
    the inputs on which the reference was not finite; ``outputs_constant``: the
    reference gave the same outputs on every valid input (they ignore the
    inputs); ``strategies``: every strategy's result (``numguard search``)."""

    result: SearchResult
    budget: Optional[str]
    invalid_causes: list = dataclasses.field(default_factory=list)
    outputs_constant: bool = False
    strategies: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class BuildCount:
    builds: int  # every compile the session made, snapshot builds included
    build_seconds: float
    total_s: float
    optimized_build_s: float


@dataclasses.dataclass
class RangeCheckOutcome:
    """The static range check a search was aimed with: ``result`` (ops.check.CheckResult),
    and the positions of its pipeline warnings that the witness reaches (the
    violation lies where the check warned); ``error``: why there is no result."""

    result: Optional[object] = None
    reached: tuple = ()
    error: Optional[str] = None


@dataclasses.dataclass
class Finding:
    command: str  # "bisect", "search", "trace" or "guard"
    model: ModelInfo
    config: CompileConfig
    options: Options
    ranges: dict  # input name -> search.InputRange
    events: list  # instrument.PassEvent of the build as written (without IR)
    optional: frozenset  # ids of the events a bisection may skip
    search: SearchOutcome
    witness: Optional[dict]  # input name -> numpy array
    comparison: Comparison  # optimized vs reference on the witness
    oracle: Optional[OracleJudgement]
    verdict: str  # one of VERDICTS
    bisection: Optional[BisectResult] = None
    counts: Optional[BuildCount] = None
    trace: Optional[object] = None  # trace.tracer.TraceResult
    guard: Optional[object] = None  # guard.guard.GuardInfo
    workers: Optional[object] = None  # workers.info.WorkerInfo: how the builds were made
    replay: Optional[str] = None  # how to rerun, when not the CLI line a report makes itself
    range_check: Optional["RangeCheckOutcome"] = None  # what numguard check said before the search


    @property
    def violation(self) -> bool:
        return self.verdict == "violation"

    def blame(self) -> Blame:
        """What this finding blames and what a fix switches off (see bisect.result.Blame)."""
        return blame_of(self.bisection)
