"""FixInstrument: applies a FixPlan while a compilation runs.

It keeps its own event path (the ids every numguard instrument gives), so it
finds a culprit event wherever the pipeline runs it: a pass listed by name, one
nested in ``default``, a TIR pass, a user's pass that edits its module in place.

  - ``should_run`` skips a culprit whose remedy is ``off``;
  - ``run_before_pass`` keeps the module a ``narrow`` culprit receives (a
    pristine copy: the pass may edit it in place);
  - ``run_after_pass`` computes ``undo.narrowed`` of the two and writes its
    functions into the module the pass returned, in place: TVM hands that very
    object to the next pass, so the rest of the pipeline sees the narrowed one.
    It must run before any instrument that records what the pass returned.

A place the module does not have (``undo.narrowed`` checks each), or one that
cannot be undone, is a ``problem``: kept in ``problems`` (and raised as ``FixMismatch`` when strict).
A culprit event that never ran is reported by ``unapplied``.
"""

from __future__ import annotations

import warnings

import tvm
import tvm_ffi

from ..instrument.base import EventInstrument
from ..relax_ir import pristine
from .undo import CannotUndo, narrowed


class FixMismatch(Exception):
    """A fix names a place the module being compiled does not have."""


class ForeignFixWarning(UserWarning):
    """A fix applied to a compilation that starts from another module than the one it was made for."""


@tvm.instrument.pass_instrument
class FixInstrument(EventInstrument):
    def __init__(self, plan, strict: bool = False, made_for=None, name: str = "the fix"):
        super().__init__()
        self.plan, self.strict = plan, strict
        self.made_for, self.fix_name = made_for, name  # the main it was made for (a structural hash), checked once
        self.received: dict = {}
        self.applied: list = []
        self.problems: list = []

    def decide(self, event, mod):
        if self.made_for is not None:
            self._warn_if_foreign(mod)
        culprit = self.plan.culprit(event.id)
        if culprit is not None and culprit.remedy == "off":
            self.applied.append(culprit.event)
            return False
        return True

    def entered(self, event, mod):
        culprit = self.plan.culprit(event.id)
        if culprit is not None and culprit.remedy == "narrow":
            self.received[culprit.event] = pristine(mod)

    def left(self, event, mod):
        if event.id not in self.received:
            return
        culprit = self.plan.culprit(event.id)
        before = self.received.pop(event.id)
        try:
            out = narrowed(before, pristine(mod), culprit.places)
        except CannotUndo as err:
            self.problems.append(f"{event.id}: {err}")
            if self.strict:
                raise FixMismatch(f"numguard fix for {event.id} does not apply: {err}") from None
            return
        _write_into(mod, out)
        self.applied.append(event.id)

    def _warn_if_foreign(self, mod) -> None:
        """Warn once where the first module this compilation sees is not the one the fix was made for."""
        made_for, self.made_for = self.made_for, None
        if "main" in [gv.name_hint for gv in mod.get_global_vars()] and \
                str(tvm_ffi.structural_hash(mod["main"])) != made_for:
            warnings.warn(f"{self.fix_name} was made for another model: the module compiled is not the one "
                          "numguard fix read (its places may mean other values here)", ForeignFixWarning,
                          stacklevel=2)

    def unapplied(self) -> list:
        """Culprit events of the plan this compilation never ran."""
        return [c.event for c in self.plan.culprits if c.event not in self.applied]


def _write_into(mod: tvm.IRModule, out: tvm.IRModule) -> None:
    """Make ``mod`` hold ``out``'s functions (``out`` has every function of ``mod``)."""
    names = {gv.name_hint: gv for gv in mod.get_global_vars()}
    for gv, func in out.functions.items():
        target = names.get(gv.name_hint)
        if target is None:
            mod[gv] = func
        elif not func.same_as(mod[target]):
            mod[target] = func
