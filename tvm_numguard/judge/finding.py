"""A Finding: what one check of one model found, as plain typed data.

The engine (engine.py) makes Findings; ``Report.from_finding`` is the only
place a report document is made of one; trace, the guard and replay read
Findings (or, for a saved report, the same BisectResult back from JSON), and
``Finding.blame()`` (BisectResult.blame: one rule) says what to blame and
what to switch off. Findings hold no TVM objects: they pickle, so they can
travel between processes. A Finding and everything it holds are immutable
(frozen records, tuples, ``base/frozen.FrozenDict``, read-only arrays:
``tests/test_immutable.py`` walks real ones), so a Finding a caller holds
never changes under it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional, Protocol

from ..base.frozen import freeze_fields
from ..base.words import PassVerdict, Stage
from ..locate.bisect.result import Blame, BisectResult, blame_of
from ..ir.instrument.events import PassEvent
from ..ir.model import InputSpec, model_args
from ..locate.options import Options
from ..ir.pipeline import CompileConfig
from .rangecheck.domains import InvalidCall
from ..locate import InputRange, SearchResult
from ..build.attempts import WorkerInfo
from ..base.compare import Comparison
from .oracle import OracleJudgement
from .import_stage import ImportJudgement
from .cpu_reference import CpuJudgement
from .determinism import Nondeterminism
from .stages import stage_verdicts

# the pass question's (base/words.PassVerdict); "unjudged": nothing can be judged against the witness's
# reference (it is not finite there, or the builds give other outputs on the same inputs: Finding.pass_note)
VERDICTS = tuple(v.value for v in PassVerdict)
# where a difference can come in, in the order a model meets them; "determinism": a build that gives
# other outputs on the same inputs (a finding of its own: Finding.nondeterminism)
STAGES = tuple(s.value for s in Stage)


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """Which model was checked: where it came from, its bytes' sha256, its inputs (InputSpec)."""

    source: str
    sha256: str
    inputs: tuple
    dims: str = "static"  # how dynamic dimensions were imported (model.Model.dims)

    @classmethod
    def of(cls, model) -> "ModelInfo":
        return cls(model.source, model.sha256, tuple(model.inputs), model.dims)

    @classmethod
    def from_json(cls, data) -> "ModelInfo":
        return cls(data["source"], data["sha256"], tuple(InputSpec.from_json(s) for s in data["inputs"]),
                   data.get("dims", "static"))

    def to_json(self) -> dict:
        return {"source": self.source, "sha256": self.sha256, "inputs": [s.to_json() for s in self.inputs],
                "dims": self.dims}

    def to_args(self) -> list:
        return model_args(self.source, self.inputs, self.dims)


@dataclasses.dataclass(frozen=True)
class SearchOutcome:
    """The search behind a witness. ``result``: the search whose best input is
    the witness; ``budget``: the budget as the user gave it (None: the inputs
    were given, nothing was searched); ``invalid_causes``: rangecheck.InvalidCall for
    the inputs on which the reference was not finite; ``outputs_constant``: the
    reference gave the same outputs on every valid input (they ignore the
    inputs); ``searches``: every search's result (``numguard search``)."""

    result: SearchResult
    budget: Optional[str]
    invalid_causes: list = dataclasses.field(default_factory=list)
    outputs_constant: bool = False
    searches: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        freeze_fields(self, "invalid_causes", "searches")


@dataclasses.dataclass(frozen=True)
class BuildCount:
    builds: int  # every compile the session made, snapshot builds included
    build_seconds: float
    total_s: float
    optimized_build_s: float


@dataclasses.dataclass(frozen=True)
class RangeCheckOutcome:
    """The static range check a search was aimed with: ``result`` (rangecheck.check.CheckResult),
    and the positions of its pipeline warnings that the witness reaches, whatever
    the verdict (a fix's verification asks them of a clean witness; a report lists
    them beside a difference: the violation lies where the check warned);
    ``error``: why there is no result."""

    result: Optional[object] = None
    reached: tuple = ()
    error: Optional[str] = None

    def __post_init__(self):
        freeze_fields(self, "reached")


