"""End to end: a real TVM pass (ToMixedPrecision) found in the shipped demo."""

import json
import math
import os

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.report import validate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")


@pytest.fixture(scope="module")
def demo_report():
    return ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"), ng.Options(low=0.0, high=1.0))


def test_demo_culprit_is_to_mixed_precision(demo_report):
    report = demo_report
    assert report.violation and report.exit_code == 1
    assert report.culprit == "ToMixedPrecision#0"
    bis = report.data["bisection"]
    assert bis["status"] == "culprit" and bis["confirmed"] is True
    assert bis["culprit"]["level"] == "relax"
    assert bis["score_before"] <= 1 < bis["score_after"]
    validate(report.to_json())


def test_demo_bisection_cost_is_logarithmic(demo_report):
    data = demo_report.data
    n = data["bisection"]["optional_events"]
    assert n > 30
    # every build of the run: optimized, reference, prefixes, confirmation
    assert data["builds"]["builds"] <= math.log2(n) + 4


def test_linear_strategy_agrees(demo_report):
    report = ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                       ng.Options(low=0.0, high=1.0, strategy="linear"))
    assert report.culprit == demo_report.culprit
    # the culprit is the first event, so linear isolation needs one prefix build
    assert report.data["bisection"]["strategy"] == "linear"


def test_witness_replays_the_finding(demo_report, tmp_path):
    path = str(tmp_path / "w.npz")
    demo_report.save_witness(path)
    assert demo_report.data["replay"].endswith(f"--inputs {path}")
    with np.load(path) as saved:
        witness = {k: saved[k] for k in saved.files}
    again = ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"), ng.Options(low=0.0, high=1.0),
                      inputs=witness)
    assert again.culprit == "ToMixedPrecision#0"
    assert again.data["search"]["evaluations"] == 1


@pytest.mark.parametrize("pipeline", ["zero", "default"])
def test_optimizing_pipelines_are_clean_on_the_demo(pipeline):
    report = ng.bisect(DEMO, ng.CompileConfig(pipeline=pipeline), ng.Options(low=-1.0, high=1.0))
    assert not report.violation and report.exit_code == 0
    assert report.data["bisection"] is None
    validate(report.to_json())


def test_report_json_is_written_whole(demo_report, tmp_path):
    path = tmp_path / "r.json"
    demo_report.write_json(str(path))
    data = json.loads(path.read_text())
    validate(data)
    assert data["bisection"]["culprit"]["id"] == "ToMixedPrecision#0"
    assert data["metrics"][0]["min_atol"] > data["metrics"][0]["atol"]
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


@pytest.mark.parametrize("search", [False, True])
def test_a_report_document_reads_back_into_its_finding(demo_report, search):
    """What a report writes of its Finding reads back into one that writes the
    same sections (the environment is now's; the witness's arrays and the range
    check's result are not kept in a document)."""
    from tvm_numguard.judge.finding import Finding
    from tvm_numguard.base.numbers import plain
    from tvm_numguard.report.sections import document

    report = ng.search(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                       ng.Options(low=0.0, high=1.0, search="random,boundary", budget="6")) if search else demo_report
    written = report.to_json()
    again = plain(document(Finding.from_json(written)))
    kept = {**written, "timings": {k: v for k, v in written["timings"].items() if k != "range_check_s"}}
    for section in set(written) - {"schema_version", "kind", "tool", "environment", "witness", "range_check"}:
        assert again.get(section) == kept[section], section
    assert Finding.from_json(written).blame() == report.blame()


def test_the_plan_counts_the_probes_and_what_each_costs():
    from tvm_numguard.locate.bisect.driver import probe_plan

    # 14 changed events: 4 prefix probes and the confirmation, each a build, its VM and a run
    assert probe_plan(14, False, 2.0, 98.0, 0.5) == (
        "about 5 probes at ~100 s each (a build 2.0 s, its VM 98.0 s, a run 0.50 s): ~8 min")
    assert probe_plan(14, True, 1.0, 0.0, 0.0).startswith("about 15 probes at ~1 s each")  # linear: every one


def test_a_vm_that_takes_longer_than_the_build_is_said_to_be_where_the_time_goes():
    from types import SimpleNamespace

    from tvm_numguard.engine.engine import bisection_plan

    def session(vm_seconds, pipeline="ToMixedPrecision,default"):
        return SimpleNamespace(optimized=SimpleNamespace(seconds=15.3),
                               optional=[SimpleNamespace(changed=c) for c in (True, True, False, True)],
                               runs=SimpleNamespace(call_seconds=0.3, vm_seconds=vm_seconds),
                               config=ng.CompileConfig(pipeline=pipeline))

    options = ng.Options(low=0.0, high=1.0)
    slow = bisection_plan(session(98.0), options)
    assert slow.startswith("about 3 probes at ~114 s each") and "creating a build's VM (98 s" in slow
    assert "float16 arithmetic is emulated on a CPU" in slow
    assert "where the time goes" not in bisection_plan(session(1.2), options)  # the build itself dominates
    assert "float16" not in bisection_plan(session(98.0, pipeline="default"), options)
