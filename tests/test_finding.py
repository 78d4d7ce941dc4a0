"""The layer between the engine and the front ends: Findings, the blame rule,
the session's build bookkeeping, options, and no state left behind."""

import os
import pickle
import threading

import numpy as np
import pytest
import tvm

import tvm_numguard as ng
from tvm_numguard.build.session import RunContext, BuildSession
from tvm_numguard.locate.bisect.result import BisectResult, Blame
from tvm_numguard.base.errors import RangeError, UsageError
from tvm_numguard.ir.instrument.recorder import EventSnapshot
from tvm_numguard.report import Report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
UNSAFE = ng.CompileConfig(pipeline="ToMixedPrecision,default")


@pytest.fixture(scope="module")
def finding_report():
    return ng.bisect(DEMO, UNSAFE, ng.Options(low=0.0, high=1.0, budget="20"))


def test_a_finding_pickles_and_makes_the_same_report(finding_report):
    finding = finding_report.finding
    again = pickle.loads(pickle.dumps(finding))  # plain data: it can travel between processes
    assert again.blame() == finding.blame() == Blame("culprit", ("ToMixedPrecision#0",), "ToMixedPrecision#0")
    redone = Report.from_finding(again).data
    for section in ("model", "configuration", "events", "search", "metrics", "oracle", "verdict", "bisection"):
        assert redone[section] == finding_report.data[section], section


def test_a_report_read_back_blames_what_its_finding_blamed(finding_report):
    read_back = Report(dict(finding_report.to_json()))
    assert read_back.finding is None
    assert read_back.blame() == finding_report.blame()
    assert read_back.culprit == finding_report.culprit == "ToMixedPrecision#0"


@pytest.mark.parametrize("status, culprit, minimal, expected", [
    ("culprit", "A#0", ["A#0"], Blame("culprit", ("A#0",), "A#0")),
    # a first bad prefix that did not confirm: its set is disabled, the first bad event is localized
    ("minimal_set", "B#0", ["A#0", "C#0"], Blame("minimal_set", ("A#0", "C#0"), "B#0")),
    ("minimal_set", None, ["A#0", "C#0"], Blame("minimal_set", ("A#0", "C#0"), "C#0")),
    # nothing isolated: nothing single to switch off, whatever the prefix search saw
    ("ambiguous", "B#0", [], Blame("pipeline", (), "B#0")),
    ("nondeterministic", None, [], Blame("pipeline", (), None)),
])
def test_one_rule_for_what_is_blamed_and_disabled(status, culprit, minimal, expected):
    result = BisectResult(status, "bisect", ["A#0", "B#0", "C#0"], culprit=culprit, minimal_set=minimal)
    assert result.blame() == expected
    described = result.to_json(lambda i: {"id": i, "name": i.split("#")[0], "level": "relax", "opt_level": 0})
    assert BisectResult.from_json(described).blame() == expected  # the same rule on a saved report


def test_the_session_closes_skip_sets_keys_builds_and_counts_every_compile():
    model = ng.load_model(DEMO)
    session = BuildSession(model, UNSAFE, context=RunContext().in_process())
    session.prepare()
    first = session.optimized
    assert session.build(frozenset()) is first and session.build_count == 2
    # a build with an instrument of its own is another build, not the cached one
    snap = EventSnapshot("ToMixedPrecision#0")
    with_snapshot = session.build(frozenset(), instruments=[snap])
    assert with_snapshot is not first and snap.before is not None and session.build_count == 3
    # a snapshot built alone is counted, once per structure
    mod = first.snapshots["ToMixedPrecision#0"] if first.snapshots else model.mod
    one = session.build_module(mod)
    assert one.ok and session.build_module(mod) is one and session.build_count == 4


@pytest.mark.slow  # a whole trace; the fast tier keeps the count's unit tests
def test_trace_counts_its_snapshot_builds():
    report = ng.trace(DEMO, UNSAFE, ng.Options(low=0.0, high=1.0, budget="20"))
    traced, builds = report.data["trace"], report.data["builds"]["builds"]
    assert traced["snapshot_builds"] > 0
    # optimized + reference + bisection + snapshots + gated: nothing compiled around the session
    assert builds >= 2 + report.data["bisection"]["builds"] + traced["snapshot_builds"] + traced["gated_builds"]