class Documented(Protocol):
    """What a stage of a layer above adds to a Finding (the trace, the guard's info): this layer
    only writes it into the report, as its document (docs/architecture.md's layers)."""

    def to_json(self) -> dict: ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class Finding:
    """What one check found. Built once, by keywords (``engine.judge``); each
    later stage (the bisection, the trace, the guard, the counts) returns a new
    Finding with ``dataclasses.replace``, so a Finding a caller holds never
    changes under it."""

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
    verdict: PassVerdict
    bisection: Optional[BisectResult] = None
    counts: Optional[BuildCount] = None
    trace: Optional[Documented] = None  # api.trace.tracer.TraceResult
    guard: Optional[Documented] = None  # api.guard.guard_report.GuardInfo
    workers: Optional[WorkerInfo] = None  # how the builds were made
    replay: Optional[str] = None  # how to rerun, when not the CLI line a report makes itself
    range_check: Optional["RangeCheckOutcome"] = None  # what numguard check said before the search
    imports: Optional[ImportJudgement] = None  # TVM's reference against the model's framework on the witness
    cpu_reference: Optional[CpuJudgement] = None  # the target's build against the LLVM build (targets but llvm)
    nondeterminism: Optional[Nondeterminism] = None  # a build that gave other outputs on the same inputs
    pass_note: Optional[str] = None  # why the pass question is "unjudged"

    def __post_init__(self):
        freeze_fields(self, "ranges", "events", "witness")
        object.__setattr__(self, "verdict", PassVerdict(self.verdict))

    @property
    def searched_witness(self) -> dict:
        """The witness of a finding a search made (one read back from a report has none)."""
        assert self.witness is not None, "a finding read back from a report has no witness"
        return self.witness

    @property
    def violation(self) -> bool:
        """A pass makes the optimized build differ from the reference (what a bisection blames)."""
        return self.verdict == "violation"

    @property
    def import_differs(self) -> bool:
        """TVM's import computes other numbers or shapes than the model's framework."""
        return self.imports is not None and self.imports.differs

    @property
    def at_fault(self) -> list:
        """The stages (STAGES) that make TVM compute other numbers than the model: a
        check fails (exit 1) when any does. Lowering is never one: its error is a
        property of float32, reported, never a failure."""
        return [stage for stage, verdict in stage_verdicts(self).items() if verdict.at_fault]

    def attribution(self) -> dict:
        """Each stage's word (``judge/stages``): import (ImportVerdict), pass
        (PassVerdict), target, lowering ("differs" from TVM's float64 build,
        "agrees", "unanswered"), determinism."""
        return {stage.value: verdict.word for stage, verdict in stage_verdicts(self).items()}

    @classmethod
    def from_json(cls, document: Mapping, sections: Optional[Mapping[str, Callable]] = None) -> "Finding":
        """A report document read back into the Finding it was made of.

        A document does not keep everything: the witness's arrays (its file is
        the ``witness.path`` a report names once saved), the search's inputs,
        the events' module hashes, the range check's result (only its
        pipeline warnings are written: ``range_check`` stays None), a
        bisection's event lists (ids it blamed are kept). The sections of the
        layers above (``trace``, ``guard``) are read by ``sections``: section
        name -> its reader (e.g. ``{"guard": GuardInfo.from_json}``)."""
        cfg, search = document["configuration"], document["search"]
        builds, timings = document.get("builds"), document.get("timings")
        found = SearchOutcome(SearchResult.from_json(search), search.get("budget"),
                              [InvalidCall.from_json(c) for c in search.get("invalid_causes", [])],
                              bool(search.get("outputs_constant")),
                              [SearchResult.from_json(r) for r in search.get("searches", search.get("strategies", []))])
        layered = {name: reader(document[name]) for name, reader in (sections or {}).items()
                   if document.get(name) is not None}
        return cls(command=document["command"], model=ModelInfo.from_json(document["model"]),
                   config=CompileConfig.from_json(cfg), options=Options.from_json(cfg),
                   ranges={n: InputRange.from_json(r) for n, r in cfg["ranges"].items()},
                   events=[PassEvent.from_json(row) for row in document["events"]],
                   optional=frozenset(row["id"] for row in document["events"] if row["optional"]),
                   search=found, witness=None, comparison=Comparison.from_json(document["metrics"]),
                   oracle=OracleJudgement.from_json(document.get("oracle")), verdict=document["verdict"],
                   bisection=BisectResult.from_json(document.get("bisection")),
                   counts=BuildCount(builds["builds"], builds["build_seconds"], timings["total_s"],
                                     timings["optimized_build_s"]) if builds and timings else None,
                   workers=WorkerInfo.from_json(document.get("workers")), replay=document.get("replay"),
                   imports=ImportJudgement.from_json(document.get("framework")),
                   cpu_reference=CpuJudgement.from_json(document.get("cpu_reference")),
                   nondeterminism=Nondeterminism.from_json(document.get("nondeterminism")),
                   pass_note=document.get("pass_note"), **layered)

    def blame(self) -> Blame:
        """What this finding blames and what a fix switches off (see bisect.result.Blame)."""
        return blame_of(self.bisection)
