"""The per-pass shadow table: how much error each pass event adds, on the witness.

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
from typing import Mapping, Optional

import numpy as np
import tvm

from ..errors import summarize_error
from ..shadow.build import optional_events, run_build
from ..shadow.compare import Tolerance, compare_outputs


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
    """Runs Relax snapshots on the witness, each built alone by the session
    (which memoizes and counts the builds)."""

    def __init__(self, session, witness: Mapping[str, np.ndarray]):
        self.session, self.witness = session, witness
        self.outputs: dict = {}
        self.builds = 0

    def run(self, mod: tvm.IRModule):
        """The outputs of ``mod`` built with the plain lowering, or an error string."""
        build = self.session.build_module(mod)
        if id(build) not in self.outputs:
            self.builds += 1
            if not build.ok:
                self.outputs[id(build)] = build.error
            else:
                try:
                    self.outputs[id(build)] = run_build(build, self.session.model.input_names(), self.witness)
                except Exception as err:  # a snapshot that builds but does not run alone
                    self.outputs[id(build)] = summarize_error(err)
        return self.outputs[id(build)]


def relax_rows(session, witness, tol: Tolerance, runner: Optional[SnapshotRunner] = None) -> tuple:
    """(rows, runner) for the Relax-level events that changed the module."""
    runner = runner or SnapshotRunner(session, witness)
    snapshots = session.optimized.snapshots
    first = runner.run(session.model.mod)
    if isinstance(first, str):
        return [], runner
    previous = first
    rows = []
    for event in session.events:
        if event.level != "relax" or event.wrapper or "/" in event.id or not event.changed:
            continue
        if event.id not in snapshots:
            continue
        out = runner.run(snapshots[event.id])
        if isinstance(out, str):
            rows.append(PassRow(event.id, event.name, "relax", "snapshot", None, None,
                                f"the snapshot after it does not build on its own: {out}"))
            continue
        rows.append(PassRow(event.id, event.name, "relax", "snapshot", _error(previous, out, tol),
                            _error(first, out, tol)))
        previous = out
    return rows, runner


def tir_rows(session, witness, tol: Tolerance) -> list:
    """Rows for the optional TIR events that changed their module, by gating."""
    tir = [e for e in optional_events(session.events) if e.level == "tir" and e.changed]
    if not tir:
        return []
    full = session.optimized_outputs(witness)
    cumulative = _error(session.reference_outputs(witness), full, tol)
    rows = []
    for event in tir:
        build = session.build([event.id])
        if not build.ok:
            rows.append(PassRow(event.id, event.name, "tir", "gated", None, cumulative,
                                f"the build without it fails: {build.error}"))
            continue
        rows.append(PassRow(event.id, event.name, "tir", "gated", _error(session.run(build, witness), full, tol),
                            cumulative))
    return rows
