"""EventInstrument: what every numguard instrument shares.

TVM calls an instrument's ``should_run``, ``run_before_pass`` and
``run_after_pass`` with a pass's name; numguard's instruments all reason in
pass events (``events.EventPath``: the ids ``numguard passes`` lists). This
base class follows the path from those three hooks and hands each subclass the
event, as TVM's own ``ir/instrument.py`` hands its classes no-op hooks: a
subclass overrides only what it acts on.

Every instrument of one compilation must see every hook for its ids to agree,
so a subclass never overrides TVM's hooks themselves, only ``decide``,
``entered`` and ``left``: a class that does is refused when it is made
(``__init_subclass__``), not found out later by ids that drift apart. ``set_phase`` is called by numguard's builder
between the Relax and the TIR halves of a compilation (the TIR half restarts
the counters).
"""

from __future__ import annotations

from . import schedule_rules
from .events import EventPath, PassEvent


# TVM's hooks, which keep every instrument's path: a subclass acts through decide, entered and left
TVM_HOOKS = ("enter_pass_ctx", "exit_pass_ctx", "should_run", "run_before_pass", "run_after_pass")


class EventInstrument:
    """Follows the pass events of a compilation; ``path`` is where they stand."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        overridden = [hook for hook in TVM_HOOKS if hook in cls.__dict__]
        if overridden:
            raise TypeError(f"{cls.__name__} overrides TVM's hook{'s' if len(overridden) > 1 else ''} "
                            f"{', '.join(overridden)}: an EventInstrument acts through decide, entered and left, "
                            "so that every instrument of a compilation keeps the same event ids")

    def __init__(self):
        self.path = EventPath()

    def set_phase(self, phase: str) -> None:
        self.path.set_phase(phase)

    # TVM's hooks: they keep the path, then ask the subclass. While a context holds
    # one of numguard's instruments, dlight's rules are events of their own (schedule_rules)
    def enter_pass_ctx(self):
        schedule_rules.entered()

    def exit_pass_ctx(self):
        schedule_rules.left()

    def should_run(self, mod, info):
        return self.decide(self.path.propose(info.name, info.opt_level), mod)

    def run_before_pass(self, mod, info):
        if info.name == schedule_rules.RULE_WRAPPER:
            schedule_rules.kernels_of(mod)
        self.entered(self.path.enter(info.name, info.opt_level), mod)

    def run_after_pass(self, mod, info):
        event = self.path.leave(info.name)
        if event is not None:  # a pass that raised never entered a frame of its own
            self.left(event, mod)

    # the subclass's hooks, no-ops here
    def decide(self, event: PassEvent, mod) -> bool:
        """Should the event run? Every instrument must say yes for it to run."""
        return True

    def entered(self, event: PassEvent, mod) -> None:
        """The event starts, on ``mod``."""

    def left(self, event: PassEvent, mod) -> None:
        """The event returned ``mod``."""
