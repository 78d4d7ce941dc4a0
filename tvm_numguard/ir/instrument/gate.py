"""PassGate: skips a set of pass events, and nothing else.

Like LLVM's opt-bisect gate it has one job: answer ``should_run`` for each pass
event from a skip set given by id. Events nested in a skipped event never reach
it (TVM fires no hooks inside a skipped pass), so they are skipped with it.
Every decision is kept as a trace line in the style of opt-bisect:

    BISECT: running pass (12) FuseOps#0 [relax]
    BISECT: NOT running pass (13) FuseTIR#0 [relax]

The reference build skips every optional event. ``EveryOptional`` decides
that as the events come, so the reference can be built before (or while) the
pipeline as written is, whose events a skip set by id would need.
"""

from __future__ import annotations

from typing import Iterable, Optional

import tvm

from .catalog import UNDER_TEST_BEGIN, UNDER_TEST_END, is_optional, skips_every_rule_event
from .schedule_rules import is_rule_event
from .base import EventInstrument
from .events import PassEvent


class EveryOptional:
    """The reference's skip rule, decided event by event: skip what
    ``is_optional``; with a pass under test (``bracketed``: its pipeline part
    sits between the UNDER_TEST markers), only the optional events between the
    markers. The same events as ``build.compile.optional_events`` of the
    pipeline as written, without building it first."""

    def __init__(self, bracketed: bool = False):
        # before the markers, between them, after them; without markers: always between
        self.state = "before" if bracketed else "between"

    def skips(self, event: PassEvent) -> bool:
        return self.state == "between" and is_optional(event)

    def entered(self, name: str) -> None:
        """A pass starts running (the markers always run: they are required)."""
        if name == UNDER_TEST_BEGIN and self.state == "before":
            self.state = "between"
        elif name == UNDER_TEST_END and self.state == "between":
            self.state = "after"


@tvm.instrument.pass_instrument
class PassGate(EventInstrument):
    """Skips the pass events whose ids are in ``skip``, those ``every_optional``
    skips, and every optional rule event where ``skip`` holds EVERY_RULE_EVENT."""

    def __init__(self, skip: Iterable[str] = (), every_optional: Optional[EveryOptional] = None):
        super().__init__()
        self.skip = frozenset(skip)
        self.every_rule = skips_every_rule_event(self.skip)
        self.every_optional = every_optional
        self.trace: list[str] = []
        self.skipped: list[str] = []

    def decide(self, event, mod):
        run = not (event.id in self.skip or (self.every_optional is not None and self.every_optional.skips(event))
                   or (self.every_rule and is_rule_event(event.name) and is_optional(event)))
        verb = "running" if run else "NOT running"
        self.trace.append(f"BISECT: {verb} pass ({event.index}) {event.id} [{event.level}]")
        if not run:
            self.skipped.append(event.id)
        return run

    def checkpoint(self) -> tuple:
        """Its trace and skipped ids so far (``resume_from`` goes on from them in another build)."""
        return tuple(self.trace), tuple(self.skipped)

    def resume_from(self, checkpoint: tuple) -> None:
        trace, skipped = checkpoint
        self.trace[:] = trace
        self.skipped[:] = skipped

    def entered(self, event, mod):
        if self.every_optional is not None:
            self.every_optional.entered(event.name)
