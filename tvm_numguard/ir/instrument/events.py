"""Pass events and their stable ids.

A pass event is one execution of a pass seen by an instrument. Its id is the
nesting path of non-wrapper ancestors, with a per-name counter at each level:
``FuseOps#0``, ``FoldConstant#0/tirx.VectorizeLoop#2``. Wrapper passes
(``sequential``, pipeline closures) are events too, but they are left out of
their children's paths, so an id does not change when a pipeline is regrouped.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Optional

from .catalog import is_wrapper

TIR_PREFIXES = ("tirx.", "s_tir.", "tir.")


@dataclasses.dataclass(frozen=True)
class PassEvent:
    """One execution of a pass (or one decision to skip it)."""

    index: int  # position in execution order, counting skipped events
    id: str
    name: str
    level: str  # "relax" or "tir"
    opt_level: int
    depth: int
    wrapper: bool
    ran: bool = True
    duration_s: float = 0.0
    changed: Optional[bool] = None
    hash_before: Optional[int] = None
    hash_after: Optional[int] = None

    def __deepcopy__(self, memo) -> "PassEvent":
        # every field is immutable: a shallow copy is a deep one, at a tenth of the
        # cost (RelaxPhase copies thousands of events at the end of each Relax phase)
        twin = copy.copy(self)
        memo[id(self)] = twin
        return twin

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "id": self.id,
            "name": self.name,
            "level": self.level,
            "opt_level": self.opt_level,
            "depth": self.depth,
            "wrapper": self.wrapper,
            "ran": self.ran,
            "duration_s": round(self.duration_s, 6),
            "changed": self.changed,
        }

    @classmethod
    def from_json(cls, data) -> "PassEvent":
        """Read back from a document's row (which keeps no hashes)."""
        return cls(data["index"], data["id"], data["name"], data["level"], data["opt_level"], data.get("depth", 0),
                   data["wrapper"],
                   data.get("ran", True), data.get("duration_s", 0.0), data.get("changed"))


class EventPath:
    """Assigns stable ids to pass executions as the instrument hooks see them.

    ``propose`` is called when a pass is about to be decided on (``should_run``,
    or ``run_before_pass`` for required passes, which never reach ``should_run``);
    ``enter``/``leave`` follow ``run_before_pass``/``run_after_pass``. A pass that
    was proposed but never entered was skipped; one that was entered but never
    left raised, and is closed when its parent leaves.
    """

    def __init__(self, phase: str = "relax"):
        self.phase = phase
        # each frame: [id-prefix of the frame, counters by name, event]
        self._frames: list[tuple[str, dict, Optional[PassEvent]]] = [("", {}, None)]
        self._pending: Optional[PassEvent] = None
        self._count = 0
        self.skipped_events: list[PassEvent] = []

    def set_phase(self, phase: str) -> None:
        self.phase = phase

    @property
    def pending(self) -> Optional[PassEvent]:
        """The last proposal, not yet known to run or be skipped."""
        return self._pending

    def _level(self, name: str) -> str:
        if self.phase == "tir" or name.startswith(TIR_PREFIXES):
            return "tir"
        return "relax"

    def _new_event(self, name: str, opt_level: int) -> PassEvent:
        prefix, counters, _ = self._frames[-1]
        k = counters.get(name, 0)
        counters[name] = k + 1
        event = PassEvent(
            index=self._count,
            id=f"{prefix}{name}#{k}",
            name=name,
            level=self._level(name),
            opt_level=int(opt_level),
            depth=len(self._frames) - 1,
            wrapper=is_wrapper(name),
        )
        self._count += 1
        return event

    def _settle_pending(self) -> None:
        if self._pending is not None:
            self.skipped_events.append(dataclasses.replace(self._pending, ran=False))
            self._pending = None

    def propose(self, name: str, opt_level: int) -> PassEvent:
        """A pass is being decided on (``should_run``): assign its id.

        A previous proposal that was never entered was skipped.
        """
        self._settle_pending()
        self._pending = self._new_event(name, opt_level)
        return self._pending

    def enter(self, name: str, opt_level: int) -> PassEvent:
        """A pass starts running (``run_before_pass``).

        Required passes reach this hook without a proposal.
        """
        if self._pending is not None and self._pending.name == name:
            event, self._pending = self._pending, None
        else:
            self._settle_pending()
            event = self._new_event(name, opt_level)
        parent_prefix, parent_counters, _ = self._frames[-1]
        if event.wrapper:
            # children of a wrapper live in the wrapper's parent namespace
            self._frames.append((parent_prefix, parent_counters, event))
        else:
            self._frames.append((event.id + "/", {}, event))
        return event

    def leave(self, name: str) -> Optional[PassEvent]:
        """Pass ``name`` finished (``run_after_pass``): return its event.

        A pass that raised never reaches ``run_after_pass`` (FoldConstant, for
        one, catches the errors of the builds it runs inside itself and goes
        on): the frames above the finishing pass's own are those of passes that
        died, and are dropped with it, so the nesting stays right."""
        self._settle_pending()
        depth = next((k for k in range(len(self._frames) - 1, 0, -1)
                      if (event := self._frames[k][2]) is not None and event.name == name), None)
        if depth is None:
            return None
        event = self._frames[depth][2]
        del self._frames[depth:]
        return event

    def finish(self) -> None:
        """The compilation ended: a last proposal that never ran was skipped."""
        self._settle_pending()


# TVM's Sequential, by its default name: the only pass runner that asks
# PassContext.PassEnabled, i.e. honours ``disabled_pass`` and the context's opt_level
SEQUENTIAL = "sequential"


def disabled_pass_reaches(events) -> set:
    """Ids of the events ``PassContext(disabled_pass=[name])`` would switch off:
    those a Sequential runs. A pass called directly (``mod = P()(mod)``, or
    passed alone as ``relax_pipeline``, which ``relax.build`` calls) ignores
    that list (tested in tests/test_advice.py). ``events`` in execution order,
    skipped ones included (their depth places them)."""
    parents: list
    reached, parents = set(), []
    for event in events:
        del parents[event.depth:]
        if parents and parents[-1].name == SEQUENTIAL:
            reached.add(event.id)
        parents.append(event)
    return reached
