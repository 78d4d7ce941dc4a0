"""A session's attempts: builds that may crash, made in worker processes.

``Attempts`` owns the session's build service (forked anew when what workers
inherit changed: ``generation``), the run share its workers use, and what the
report's ``workers`` section says: the untestable configurations, the peak
worker memory, the builds made ahead and never asked for.

That section is a ``WorkerInfo``: how the builds were made, and which
configurations could not be tested and why (``UntestableBuild``);
``describe_skip`` says a skip set in words, as a bisection names one.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from ..base.frozen import freeze_fields
from ..ir.instrument.catalog import EVERY_RULE_EVENT
from .workers import WORKERS, Workers
from .workers.memory import MIB
from .workers.share import PIPELINE, RunShare
from .tasks import BuildService, Started, in_process


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


class Attempts:
    """The attempts of one session (``session``: what a task runs against, in a worker its copy)."""

    def __init__(self, session, workers: Workers):
        self._session = session
        self.workers = workers
        self._service: Optional[BuildService] = None
        self._share: Optional[RunShare] = None  # made with the first attempt
        self._generation = 0  # bumped when what a forked worker inherits changes
        self.speculative = 0  # builds made ahead of need and never asked for
        self.untestable: list = []  # UntestableBuild of every attempt taken that failed
        self.peak_worker_bytes = 0

    @property
    def concurrency(self) -> int:
        """How many attempts can be under way at once (in-process: one, made when taken)."""
        return self.workers.count if self.workers.mode == WORKERS else 1

    def start(self, task, built, remembered: Callable[[], list], timeout: Callable[[], float]) -> Started:
        """Start ``task``: in a worker, unless ``built`` (the build it asks
        for, at hand) only needs running. ``remembered``: the runs the share
        starts with; ``timeout``: a worker's, when the pool is forked."""
        skip = getattr(task, "skip", None) or frozenset()
        task = dataclasses.replace(task, share=self.share(remembered).directory)
        if self.workers.mode == WORKERS and not (built and built.ok):
            return self.service(timeout).submit(task, skip)
        return in_process(task, self._session, skip)

    def share(self, remembered: Callable[[], list]) -> RunShare:
        """Where attempts share the runs of builds that compiled alike; made
        with the runs of the pipeline as written that ``remembered`` gives
        ((build, inputs, outputs) each)."""
        if self._share is None:
            self._share = RunShare.create()
            for build, inputs, outputs in remembered():
                self.put(build, inputs, outputs)
        return self._share

    def put(self, build, inputs, outputs) -> None:
        """A run of the pipeline as written made in this process, shared if the share exists."""
        if self._share is not None:
            self._share.put(RunShare.key(PIPELINE, build.fingerprint, inputs), outputs)

    def taken(self, started: Started, what: Optional[str], within: Optional[float] = None):
        """The Attempt of ``started`` (a worker's waited for ``within`` seconds at
        most: ``Pending.result``); a failed one noted untestable as ``what``
        (None: not noted). Returns (attempt, whether it was a worker's build taken first now)."""
        attempt = started.result(within)
        first = started.first_taken()
        if first:
            self.note_peak(attempt.peak_private_bytes)
        if not attempt.ok and what is not None:
            note = UntestableBuild(what, attempt.untestable or "")  # set on every failed attempt
            if note not in self.untestable:
                self.untestable.append(note)
        return attempt, first

    def note_peak(self, peak_bytes: int) -> None:
        self.peak_worker_bytes = max(self.peak_worker_bytes, peak_bytes)

    def note_speculative(self) -> None:
        """A build made ahead of need was never asked for."""
        self.speculative += 1

    def service(self, timeout: Callable[[], float]) -> BuildService:
        """The worker pool, forked now if there is none or the session changed since."""
        if self._service is not None and self._service.generation != self._generation:
            self.stop()
        if self._service is None:
            self._service = BuildService(self._session, self.workers, timeout(), self._generation)
        return self._service

    def changed(self) -> None:
        """What a forked worker inherits changed: the next attempt forks anew."""
        self._generation += 1

    def stop(self) -> None:
        if self._service is not None:
            self._service.stop()
            self._service = None

    def close(self) -> None:
        self.stop()
        if self._share is not None:
            self._share.remove()
            self._share = None

    def info(self, reference_held: bool) -> WorkerInfo:
        """How builds were made, for the report's ``workers`` section."""
        service = self._service
        return WorkerInfo(self.workers.mode, self.concurrency,
                          None if service is None or service.timeout is None else round(service.timeout, 1),
                          self.workers.memory_cap // MIB, round(self.peak_worker_bytes / MIB, 1),
                          self.speculative, list(self.untestable), "worker" if reference_held else "in-process")
