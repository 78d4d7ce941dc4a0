"""Where a build can start again inside its Relax phase: what every instrument
had seen just before each top-level Relax event.

A build that skips a Relax event F runs, up to F, what the pipeline as written
ran, on the same modules: the module F receives is the recorder's snapshot of
the event before it. ``Checkpoints`` (in the recorded build as written, first
of its instruments) keeps, at the proposal of each optional Relax event, what
the recorder and the gate had seen (``EventCheckpoint``). ``FastForward``
(first of a resumed build's instruments) lets the pipeline run again on that
snapshot: it says no to every event before F (their nested passes never fire)
and yes to the wrappers, so TVM's pipeline objects get back to where F runs;
at F's proposal it puts every instrument back where the checkpoint says, before
they see F, so ids, indices and the gate's trace are those of a full build.
What the instruments saw of the events said no to is replaced with it.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Callable, Optional

import tvm

from .base import EventInstrument
from .catalog import is_optional
from .events import EventPath


@dataclasses.dataclass(frozen=True)
class EventCheckpoint:
    """What the instruments of a build had seen just before ``event_id`` was proposed."""

    event_id: str
    index: int  # the event's index in the build as written
    path: EventPath  # a copy: every instrument's path was this one
    recorder: tuple  # PassRecorder.checkpoint()
    gate: tuple  # PassGate.checkpoint()


@tvm.instrument.pass_instrument
class Checkpoints(EventInstrument):
    """Keeps an ``EventCheckpoint`` before each optional Relax event of the
    build (``taken``, by event id). It must come first: the recorder and the
    gate it reads have not seen the event yet when it does."""

    def __init__(self, recorder, gate):
        super().__init__()
        self.recorder, self.gate = recorder, gate
        self.taken: dict = {}

    def decide(self, event, mod):
        if self.path.phase == "relax" and is_optional(event):
            self.taken[event.id] = EventCheckpoint(event.id, event.index, copy.deepcopy(self.recorder.path),
                                                   self.recorder.checkpoint(), self.gate.checkpoint())
        return True


@tvm.instrument.pass_instrument
class FastForward(EventInstrument):
    """Runs a pipeline again up to the event of ``checkpoint`` without running
    any event before it; ``resume()``, called at that event's proposal, puts
    the other instruments back where the checkpoint says. ``reached``: whether
    it was (a pipeline that never proposed it again ran nothing: not a build)."""

    def __init__(self, checkpoint: EventCheckpoint, resume: Callable[[EventCheckpoint], None]):
        super().__init__()
        self.checkpoint, self._resume = checkpoint, resume
        self.reached = False

    def decide(self, event, mod):
        if self.reached:
            return True
        if event.id == self.checkpoint.event_id and "/" not in event.id:
            self.reached = True
            self._resume(self.checkpoint)
            return True
        return event.wrapper  # the module it gets is past every event before the checkpoint's


def restore(instruments, recorder, gate, checkpoint: EventCheckpoint, forward: Optional[FastForward] = None) -> None:
    """Every instrument of ``instruments`` (``forward`` aside) where ``checkpoint`` says."""
    for instrument in instruments:
        if instrument is not forward:
            instrument.path = copy.deepcopy(checkpoint.path)
    recorder.resume_from(checkpoint.recorder)
    gate.resume_from(checkpoint.gate)
