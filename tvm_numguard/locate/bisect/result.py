"""What a bisection found, and the one rule for what it blames.

``BisectResult.blame()`` is the only place that decides which events a
finding blames, which a fix switches off and which one a trace localizes:
the report, the guard, trace and replay all ask it.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

from ...base.frozen import freeze_fields

STATUSES = ("culprit", "minimal_set", "ambiguous", "nondeterministic")


@dataclasses.dataclass(frozen=True)
class Blame:
    """Who a finding blames.

    ``kind``: "culprit" (one event; skipping it alone clears the violation),
    "minimal_set" (no single event does; skipping these together does),
    "pipeline" (no set could be isolated: only the reference build is safe) or
    "none" (there was no violation to blame). ``disable``: the events a fix
    switches off (empty for "pipeline": every optional event). ``localize``:
    the one event whose effect a trace explains (the first bad prefix's last
    event, else the last event of the minimal set), or None."""

    kind: str
    disable: tuple = ()
    localize: Optional[str] = None

    def describe(self) -> str:
        if self.kind == "culprit":
            return f"pass {self.disable[0]}"
        if self.kind == "minimal_set":
            return "passes " + " + ".join(self.disable)
        if self.kind == "pipeline":
            return "the pipeline (no pass could be isolated)"
        return "nothing"


NO_BLAME = Blame("none")


@dataclasses.dataclass(frozen=True)
class Probe:
    k: int
    status: str
    score: Optional[float]
    reason: Optional[str]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class BisectResult:
    status: str  # one of STATUSES
    strategy: str
    events: list  # optional event ids, in order
    changed: list = dataclasses.field(default_factory=list)  # those that changed the module
    culprit: Optional[str] = None  # the first bad prefix's last event (confirmed or not)
    score_before: Optional[float] = None  # f(k-1): culprit not run
    score_after: Optional[float] = None  # f(k): culprit run
    confirmed: Optional[bool] = None  # None: skipping it alone could not be tested
    confirm_score: Optional[float] = None
    confirm_reason: Optional[str] = None  # why skipping it alone could not be tested
    minimal_set: list = dataclasses.field(default_factory=list)
    minimal_set_complete: bool = True
    suspects: list = dataclasses.field(default_factory=list)  # when ambiguous
    probes: list = dataclasses.field(default_factory=list)
    builds: int = 0

    def __post_init__(self):
        freeze_fields(self, "events", "changed", "minimal_set", "suspects", "probes")

    def blame(self) -> Blame:
        localize = self.culprit or (self.minimal_set[-1] if self.minimal_set else None)
        if self.status == "culprit" and self.culprit:
            return Blame("culprit", (self.culprit,), self.culprit)
        if self.status == "minimal_set" and self.minimal_set:
            return Blame("minimal_set", tuple(self.minimal_set), localize)
        return Blame("pipeline", (), localize)

    def to_json(self, describe) -> dict:
        """The report's ``bisection`` section; ``describe(event_id)`` gives an event's
        {"id", "name", "level", "opt_level"}."""
        return {
            "status": self.status,
            "strategy": self.strategy,
            "optional_events": len(self.events),
            "changed_events": len(self.changed),
            "culprit": describe(self.culprit) if self.culprit else None,
            "score_before": self.score_before,
            "score_after": self.score_after,
            "confirmed": self.confirmed,
            "confirm_score": self.confirm_score,
            "confirm_reason": self.confirm_reason,
            "minimal_set": [describe(i) for i in self.minimal_set],
            "minimal_set_complete": self.minimal_set_complete,
            "suspects": list(self.suspects),
            "builds": self.builds,
            "probes": [p.to_json() for p in self.probes],
        }

    @classmethod
    def from_json(cls, data: Optional[Mapping]) -> Optional["BisectResult"]:
        """Back from a report's ``bisection`` section (event lists are ids only;
        ``events``/``changed`` keep their counts as placeholders)."""
        if not data:
            return None
        from ...base.numbers import from_json_number

        return cls(status=data["status"], strategy=data["strategy"], events=[None] * data["optional_events"],
                   changed=[None] * data["changed_events"],
                   culprit=data["culprit"]["id"] if data.get("culprit") else None,
                   score_before=from_json_number(data.get("score_before")),
                   score_after=from_json_number(data.get("score_after")), confirmed=data.get("confirmed"),
                   confirm_score=from_json_number(data.get("confirm_score")),
                   confirm_reason=data.get("confirm_reason"),
                   minimal_set=[e["id"] for e in data.get("minimal_set") or []],
                   minimal_set_complete=data.get("minimal_set_complete", True),
                   suspects=list(data.get("suspects") or []),
                   probes=[Probe(p["k"], p["status"], from_json_number(p["score"]), p["reason"])
                           for p in data.get("probes") or []],
                   builds=data.get("builds", 0))


def blame_of(bisection: Optional[BisectResult]) -> Blame:
    """The blame of a finding whose bisection is ``bisection`` (None: nothing bisected)."""
    return NO_BLAME if bisection is None else bisection.blame()


def document_blame(section: Optional[Mapping]) -> Blame:
    """The blame of a report document whose ``bisection`` section is ``section``."""
    return blame_of(BisectResult.from_json(section))
