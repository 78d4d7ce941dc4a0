"""The stages of a run as one table (judge/stages.py): every stage judges and
says itself through the same three functions, and a Finding's ``at_fault`` and
``attribution`` are that table's verdicts, the same on a Finding read back
from its report."""

import dataclasses
import enum
import os

import pytest

import tvm_numguard as ng
from tvm_numguard.base.words import Stage, StageVerdict, Word
from tvm_numguard.judge.determinism import Nondeterminism
from tvm_numguard.judge.finding import Finding
from tvm_numguard.judge.stages import STAGES, judge_stages, stage_verdicts
from tvm_numguard.report import stages as report_stages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")


@pytest.fixture(scope="module")
def violation():
    return ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                     ng.Options(low=0.0, high=1.0, budget="20")).finding


def test_every_stage_has_one_row_and_each_row_says_its_own_stage(violation):
    assert sorted(row.stage for row in STAGES) == sorted(Stage)  # one row a stage, none left out
    for row in STAGES:
        said = row.verdict(row.answer_of(violation))
        assert isinstance(said, StageVerdict) and said.stage is row.stage
        assert isinstance(said.word, Word) and isinstance(said.word, enum.Enum)
        # the report knows how to say every word the stage's Enum has
        assert set(report_stages.WORDS[row.stage.value]) >= {w.value for w in type(said.word)}, row.stage


def test_a_findings_verdicts_are_the_tables_and_survive_its_report(violation):
    assert violation.at_fault == [Stage.PASS]
    assert violation.attribution()["pass"] == "violation"
    read_back = Finding.from_json(ng.Report.from_finding(violation).to_json())
    assert stage_verdicts(read_back) == stage_verdicts(violation)
    assert read_back.at_fault == violation.at_fault and read_back.attribution() == violation.attribution()


def test_a_stage_at_fault_is_read_from_its_own_answer_alone(violation):
    # a nondeterministic build, and nothing else changed: the determinism row alone turns at fault
    flaky = dataclasses.replace(violation, nondeterminism=Nondeterminism(("optimized",)))
    assert flaky.at_fault == [Stage.PASS, Stage.DETERMINISM]
    assert flaky.attribution()["determinism"] == "differs" and violation.attribution()["determinism"] == "agrees"


def test_the_engine_asks_the_rows_in_order_each_seeing_the_answers_before_it(monkeypatch):
    from tvm_numguard.judge import stages

    seen = []

    def row(stage):
        def judge(at, said):
            seen.append((stage, tuple(said)))
            return stage.value
        return stages.StageJudge(stage, judge, lambda finding: None, lambda answer: StageVerdict(stage, answer))

    order = (Stage.DETERMINISM, Stage.PASS, Stage.IMPORT)
    monkeypatch.setattr(stages, "STAGES", tuple(row(s) for s in order))
    said = judge_stages(stages.Witnessed(None, None, {}, None))
    assert said == {s: s.value for s in order}
    assert seen == [(Stage.DETERMINISM, ()), (Stage.PASS, (Stage.DETERMINISM,)),
                    (Stage.IMPORT, (Stage.DETERMINISM, Stage.PASS))]
