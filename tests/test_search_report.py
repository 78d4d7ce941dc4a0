"""numguard search and the search inside bisect: invalid candidates explained,
the float64 oracle's verdict in the report, the plot."""

import json
import os

import onnx
import pytest
from onnx import TensorProto, helper

import tvm_numguard as ng
from tvm_numguard.cli import main
from tvm_numguard.base.errors import InvalidReferenceError
from tvm_numguard.report import validate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")


@pytest.fixture(scope="module")
def log_model(tmp_path_factory):
    """y = log(x) * 2 for one input in [-1, 1]: the reference is NaN on half the range."""
    nodes = [helper.make_node("Log", ["x"], ["l"]),
             helper.make_node("Mul", ["l", "two"], ["y"])]
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], [two])
    path = tmp_path_factory.mktemp("log") / "log.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return ng.load_model(str(path))


def test_reference_nan_on_half_the_range_still_gives_valid_witnesses(log_model):
    report = ng.search(log_model, ng.CompileConfig(pipeline="zero"), ng.Options(low=-1.0, high=1.0, budget="30"))
    search = report.data["search"]
    assert 0 < search["invalid"] < search["evaluations"]
    assert report.data["metrics"][0]["nan_ref"] == 0 and report.data["metrics"][0]["inf_ref"] == 0
    assert report.data["witness"]["inputs"]["x"]["min"] > 0
    assert [c["op"] for c in search["invalid_causes"]] == ["log"]
    for run in search["searches"]:
        assert run["invalid"] > 0
    validate(report.to_json())


def test_a_range_of_one_point_is_evaluated_once_by_every_search_together(log_model):
    """Found by a new user's trial: --low 1 --high 1 ran the same input ~200 times per search. The one input
    is evaluated once; the searches after the first would only repeat it; the report says why."""
    report = ng.search(log_model, ng.CompileConfig(pipeline="zero"), ng.Options(low=1.0, high=1.0))
    search = report.data["search"]
    assert search["evaluations"] == 1 and search["stopped_by"] == "one point", search
    assert [r["evaluations"] for r in search["searches"]] == [1]
    assert report.data["witness"]["inputs"]["x"]["min"] == 1.0 == report.data["witness"]["inputs"]["x"]["max"]
    assert "the range holds one input" in report.summary() and "evaluated once" in report.summary()
    validate(report.to_json())


def test_reference_nan_everywhere_names_the_operator(log_model):
    with pytest.raises(InvalidReferenceError, match=r"log .*range is wrong"):
        ng.bisect(log_model, ng.CompileConfig(pipeline="zero"), ng.Options(low=-2.0, high=-1.0, budget="10"))


def test_given_inputs_outside_the_domain_are_said_to_be_the_callers_not_a_searched_range(log_model):
    import numpy as np

    with pytest.raises(InvalidReferenceError, match=r"on the given inputs \(log .*outside the model's domain") as err:
        ng.bisect(log_model, ng.CompileConfig(pipeline="zero"), ng.Options(low=-2.0, high=-1.0),
                  inputs={"x": np.full((1, 1), -1.5, np.float32)})
    assert "searched" not in str(err.value) and "range" not in str(err.value)


def test_search_command_reports_each_strategy_and_plots(capsys, tmp_path):
    report, plot = tmp_path / "s.json", tmp_path / "s.png"
    with pytest.raises(SystemExit) as exc:
        main(["search", DEMO, "--low", "0", "--high", "1", "--pipeline", "ToMixedPrecision,default", "--budget", "20",
              "--json", str(report), "--plot", str(plot)])
    out, err = capsys.readouterr()
    assert exc.value.code == 1, err
    data = json.loads(report.read_text())
    validate(data)
    assert data["command"] == "search" and data["verdict"] == "violation"
    assert [r["search"] for r in data["search"]["searches"]] == ["random", "boundary", "evolve"]
    assert all(len(r["history"]) == 20 for r in data["search"]["searches"])
    assert data["oracle"]["available"] and data["oracle"]["real_violation"]
    assert data["oracle"]["outputs"][0]["max_err_opt"] > data["oracle"]["outputs"][0]["max_err_ref"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "s.witness.npz").exists()
    assert "evolve: best score" in out
    assert "inputs    60 evaluated by 3 searches" in out  # every search's inputs, not the best one's 20


@pytest.mark.parametrize("args,fragment", [
    (["--search", "random,nosuch"], "--search"),
    (["--budget", "0"], "budget"),
    (["--budget", "-3s"], "budget"),
    (["--range", "y=0:1"], "unknown input(s) y; the model has x"),
])
def test_search_command_bad_input(capsys, args, fragment):
    base = ["search", DEMO, "--low", "0", "--high", "1"]
    with pytest.raises(SystemExit) as exc:
        main(base + args)
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0], err


def test_no_oracle_leaves_it_out_of_the_report():
    report = ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                       ng.Options(low=0.0, high=1.0, budget="10", oracle=False))
    assert report.data["oracle"] is None and report.culprit == "ToMixedPrecision#0"
    assert "--no-oracle" in report.data["replay"]
