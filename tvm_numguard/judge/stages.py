"""The stages of a run, one table: each judges a witness through the same protocol.

A stage is a place where a difference between what TVM computes and what the
model computes can come in (``base/words.Stage``). Each is a row of
``STAGES``, a ``StageJudge`` of three functions that live in the stage's own
module:

- ``judge(at, said)``: its answer on a witness (``at``, a ``Witnessed``: the
  witness with the session's builds, the framework and the oracle; ``said``:
  the answers of the stages judged before it, by Stage);
- ``answer_of(finding)``: its answer read back from a Finding (one read back
  from a report included);
- ``verdict(answer)``: the answer said as a ``StageVerdict``, its word (a
  member of the stage's Enum) and whether the stage is at fault.

The engine asks the rows in order (``judge_stages``): determinism first (a
build that gives other outputs on the same inputs leaves the pass question
unjudged), then the pass, the import, the target and the lowering. A
Finding's ``at_fault`` and ``attribution`` are the table's verdicts. A stage
of its own answers the component question of an import difference
(``judge/components``: conversion, legalization, code generation, one table
like this one). Adding a stage is a module with its three functions and a
row here (and the Finding field its answer is kept in).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional

from ..base.words import LoweringVerdict, Stage, StageVerdict
from .cpu_reference import judge_target, target_answer, target_verdict
from .determinism import determinism_answer, determinism_verdict, judge_determinism
from .import_stage.framework_watch import import_answer, import_verdict, judge_import
from .oracle import judge_pass, pass_answer, pass_verdict


@dataclasses.dataclass(frozen=True)
class Witnessed:
    """What every stage judges: ``witness`` in ``session`` (a prepared
    BuildSession), ``comparison`` (its builds compared there), the run's
    ``options``, the framework beside the session (``watch``: a
    FrameworkWatch, None with ``--no-framework``), TVM's float64 build
    (``oracle``) and ``before_oracle(witness)``: told of a violation before
    the oracle judges it (the bisection starts there)."""

    session: Any
    options: Any
    witness: Mapping
    comparison: Any
    watch: Any = None
    oracle: Any = None
    before_oracle: Optional[Callable[[Mapping], None]] = None


@dataclasses.dataclass(frozen=True)
class StageJudge:
    """One row of STAGES: a stage's three functions (see the module docstring)."""

    stage: Stage
    judge: Callable[[Witnessed, Mapping], Any]
    answer_of: Callable[[Any], Any]
    verdict: Callable[[Any], StageVerdict]


def judge_lowering(at: Witnessed, said: Mapping) -> Optional[float]:
    """How far TVM's float32 reference is from TVM's own float64 build (a
    score): the import stage measures it beside its own truth; None where that
    build was not made."""
    imports = said.get(Stage.IMPORT)
    return imports.lowering if imports is not None else None


def lowering_answer(finding) -> Optional[float]:
    return finding.imports.lowering if finding.imports is not None else None


def lowering_verdict(score: Optional[float]) -> StageVerdict:
    """Float32's own rounding: reported, never a failure."""
    word = (LoweringVerdict.UNANSWERED if score is None
            else LoweringVerdict.DIFFERS if score > 1.0 else LoweringVerdict.AGREES)
    return StageVerdict(Stage.LOWERING, word)


# in the order they are judged: each may read the answers of the rows above it
STAGES = (
    StageJudge(Stage.DETERMINISM, judge_determinism, determinism_answer, determinism_verdict),
    StageJudge(Stage.PASS, judge_pass, pass_answer, pass_verdict),
    StageJudge(Stage.IMPORT, judge_import, import_answer, import_verdict),
    StageJudge(Stage.TARGET, judge_target, target_answer, target_verdict),
    StageJudge(Stage.LOWERING, judge_lowering, lowering_answer, lowering_verdict),
)


def judge_stages(at: Witnessed) -> dict:
    """Every stage's answer on ``at``'s witness, by Stage, judged in STAGES' order."""
    said: dict = {}
    for row in STAGES:
        said[row.stage] = row.judge(at, said)
    return said


def stage_verdicts(finding) -> dict:
    """Every stage's StageVerdict of ``finding``, by Stage, in the order a model meets them (base/words.Stage)."""
    verdicts = {row.stage: row.verdict(row.answer_of(finding)) for row in STAGES}
    return {stage: verdicts[stage] for stage in Stage}


__all__ = ["STAGES", "StageJudge", "StageVerdict", "Witnessed", "judge_stages", "stage_verdicts"]
