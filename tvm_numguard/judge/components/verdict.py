"""A component's verdict on one node of the model: typed, frozen, round-tripping to JSON.

Where TVM's reference build computes other numbers than the model, the fault is
in one part of TVM, each a ``Component`` with a truth of its own that shares
none of its code (``docs/judging.md``):

- ``CONVERSION``: the frontend. Truth: the framework's node in float64, against
  the imported Relax bindings evaluated op by op by each operator's meaning
  (``meaning.py``), both on TVM's own values of the node's arguments.
- ``LEGALIZATION``: ``LegalizeOps`` (the TOPI / TE kernel of a Relax operator).
  Truth: the operator's meaning, in float64, against the kernel with its math
  intrinsics computed by the C library in float64 (so that code generation
  does not count).
- ``CODEGEN``: the target's lowering of the kernel's math intrinsics (each
  ``tirx`` op's ``FLowerIntrinsic`` / ``FLegalize`` for the target). Truth: the
  same TIR with the intrinsics computed by the C library in float64.

Each says one ``Outcome`` per node: ``AGREES`` with its truth, ``AT_FAULT``,
``PRECISION`` (it differs only because it computes the model's narrow float
narrowly, and computing that in float32 agrees: not a defect), or
``UNJUDGED`` (no truth reaches it: which one is said, never guessed).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Optional

from ...base.frozen import freeze_fields
from ...base.numbers import plain, unplain


class Component(enum.Enum):
    """A part of TVM a maintainer would change, in the order a model meets them."""

    CONVERSION = "conversion"
    LEGALIZATION = "legalization"
    CODEGEN = "codegen"

    @property
    def title(self) -> str:
        return {"conversion": "TVM's frontend (the conversion of the model's node)",
                "legalization": "TVM's legalization (LegalizeOps: the operator's TOPI/TE kernel)",
                "codegen": "TVM's code generation (the target's lowering of a math intrinsic)"}[self.value]


class Outcome(enum.Enum):
    AGREES = "agrees"
    AT_FAULT = "at fault"
    PRECISION = "precision"
    UNJUDGED = "unjudged"


@dataclasses.dataclass(frozen=True)
class ComponentVerdict:
    """One component on one node. ``subject`` names it in TVM's words
    (``relax.round legalized by LegalizeOps``, ``tirx.tanh lowered for llvm``,
    ``onnx_frontend.Elu``); ``binding``: the binding of the imported main it was
    judged at (None: the node's whole conversion); ``worst``: the element
    reported (index, TVM's value, the truth); ``elements``: how many are at
    fault; ``script``: a standalone script that shows it on stock TVM."""

    component: Component
    outcome: Outcome
    subject: str
    reason: str
    binding: Optional[str] = None
    worst: dict = dataclasses.field(default_factory=dict)
    elements: int = 0
    script: Optional[str] = None

    def __post_init__(self):
        freeze_fields(self, "worst")

    @property
    def at_fault(self) -> bool:
        return self.outcome is Outcome.AT_FAULT

    def to_json(self) -> dict:
        return {"component": self.component.value, "outcome": self.outcome.value, "subject": self.subject,
                "reason": self.reason, "binding": self.binding, "worst": plain(dict(self.worst)),
                "elements": self.elements, "script": self.script}

    @classmethod
    def from_json(cls, data) -> "ComponentVerdict":
        return cls(Component(data["component"]), Outcome(data["outcome"]), data["subject"], data["reason"],
                   data.get("binding"), unplain(dict(data.get("worst") or {})), int(data.get("elements", 0)),
                   data.get("script"))


@dataclasses.dataclass(frozen=True)
class NodePlacement:
    """Which part of TVM computes one node of the model differently: each
    component's verdict on it (``verdicts``, in the order a model meets them).
    ``node``: the node (its label in the model), ``key``: its name there."""

    node: str
    key: str
    verdicts: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "verdicts", tuple(self.verdicts))

    @property
    def at_fault(self) -> tuple:
        return tuple(v for v in self.verdicts if v.at_fault)

    @property
    def unjudged(self) -> tuple:
        return tuple(v for v in self.verdicts if v.outcome is Outcome.UNJUDGED)

    @property
    def precision(self) -> tuple:
        return tuple(v for v in self.verdicts if v.outcome is Outcome.PRECISION)

    @property
    def exonerated(self) -> bool:
        """Every component agrees (or differs only in precision) on the node's own inputs: none is at fault there."""
        return bool(self.verdicts) and all(v.outcome in (Outcome.AGREES, Outcome.PRECISION) for v in self.verdicts)

    def to_json(self) -> dict:
        return {"node": self.node, "key": self.key, "verdicts": [v.to_json() for v in self.verdicts]}

    @classmethod
    def from_json(cls, data) -> Optional["NodePlacement"]:
        if data is None:
            return None
        return cls(data["node"], data["key"], tuple(ComponentVerdict.from_json(v) for v in data.get("verdicts", [])))


__all__ = ["Component", "ComponentVerdict", "NodePlacement", "Outcome"]
