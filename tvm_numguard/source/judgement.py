"""The import stage's answer on one witness, as plain typed data that
round-trips to JSON (the report's ``framework`` section)."""

from __future__ import annotations

import dataclasses
from typing import Optional

from ..numbers import plain, unplain
from .agreement import IMPORT_VERDICTS, OutputAgreement


@dataclasses.dataclass
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
    # a discontinuous operator (ceil, a comparison, a cast to int): a rounding-sized difference flips it
    discontinuous: bool = False

    def to_json(self) -> dict:
        return plain(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data) -> Optional["ImportOrigin"]:
        return None if data is None else cls(**unplain(dict(data)))

    def text(self) -> str:
        if self.shape_tvm != self.shape_framework:
            return (f"{self.node}: TVM computes shape {self.shape_tvm}, the framework "
                    f"{self.shape_framework}")
        where = self.worst.get("index")
        at = f" at {where}" if where is not None else ""
        return (f"{self.node} (TVM: {self.op or 'no op'}): TVM computes {_num(self.worst.get('tvm'))}, "
                f"the framework {_num(self.worst.get('framework'))}{at} (score {_num(self.score)})")


def _num(value) -> str:
    return "?" if value is None else f"{value:.6g}"


@dataclasses.dataclass
class ImportJudgement:
    """TVM's reference against the model's framework on the witness.

    ``verdict``: "agree" (within the tolerance), "import" (TVM's reference
    differs and the truth backs the framework, or the shapes differ: a
    violation), "precision" (they differ because TVM computes in the model's
    narrow float what the framework computes in float32: with ``widened`` kept
    in float32 TVM agrees; not a violation), "benign" (they differ, not by
    TVM's fault: against the truth TVM is within the tolerance, the output's
    conditioning, or not far worse than the framework; or a discontinuous
    operator flips on agreeing inputs) or
    "unchecked" (no framework, or it failed: ``reason``). ``truth`` names the
    float64 run the difference was judged against (``truth_note``: why not
    the framework's own). ``lowering``: how far TVM's float32 reference is from
    TVM's own float64 build (a score; None where that build was not made)."""

    framework: str
    verdict: str
    reason: Optional[str] = None
    truth: Optional[str] = None
    truth_note: Optional[str] = None
    outputs: list = dataclasses.field(default_factory=list)  # OutputAgreement
    origin: Optional[ImportOrigin] = None
    origin_note: Optional[str] = None  # why no origin was named
    lowering: Optional[float] = None
    # precision: the bindings whose float32 computation makes TVM agree, each
    # {"binding", "key" (its name in the model, for --keep-float32), "label"}
    widened: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        if self.verdict not in IMPORT_VERDICTS:
            raise ValueError(f"import verdict {self.verdict!r} is not one of {', '.join(IMPORT_VERDICTS)}")

    @property
    def differs(self) -> bool:
        """TVM's import computes other numbers (or shapes) than the model: a violation."""
        return self.verdict == "import"

    def to_json(self) -> dict:
        return {"framework": self.framework, "verdict": self.verdict, "reason": self.reason, "truth": self.truth,
                "truth_note": self.truth_note, "outputs": [o.to_json() for o in self.outputs],
                "origin": self.origin.to_json() if self.origin else None, "origin_note": self.origin_note,
                "lowering": plain(self.lowering), "widened": list(self.widened)}

    @classmethod
    def from_json(cls, data) -> Optional["ImportJudgement"]:
        if data is None:
            return None
        return cls(data["framework"], data["verdict"], data.get("reason"), data.get("truth"), data.get("truth_note"),
                   [OutputAgreement.from_json(o) for o in data.get("outputs", [])],
                   ImportOrigin.from_json(data.get("origin")), data.get("origin_note"),
                   unplain(data.get("lowering")), list(data.get("widened", [])))


__all__ = ["ImportJudgement", "ImportOrigin"]
