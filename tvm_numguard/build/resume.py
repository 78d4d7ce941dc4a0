"""Where a build starts: the Relax phase of the pipeline as written, or a snapshot inside it.

A skip set changes a build from its first skipped event on; up to it, the
build runs what the pipeline as written ran, on the same modules. So a build
that skips only TIR-phase events starts from the end of the Relax phase
(``RelaxPhase.resume``: about half of a build's time on SqueezeNet), and one
that skips a Relax event starts from the module that event received in the
build as written (``RelaxPhase.start_of``: the recorder's snapshot of the
event before it), its pipeline fast-forwarded to that event
(``ir/instrument/checkpoint.py``). Either way the instruments go on from
copies of what they had seen there, so event ids, indices and the gate's trace
are what a full build gives (tests/test_build_reuse.py compares them).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Optional, Sequence

import tvm

from ..ir.instrument import PassGate, PassRecorder
from ..ir.instrument.catalog import EVERY_RULE_EVENT
from ..ir.instrument.checkpoint import EventCheckpoint
from ..ir.instrument.events import EventPath
from ..ir.relax_ir import pristine


@dataclasses.dataclass(frozen=True)
class RelaxPhase:
    """Where a build stood when its Relax pipeline ended (the module it lowered
    to and what its instruments had seen), and, for a recorded build, where it
    stood before each optional Relax event (``checkpoints``, with the module
    each received: ``inputs``)."""

    module: tvm.IRModule  # pristine: relax.build never sees this object
    path: EventPath  # the instruments' event path at the phase change (they all see the same hooks)
    events: tuple  # the recorder's events so far
    trace: tuple  # the gate's trace lines so far
    skipped: tuple  # the gate's skipped ids so far
    relax_ids: frozenset  # every event id of the Relax phase, skipped ones too
    checkpoints: dict = dataclasses.field(default_factory=dict)  # event id -> EventCheckpoint
    inputs: dict = dataclasses.field(default_factory=dict)  # event id -> the module it received (a snapshot)

    @classmethod
    def of(cls, lowered, gate: PassGate, recorder: PassRecorder, checkpoints: Optional[dict] = None) -> "RelaxPhase":
        path, events = copy.deepcopy((recorder.path, recorder.events))
        ids = frozenset(e.id for e in events) | frozenset(e.id for e in path.skipped_events)
        if path.pending is not None:
            ids |= {path.pending.id}
        inputs = _inputs(events, recorder.snapshots, checkpoints or {})
        return cls(pristine(lowered), path, tuple(events), tuple(gate.trace), tuple(gate.skipped), ids,
                   {k: v for k, v in (checkpoints or {}).items() if k in inputs}, inputs)

    def covers(self, skip: frozenset) -> bool:
        """Whether a build skipping ``skip`` runs this Relax phase unchanged."""
        return not (skip & self.relax_ids)

    def serves(self, request) -> bool:
        """Whether ``compile_model`` may start from the end of this phase for
        ``request`` (a ``BuildRequest``): its skip set leaves the phase
        unchanged, and it records no Relax snapshots, has no user instruments
        (both need the phase to run) and is no reference (which decides in the
        phase what it skips)."""
        return _plain(request) and self.covers(request.skip)

    def start_of(self, request, config) -> Optional[EventCheckpoint]:
        """The checkpoint a build of ``request`` may start its Relax phase from:
        its first skipped event's, where that is an optional Relax event whose
        input is known; None where the phase must run whole (a recorded build,
        a user's instruments, a reference, a fix, which acts inside the phase,
        or a PassContext's required passes, which no instrument can skip)."""
        relax_skip = request.skip & self.relax_ids
        if not (_plain(request) and relax_skip) or EVERY_RULE_EVENT in request.skip:
            return None
        if config.fix is not None or config.context_options().get("required_pass"):
            return None
        if not relax_skip <= self.checkpoints.keys():
            return None
        return min((self.checkpoints[e] for e in relax_skip), key=lambda c: c.index)

    def can_start(self, request, config) -> bool:
        return self.serves(request) or self.start_of(request, config) is not None

    def input_of(self, checkpoint: EventCheckpoint) -> tvm.IRModule:
        """The module the checkpoint's event received in the build as written (a copy of it to build on)."""
        return pristine(self.inputs[checkpoint.event_id])

    def resume(self, gate: PassGate, recorder: PassRecorder, instruments: Sequence) -> tvm.IRModule:
        """Put the instruments (``instruments``: all of them, the gate and the
        recorder included) where this phase left them; returns the module to build."""
        for instrument in instruments:
            instrument.path = copy.deepcopy(self.path)
        recorder.events = list(copy.deepcopy(self.events))
        gate.trace.extend(self.trace)
        gate.skipped.extend(self.skipped)
        return pristine(self.module)


def _plain(request) -> bool:
    return not request.record and not request.instruments and not request.reference


def _inputs(events, snapshots: dict, checkpoints: dict) -> dict:
    """The module each checkpointed event received: the snapshot of the last
    top-level event that ran before it, where every such event has one (a
    top-level TIR pass in the Relax phase keeps none: nothing after it is known)."""
    inputs, last, known = {}, None, True
    for event in sorted(events, key=lambda e: e.index):
        if "/" in event.id or event.wrapper:
            continue
        if event.id in checkpoints and known and last is not None:
            inputs[event.id] = last
        if event.ran:
            last = snapshots.get(event.id)
            known = known and last is not None
    return inputs
