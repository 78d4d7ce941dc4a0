"""PassGate: skips a set of pass events, and nothing else.

Like LLVM's opt-bisect gate it has one job: answer ``should_run`` for each pass
event from a skip set given by id. Events nested in a skipped event never reach
it (TVM fires no hooks inside a skipped pass), so they are skipped with it.
Every decision is kept as a trace line in the style of opt-bisect:

    BISECT: running pass (12) FuseOps#0 [relax]
    BISECT: NOT running pass (13) FuseTIR#0 [relax]
"""

from __future__ import annotations

from typing import Iterable

import tvm

from .events import EventPath


@tvm.instrument.pass_instrument
class PassGate:
    """Skips the pass events whose ids are in ``skip``."""

    def __init__(self, skip: Iterable[str] = ()):
        self.skip = frozenset(skip)
        self.path = EventPath()
        self.trace: list[str] = []
        self.skipped: list[str] = []

    def set_phase(self, phase: str) -> None:
        self.path.set_phase(phase)

    def should_run(self, mod, info):
        event = self.path.propose(info.name, info.opt_level)
        run = event.id not in self.skip
        verb = "running" if run else "NOT running"
        self.trace.append(f"BISECT: {verb} pass ({event.index}) {event.id} [{event.level}]")
        if not run:
            self.skipped.append(event.id)
        return run

    def run_before_pass(self, mod, info):
        self.path.enter(info.name, info.opt_level)

    def run_after_pass(self, mod, info):
        self.path.leave(info.name)
