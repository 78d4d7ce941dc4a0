"""The import stage's answer on one witness, as plain typed data that
round-trips to JSON (the report's ``framework`` section). Every record here is
frozen, what it holds too: a judgement is made once, whole."""

from __future__ import annotations

import dataclasses
from typing import Optional

from ...base.frozen import freeze_fields
from ...base.numbers import plain, unplain
from ...base.words import ImportVerdict
from ..components.verdict import NodePlacement
from .agreement import IMPORT_VERDICTS, OutputAgreement


@dataclasses.dataclass(frozen=True)
class ImportOrigin:
    """The first value of the model, in its framework's execution order, whose
    TVM counterpart differs (beyond the tolerance, or in shape)."""

    node: str  # where in the model: "ONNX MeanVarianceNormalization node 'mvn' (output 'y')"
    key: str  # its name in the model (ONNX tensor, FX node)
    op: Optional[str]  # the Relax operator TVM's frontend made of it
    shape_tvm: list
    shape_framework: list
    score: float
    max_abs: float
    worst: dict  # index, tvm, framework: the worst element's values
    binding: Optional[str] = None  # its binding in the imported main
    # a discontinuous operator (ceil, a comparison, a cast to int): a rounding-sized difference may flip it
    discontinuous: bool = False

    def __post_init__(self):
        freeze_fields(self, "shape_tvm", "shape_framework", "worst")

    def to_json(self) -> dict:
        return plain(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data) -> Optional["ImportOrigin"]:
        return None if data is None else cls(**unplain(dict(data)))

    def text(self) -> str:
        if self.shape_tvm != self.shape_framework:
            return (f"{self.node}: TVM computes shape {list(self.shape_tvm)}, the framework "
                    f"{list(self.shape_framework)}")
        where = self.worst.get("index")
        at = f" at {where}" if where is not None else ""
        return (f"{self.node} (TVM: {self.op or 'no op'}): TVM computes {_num(self.worst.get('tvm'))}, "
                f"the framework {_num(self.worst.get('framework'))}{at} (score {_num(self.score)})")


@dataclasses.dataclass(frozen=True)
class ProvenFlip:
    """A discontinuous node whose result flips, proven: its inputs agree within
    the tolerance but not exactly, and the framework's own operator applied to
    TVM's inputs gives TVM's result (``elements``: how many flipped)."""

    node: str
    key: str
    elements: int

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data) -> "ProvenFlip":
        return cls(**dict(data))


@dataclasses.dataclass(frozen=True)
class WidenedOp:
    """An operator the precision stage keeps in float32: its binding in main,
    its name in the model (what ``--keep-float32`` takes) and where it is."""

    binding: str
    key: str
    label: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data) -> "WidenedOp":
        return cls(**dict(data))


def _num(value) -> str:
    return "?" if value is None else f"{value:.6g}"


@dataclasses.dataclass(frozen=True)
class ImportJudgement:
    """TVM's reference against the model's framework on the witness.

    ``verdict``: "agrees" (within the tolerance); "import" (TVM's reference
    differs and the truth backs the framework, or the shapes differ: a
    violation); "precision" (they differ because TVM computes in the model's
    narrow float what the framework computes in float32: with ``widened``, the
    differing value's own chain, kept in float32 TVM agrees on ``verified_on``
    input sets; not a violation); "benign" (they differ, not by TVM's fault:
    against the truth TVM is within the tolerance, the element's conditioning,
    or not far worse than the framework; or the differences follow from
    ``flips`` alone); "unjudged" (they differ where no independent truth
    reaches: a violation that no one can excuse); "unanswered" (no framework,
    or it failed: ``reason``). ``truth`` names the float64 run the difference
    was judged against (``truth_note``: why not the framework's whole float64
    copy). ``lowering``: how far TVM's float32 reference is from TVM's own
    float64 build (a score; None where that build was not made).
    ``placement``: which part of TVM computes the node named at fault differently
    (conversion, legalization, code generation: ``judge/components``)."""

    framework: str
    verdict: ImportVerdict
    reason: Optional[str] = None
    truth: Optional[str] = None
    truth_note: Optional[str] = None
    outputs: tuple = ()  # OutputAgreement
    origin: Optional[ImportOrigin] = None
    origin_note: Optional[str] = None  # why no origin was named
    lowering: Optional[float] = None
    widened: tuple = ()  # WidenedOp
    flips: tuple = ()  # ProvenFlip
    verified_on: int = 0  # input sets the widening was verified on
    placement: Optional[NodePlacement] = None

    def __post_init__(self):
        if self.verdict not in IMPORT_VERDICTS:
            raise ValueError(f"import verdict {self.verdict!r} is not one of {', '.join(IMPORT_VERDICTS)}")
        object.__setattr__(self, "verdict", ImportVerdict(self.verdict))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "widened", tuple(self.widened))
        object.__setattr__(self, "flips", tuple(self.flips))

    @property
    def component(self):
        """The part of TVM at fault (a components.Component), None where none is named."""
        at_fault = self.placement.at_fault if self.placement is not None else ()
        return at_fault[0].component if self.differs and at_fault else None

    @property
    def differs(self) -> bool:
        """TVM's import computes other numbers (or shapes) than the model and
        nothing excuses it (at fault, or no truth to judge): a violation."""
        return self.verdict in ("import", "unjudged")

    def to_json(self) -> dict:
        return {"framework": self.framework, "verdict": self.verdict, "reason": self.reason, "truth": self.truth,
                "truth_note": self.truth_note, "outputs": [o.to_json() for o in self.outputs],
                "origin": self.origin.to_json() if self.origin else None, "origin_note": self.origin_note,
                "lowering": plain(self.lowering), "widened": [w.to_json() for w in self.widened],
                "flips": [f.to_json() for f in self.flips], "verified_on": self.verified_on,
                "placement": self.placement.to_json() if self.placement is not None else None}

    @classmethod
    def from_json(cls, data) -> Optional["ImportJudgement"]:
        if data is None:
            return None
        return cls(data["framework"], data["verdict"], data.get("reason"), data.get("truth"), data.get("truth_note"),
                   tuple(OutputAgreement.from_json(o) for o in data.get("outputs", [])),
                   ImportOrigin.from_json(data.get("origin")), data.get("origin_note"),
                   unplain(data.get("lowering")), tuple(WidenedOp.from_json(w) for w in data.get("widened", [])),
                   tuple(ProvenFlip.from_json(f) for f in data.get("flips", [])), int(data.get("verified_on", 0)),
                   NodePlacement.from_json(data.get("placement")))


__all__ = ["ImportJudgement", "ImportOrigin", "ProvenFlip", "WidenedOp"]
