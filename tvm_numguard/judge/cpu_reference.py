"""The CPU build as a second reference: your target's build against your LLVM build.

"Does my CUDA build compute what my CPU build computes?" is the question a GPU
user asks first. For any target other than plain ``llvm`` (a GPU, or an
``llvm`` with options such as ``mcpu``), the pipeline as written is built a
second time for plain ``llvm`` and both run on the witness. They are judged
as the import question judges TVM against the framework
(``agreement.compare_outputs_with_framework``): where they differ beyond the
tolerance, the target's build is at fault only where it is worse than the
LLVM build against the float64 truth (the framework's, else the oracle), so
a different but equally right rounding (a fused multiply-add, a GPU's
reduction order) is ``benign`` and a wrong kernel is ``target``.

The LLVM build is made in this process: it needs no device, and a session on
a GPU target builds in-process anyway (CUDA does not survive a fork).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Mapping, Optional

import numpy as np

from ..base.errors import summarize_error
from ..base.words import Stage, StageVerdict, TargetVerdict
from ..build.compile import compile_model, run_build
from ..ir.targets import parse_target
from .import_stage.framework_watch import oracle_truth
from .import_stage.agreement import OutputAgreement, agreement_score, compare_outputs_with_framework

CPU_TARGET = "llvm"


@dataclasses.dataclass(frozen=True)
class CpuJudgement:
    """The target's build against the LLVM build on the witness: ``verdict``
    a TargetVerdict, ``reason`` for ``unanswered``, ``truth`` the float64
    run the difference was judged against, ``outputs`` one OutputAgreement each
    (the LLVM build on the framework's side)."""

    target: str
    verdict: TargetVerdict
    reason: Optional[str] = None
    truth: Optional[str] = None
    outputs: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "verdict", TargetVerdict(self.verdict))

    @property
    def differs(self) -> bool:
        return self.verdict is TargetVerdict.TARGET

    def to_json(self) -> dict:
        return {"target": self.target, "reference": CPU_TARGET, "verdict": self.verdict, "reason": self.reason,
                "truth": self.truth, "outputs": [o.to_json() for o in self.outputs]}

    @classmethod
    def from_json(cls, data) -> Optional["CpuJudgement"]:
        if data is None:
            return None
        return cls(data["target"], data["verdict"], data.get("reason"), data.get("truth"),
                   tuple(OutputAgreement.from_json(o) for o in data.get("outputs", [])))


def wants_cpu_reference(target: str) -> bool:
    """Every target but plain ``llvm`` gets the LLVM build as a second reference."""
    return parse_target(target).config != CPU_TARGET


def judge_against_cpu(session, witness: Mapping[str, np.ndarray],
                      truth: Callable[[Mapping], tuple]) -> CpuJudgement:
    """``session``'s build as written against the same pipeline built for LLVM,
    on ``witness``; ``truth(inputs)``: (float64 outputs or None, their name, note)."""
    target = session.config.target
    cpu = compile_model(session.model.mod, dataclasses.replace(session.config, target=CPU_TARGET))
    session.memo.note(cpu)
    if not cpu.ok:
        return CpuJudgement(target, TargetVerdict.UNANSWERED, reason=f"the LLVM build fails: {cpu.error}")
    try:
        theirs = run_build(cpu, session.model.input_names(), witness)
    except Exception as err:  # the LLVM build is a help, not a requirement
        return CpuJudgement(target, TargetVerdict.UNANSWERED,
                            reason=f"the LLVM build fails to run: {summarize_error(err)}")
    mine, tol = session.runs.optimized_outputs(witness), session.tol
    if len(theirs) == len(mine) and agreement_score(theirs, mine, tol) <= 1.0:
        return CpuJudgement(target, TargetVerdict.AGREES,
                            outputs=tuple(compare_outputs_with_framework(theirs, mine, tol)))
    exact, name, _ = truth(witness)
    outputs = tuple(compare_outputs_with_framework(theirs, mine, tol, exact))
    # with no truth nothing excuses the target's build
    at_fault = len(theirs) != len(mine) or any(o.tvm_at_fault or o.not_judged for o in outputs)
    return CpuJudgement(target, TargetVerdict.TARGET if at_fault else TargetVerdict.BENIGN, truth=name, outputs=outputs)


def judge_target(at, said) -> Optional[CpuJudgement]:
    """The target stage on ``at``'s witness (a stages.Witnessed): the target's
    build against the LLVM build, judged against the framework's float64 truth,
    else the oracle's; None for plain llvm."""
    session = at.session
    if not wants_cpu_reference(session.config.target):
        return None
    session.progress("building the pipeline for llvm: the CPU build is the target's second reference")
    watch = at.watch
    truth = watch.truth if watch is not None and watch.active else functools.partial(oracle_truth, at.oracle)
    return judge_against_cpu(session, at.witness, truth)


def target_answer(finding) -> Optional[CpuJudgement]:
    return finding.cpu_reference


def target_verdict(answer: Optional[CpuJudgement]) -> StageVerdict:
    word = answer.verdict if answer is not None else TargetVerdict.UNANSWERED
    return StageVerdict(Stage.TARGET, word, at_fault=answer is not None and answer.differs)
