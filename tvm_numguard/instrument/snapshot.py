"""EventSnapshot: the module just before and just after one pass event."""

from __future__ import annotations

import tvm

from ..relax_ir import pristine
from .events import EventPath


@tvm.instrument.pass_instrument
class EventSnapshot:
    """Keeps the module that the event ``event_id`` received (``before``) and
    returned (``after``); for TIR events these are TIR modules, which a
    recorder does not keep. Use it in a build that skips nothing: ids of
    events after a skipped one are only stable for the instruments that the
    skipping gate precedes."""

    def __init__(self, event_id: str):
        self.event_id = event_id
        self.path = EventPath()
        self.before = None
        self.after = None

    def should_run(self, mod, info):
        self.path.propose(info.name, info.opt_level)
        return True

    def run_before_pass(self, mod, info):
        if self.path.enter(info.name, info.opt_level).id == self.event_id:
            self.before = pristine(mod)  # the pass may edit it in place

    def run_after_pass(self, mod, info):
        event = self.path.leave(info.name)
        if event is not None and event.id == self.event_id:
            self.after = pristine(mod)