@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"low": 0.0}, RangeError, "both low and high"),
    ({}, RangeError, "give the input range"),
    ({"low": 1.0, "high": 0.0}, RangeError, "low > high"),
    ({"low": 0.0, "high": 1.0, "search": "evolve,nope"}, UsageError, "'nope'"),
    ({"low": 0.0, "high": 1.0, "strategy": "ddmin"}, UsageError, "'ddmin'"),
    ({"low": 0.0, "high": 1.0, "budget": "lots"}, RangeError, "budget"),
    ({"ranges": {"x": (0.0, float("inf"))}}, RangeError, "finite"),
])
def test_options_are_checked_when_made(kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        ng.Options(**kwargs)


def test_a_library_message_names_a_setting_as_the_caller_gave_it():
    from tvm_numguard.base.flags import FLAG

    with pytest.raises(RangeError) as python:
        ng.Options()
    assert str(python.value) == "give the input range: low and high, or ranges for each input"
    assert python.value.said_with(FLAG) == "give the input range: --low and --high, or --range for each input"


def test_options_are_values():
    options = ng.Options(low=0.0, high=1.0)
    with pytest.raises(Exception):
        options.seed = 3  # frozen: a default can never be edited by one call for the next
    assert options.replace(seed=3).seed == 3 and options.seed == 0
    assert ng.Options(low=0.0, high=1.0, search="random, evolve").searches == ("random", "evolve")


def test_the_guard_leaves_other_threads_compiles_alone():
    model = ng.load_model(DEMO)
    unsafe = tvm.relax.transform.ToMixedPrecision()(model.mod)
    done = {}

    def compile_elsewhere():
        done["executable"] = tvm.compile(unsafe, "llvm")

    with ng.guard(0.0, 1.0, budget="4", time_limit=None) as g:
        worker = threading.Thread(target=compile_elsewhere)
        worker.start()
        worker.join()
    assert done["executable"] is not None and len(g.report) == 0  # not judged, not disturbed


def test_plots_leave_the_hosts_matplotlib_backend_alone(finding_report):
    import matplotlib

    from tvm_numguard.report.plot import search_plot_png

    before = matplotlib.get_backend()
    matplotlib.use("pdf")
    try:
        data = ng.search(DEMO, UNSAFE, ng.Options(low=0.0, high=1.0, budget="6", search="random")).data
        assert search_plot_png(data)[:4] == b"\x89PNG"
        assert matplotlib.get_backend() == "pdf"
    finally:
        matplotlib.use(before)


def test_each_target_gets_its_own_registered_tir_pipeline():
    from tvm_numguard.ir.pipeline import tir_pipeline

    llvm = tir_pipeline("VectorizeLoop,default", tvm.target.Target("llvm"))
    c = tir_pipeline("VectorizeLoop,default", tvm.target.Target("c"))
    assert llvm != c and "llvm" in llvm


def test_values_are_named_in_the_users_model(tmp_path):
    import torch

    assert ng.load_model(DEMO).provenance["lv"].text() == "ONNX MatMul node producing 'h'"

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.tanh(self.fc(x))

    path = str(tmp_path / "block.pt2")
    torch.export.save(torch.export.export(Block(), (torch.randn(1, 4),)), path)
    provenance = ng.load_model(path).provenance
    labels = {o.text() for o in provenance.values()}
    assert any("module fc (Linear)" in label for label in labels), labels
    assert any("node 'tanh'" in label for label in labels), labels

    from tvm_numguard.ir.provenance import describe

    assert "made by a pass" in describe(provenance, "lv99", "relax.add")
    assert "kept no names" in describe({}, "lv", "relax.add")


def test_the_witness_stats_name_every_input(finding_report):
    stats = finding_report.data["witness"]["inputs"]["x"]
    witness = finding_report.witness["x"]
    assert stats["shape"] == list(witness.shape) and np.isclose(stats["max"], float(witness.max()))


def test_a_document_read_back_from_json_is_the_same_report_without_a_second_walk(finding_report, monkeypatch):
    import json

    from tvm_numguard.report import document

    text = json.loads(json.dumps(finding_report.to_json()))
    walked = Report(dict(text)).data
    monkeypatch.setattr(document, "plain", lambda value: pytest.fail("a plain document was walked again"))
    read = Report.read_back(dict(text))
    assert read.data == walked and read.blame() == finding_report.blame()
