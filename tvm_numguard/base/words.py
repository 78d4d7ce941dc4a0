"""Verdicts as Enums whose members are their words.

Every verdict numguard says (the pass question's, the import question's, a
target's, a stage's name, a regress row's) is an Enum member, so a tool can
check that only known words are made; a member compares, hashes, formats and
serializes as its word (``"import"``), which is what reports, JSON documents
and users read.
"""

from __future__ import annotations

import dataclasses
import enum


class Word(str, enum.Enum):
    """An Enum whose members are strings that print as themselves (Python 3.11's
    ``StrEnum``, which this package's lowest Python, 3.10, lacks)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)


class PassVerdict(Word):
    """The pass question's: the optimized build against the reference on the witness."""

    VIOLATION = "violation"
    CLEAN = "clean"
    BENIGN = "benign"  # differs, and the float64 oracle finds it no worse than the reference
    UNJUDGED = "unjudged"  # nothing can be judged against the witness's reference (Finding.pass_note says why)


class ImportVerdict(Word):
    """The import question's: TVM's reference against the model's framework."""

    AGREES = "agrees"
    IMPORT = "import"  # TVM is at fault (the placement says which part of TVM)
    PRECISION = "precision"  # TVM computes the model's narrow float narrowly, and the widening agrees
    BENIGN = "benign"
    UNJUDGED = "unjudged"  # they differ where no independent truth reaches: a failure
    UNANSWERED = "unanswered"  # no framework, or inputs it does not take


class TargetVerdict(Word):
    """A target's build against the same pipeline built for llvm."""

    AGREES = "agrees"
    BENIGN = "benign"
    TARGET = "target"
    UNANSWERED = "unanswered"


class LoweringVerdict(Word):
    """TVM's float32 reference against its own float64 build: float32's own rounding, never a failure."""

    AGREES = "agrees"
    DIFFERS = "differs"
    UNANSWERED = "unanswered"


class DeterminismVerdict(Word):
    """Each build run twice on the same inputs."""

    AGREES = "agrees"
    DIFFERS = "differs"


class Stage(Word):
    """Where a difference can come in, in the order a model meets them."""

    IMPORT = "import"
    PASS = "pass"
    TARGET = "target"
    LOWERING = "lowering"
    DETERMINISM = "determinism"



@dataclasses.dataclass(frozen=True)
class StageVerdict:
    """A stage's answer said (``judge/stages.py``): its ``word`` (a member of the stage's Enum) and whether
    the stage is ``at_fault``."""

    stage: Stage
    word: Word
    at_fault: bool = False


__all__ = ["DeterminismVerdict", "ImportVerdict", "LoweringVerdict", "PassVerdict", "Stage", "StageVerdict",
           "TargetVerdict", "Word"]
