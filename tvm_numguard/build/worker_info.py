"""The report's ``workers`` section: how the builds were made, and which
configurations could not be tested and why."""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

from ..base.frozen import freeze_fields
from ..ir.instrument.catalog import EVERY_RULE_EVENT


@dataclasses.dataclass(frozen=True)
class UntestableBuild:
    """A configuration that did not build, did not run, or took its worker down."""

    configuration: str
    reason: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data) -> "UntestableBuild":
        return cls(**data)


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    mode: str  # "workers" or "in-process"
    jobs: int
    build_timeout_s: Optional[float]
    max_memory_mib: int
    peak_worker_mib: float  # the most private memory one worker held (0 in-process)
    speculative_builds: int  # built ahead for a question the search did not ask after all
    untestable: list = dataclasses.field(default_factory=list)  # of UntestableBuild
    reference: str = "in-process"  # where the reference was built and run: "worker" (one of its own) or "in-process"

    def __post_init__(self):
        freeze_fields(self, "untestable")

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["untestable"] = [u.to_json() for u in self.untestable]
        return data

    @classmethod
    def from_json(cls, data) -> Optional["WorkerInfo"]:
        if data is None:
            return None
        return cls(**{**data, "untestable": [UntestableBuild.from_json(u) for u in data["untestable"]]})


def describe_skip(skip: frozenset, optional: Sequence[str]) -> str:
    """A skip set in words: a prefix of the optional events, or the events skipped."""
    skip = skip - {EVERY_RULE_EVENT}  # goes with the rule events it names, says nothing more
    if not skip:
        return "the pipeline as written"
    order = [e for e in optional if e in skip] + sorted(e for e in skip if e not in optional)
    k = len(optional) - len(order)
    if order == list(optional[k:]) and k > 0:
        return f"prefix {k}/{len(optional)}: the first {k} optional events run, the rest skipped"
    shown = ", ".join(order[:6]) + (f" and {len(order) - 6} more" if len(order) > 6 else "")
    return f"skipping {shown}"
