"""The per-pass table: how much error each pass event adds, on the witness.

Relax level: the recorded snapshots are buildable models, so each event that
changed the module is measured by building the snapshot after it and the one
before it (the input module for the first): the **local** error (after vs
before) and the **cumulative** error (after vs the input module). Events that
left the module unchanged cost nothing: the snapshot before a changed event
is the one after the previous changed event, built once.

TIR level: TIR snapshots are not whole models, so each TIR event that changed
its module is measured by gating it: the full build against the full build
with that event skipped gives its local error. Gated events are not measured
in order, so a TIR row's cumulative error is where the whole build ends up:
the full build against the reference (the score the report names), not
something of the TIR level alone that would read 0 while the build is off.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Mapping, Optional

import numpy as np

from ...base.progress import Detail
from ...build.compile import optional_events
from ...base.compare import compare_outputs
from ...base.tolerance import Tolerance
from ...build.tasks import INPUT_MODULE, ModuleRun, SkipRun


@dataclasses.dataclass
class PassRow:
    id: str
    name: str
    level: str
    method: str  # "snapshot" or "gated"
    local: Optional[dict]  # {"score", "max_abs"} or None when it could not be measured
    cumulative: Optional[dict]
    note: Optional[str] = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def _error(ref: list, out: list, tol: Tolerance) -> dict:
    comparison = compare_outputs(ref, out, tol)
    max_abs = max((o.max_abs for o in comparison.outputs), default=0.0)
    return {"score": comparison.score, "max_abs": max_abs}


class SnapshotRunner:
    """Runs Relax snapshots on the witness, each built alone with the plain
    lowering: all at once on the session's workers (``start``), taken in order."""

    def __init__(self, session, witness: Mapping[str, np.ndarray]):
        self.session, self.witness = session, witness
        self._pending: dict = {}
        self._taken: dict = {}
        self.builds = 0

    def start(self, events) -> None:
        """Begin building the snapshots after ``events`` (INPUT_MODULE: the model's own module)."""
        for event in events:
            if event not in self._pending:
                self._pending[event] = self.session.attempt(ModuleRun(event, (self.witness,)))

    def run(self, event: str):
        """The outputs of the snapshot after ``event``, or why it does not build or run alone."""
        if event not in self._taken:
            self.start([event])
            attempt = self.session.take(self._pending[event], what=f"the IR after {event or 'import'}, alone")
            self.builds += 1
            self._taken[event] = attempt.outputs[0] if attempt.ok else attempt.untestable
        return self._taken[event]


class PassTable:
    """The per-pass table on one witness. ``start`` sets every build it needs
    going at once on the session's workers (snapshots and gated TIR events
    alike, so no worker idles between the two levels); ``rows`` reads them as
    they are done. The caller works meanwhile (trace localizes the culprit)."""

    def __init__(self, session, witness: Mapping[str, np.ndarray], tol: Tolerance):
        self.session, self.witness, self.tol = session, witness, tol
        self.progress = RowProgress(session.progress)
        self.runner = SnapshotRunner(session, witness)
        snapshots = session.optimized.snapshots
        self.relax_events = [e for e in session.events if e.level == "relax" and not e.wrapper and "/" not in e.id
                             and e.changed and e.id in snapshots]
        self.tir_events = [e for e in optional_events(session.events) if e.level == "tir" and e.changed]
        self._gated: list = []
        self.gated_builds = 0

    def start(self) -> None:
        self.runner.start([INPUT_MODULE] + [e.id for e in self.relax_events])
        if self.tir_events:
            # the full build's run first: a gated build that compiles alike shares it (build/workers/share.py)
            self.session.runs.optimized_outputs(self.witness)
            self._gated = [self.session.attempt(SkipRun(frozenset([e.id]), (self.witness,))) for e in self.tir_events]

    @property
    def snapshot_builds(self) -> int:
        return self.runner.builds

    def rows(self) -> list:
        """The Relax rows, then the TIR rows (``start`` first)."""
        self.progress.begin(len(self.relax_events) + 1 + len(self.tir_events))
        rows = self._relax_rows()
        before = self.session.build_count
        rows += self._tir_rows()
        self.gated_builds = self.session.build_count - before
        return rows

    def _relax_rows(self) -> list:
        """Rows for the Relax-level events that changed the module."""
        first = self.runner.run(INPUT_MODULE)
        self.progress.row("the imported module")
        if isinstance(first, str):
            return []
        previous = first
        rows = []
        for event in self.relax_events:
            out = self.runner.run(event.id)
            self.progress.row(event.id)
            if isinstance(out, str):
                rows.append(PassRow(event.id, event.name, "relax", "snapshot", None, None,
                                    f"the snapshot after it does not build on its own: {out}"))
                continue
            rows.append(PassRow(event.id, event.name, "relax", "snapshot", _error(previous, out, self.tol),
                                _error(first, out, self.tol)))
            previous = out
        return rows

    def _tir_rows(self) -> list:
        """Rows for the optional TIR events that changed their module, by gating."""
        if not self.tir_events:
            return []
        session, witness, tol = self.session, self.witness, self.tol
        full = session.runs.optimized_outputs(witness)
        cumulative = _error(session.runs.reference_outputs(witness), full, tol)
        rows = []
        for event, started in zip(self.tir_events, self._gated):
            attempt = session.take(started, what=f"skipping {event.id}")
            self.progress.row(event.id)
            if not attempt.ok:
                rows.append(PassRow(event.id, event.name, "tir", "gated", None, cumulative,
                                    f"the build without it fails: {attempt.untestable}"))
                continue
            rows.append(PassRow(event.id, event.name, "tir", "gated", _error(attempt.outputs[0], full, tol),
                                cumulative))
        return rows


class RowProgress:
    """One progress line per table row, with how many are left and about how
    long they take at the pace so far (rows are built at once on the workers,
    so the pace is what reading them in order shows)."""

    def __init__(self, progress: Callable[[str], None]):
        self.progress = progress
        self.total, self.done, self.started = 0, 0, 0.0

    def begin(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.perf_counter()

    def row(self, what: str) -> None:
        self.done += 1
        spent = time.perf_counter() - self.started
        left = spent / self.done * (self.total - self.done)
        eta = f", about {left:.0f} s left" if self.done < self.total else ""
        self.progress(Detail(f"per-pass table: row {self.done}/{self.total} ({what}) measured{eta}"))
