"""EventSnapshot: the module just before and just after one pass event."""

from __future__ import annotations

import tvm

from ..relax_ir import pristine
from .base import EventInstrument


@tvm.instrument.pass_instrument
class EventSnapshot(EventInstrument):
    """Keeps the module that the event ``event_id`` received (``before``) and
    returned (``after``); for TIR events these are TIR modules, which a
    recorder does not keep. Use it in a build that skips nothing: ids of
    events after a skipped one are only stable for the instruments that the
    skipping gate precedes."""

    def __init__(self, event_id: str):
        super().__init__()
        self.event_id = event_id
        self.before = None
        self.after = None

    def entered(self, event, mod):
        if event.id == self.event_id:
            self.before = pristine(mod)  # the pass may edit it in place

    def left(self, event, mod):
        if event.id == self.event_id:
            self.after = pristine(mod)
