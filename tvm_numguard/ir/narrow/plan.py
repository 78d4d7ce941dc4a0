"""A fix as data: per culprit pass event, where the pass is kept from acting.

``FixPlan`` is what a build applies (``pipeline.CompileConfig.fix``, the
guard's call configuration): frozen, hashable, picklable to workers, read
back from a fix document's ``culprits``. ``FixPlan.instrument()`` makes the
PassInstrument that applies it to one compilation.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from .rewrites import Place

# what a fix does to a culprit: undo its rewrites at some places, or switch it off
REMEDIES = ("narrow", "off")
# a remedy's name in fix files written before 0.2 -> its name now
_OLD_REMEDIES = {"pass": "off"}


@dataclasses.dataclass(frozen=True)
class CulpritFix:
    """One culprit pass event (``event``, an id like ``ToMixedPrecision#0``)
    and its remedy: ``narrow``, its rewrites undone at ``places``; ``off``,
    the event switched off (skipped; no places)."""

    event: str
    remedy: str = "narrow"
    places: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "places", tuple(self.places))
        if self.remedy not in REMEDIES:
            raise ValueError(f"a culprit's remedy is one of {', '.join(REMEDIES)}, got {self.remedy!r}")
        if self.remedy == "off" and self.places:
            raise ValueError("a culprit switched off has no places")

    def to_json(self) -> dict:
        return {"event": self.event, "remedy": self.remedy, "places": [p.to_json() for p in self.places]}

    @classmethod
    def from_json(cls, data) -> "CulpritFix":
        remedy = data.get("remedy", "narrow")
        return cls(data["event"], _OLD_REMEDIES.get(remedy, remedy),
                   tuple(Place.from_json(p) for p in data.get("places", ())))

    def switched_off(self) -> "CulpritFix":
        """The same culprit, switched off."""
        return CulpritFix(self.event, "off")


@dataclasses.dataclass(frozen=True)
class FixPlan:
    """The culprits of one compilation and their remedies, in the order found."""

    culprits: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "culprits", tuple(self.culprits))
        events = [c.event for c in self.culprits]
        if len(set(events)) != len(events):
            raise ValueError(f"a fix names each culprit once, got {', '.join(events)}")

    def __bool__(self) -> bool:
        return bool(self.culprits)

    def culprit(self, event: str) -> Optional[CulpritFix]:
        return next((c for c in self.culprits if c.event == event), None)

    def with_culprit(self, fix: CulpritFix) -> "FixPlan":
        """This plan with ``fix`` in place of any earlier remedy of its event."""
        return FixPlan(tuple(c for c in self.culprits if c.event != fix.event) + (fix,))

    def instrument(self, strict: bool = False, made_for: Optional[str] = None, name: str = "the fix"):
        """A new PassInstrument applying this plan to one compilation (``strict``:
        a place the compilation does not have raises ``FixMismatch``; ``made_for``:
        the structural hash of the main the fix was made for, warned about when
        the compilation starts from another)."""
        from .instrument import FixInstrument

        return FixInstrument(self, strict, made_for, name)

    def to_json(self) -> list:
        return [c.to_json() for c in self.culprits]

    @classmethod
    def from_json(cls, data) -> "FixPlan":
        return cls(tuple(CulpritFix.from_json(c) for c in data or ()))
