"""The search aimed by numguard check: rare regions found at a small budget,
the aim's candidates and second fitness, and what the commands say of it."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.engine.engine import range_check
from tvm_numguard.judge.rangecheck.check import check
from tvm_numguard.locate import Budget, InputRange, Observation, resolve_ranges
from tvm_numguard.locate.aimed import Aim, Target
from tvm_numguard.locate.searches import conform, make_search
from tvm_numguard.build.session import RunContext, BuildSession
from tvm_numguard.testing import tiny_cnn_onnx
from tvm_numguard.build.workers import Workers

from clirun import run_cli

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import search_vs_random as rare  # noqa: E402  (the rare-region cases: real passes, small models)


def _session(case):
    make, pipeline, tol = rare.CASES[case]
    model, low, high = make()
    session = BuildSession(model, ng.CompileConfig(pipeline=pipeline), tol=tol,
                            context=RunContext(workers=Workers(jobs=0)))
    session.prepare()
    return session, resolve_ranges(model.inputs, low, high)


@pytest.mark.parametrize("case", ["fp16-mixed", "fp16-two-inputs", "exp-band"])
def test_the_aim_finds_rare_regions_that_the_unaimed_search_misses(case):
    session, ranges = _session(case)
    _, outcome = range_check(session, ranges)
    aim = Aim.of_check(outcome.result)
    assert aim.targets
    for seed in range(3):
        aimed = make_search("evolve", budget=Budget(20)).run(session.runs.observe, session.model.inputs, ranges, seed,
                                                               stop_at=1.0, aim=aim)
        assert aimed.best_score > 1.0, (case, seed)
    if case != "exp-band":  # the boundary candidates reach exp's band unaimed too
        unaimed = make_search("evolve", budget=Budget(50)).run(session.runs.observe, session.model.inputs, ranges, 0,
                                                                 stop_at=1.0)
        assert unaimed.best_score <= 1.0


def test_a_mixed_corner_is_the_weights_sign_pattern():
    session, ranges = _session("fp16-mixed")
    warning = check(session.model, session.config, ranges).warnings[0]
    driver = warning.drivers["x"]
    assert driver.corner == "mixed" and driver.pattern is not None
    candidate = Aim.of_check(check(session.model, session.config, ranges)).candidates(
        session.model.inputs, ranges, np.random.default_rng(0), conform)[0]["x"]
    r = ranges["x"]
    assert set(np.unique(candidate)) <= {np.float32(r.low), np.float32(r.high)}
    assert session.runs.evaluate({"x": candidate}) > 1.0


def test_random_ignores_the_aim():
    session, ranges = _session("fp16-all-high")
    aim = Aim.of_check(range_check(session, ranges)[1].result)
    with_aim = make_search("random", budget=Budget(5)).run(session.runs.observe, session.model.inputs, ranges, 0,
                                                             aim=aim)
    without = make_search("random", budget=Budget(5)).run(session.runs.observe, session.model.inputs, ranges, 0)
    assert with_aim.history == without.history


def test_second_fitness_grows_toward_the_limit_and_stays_below_a_violation():
    aim = Aim((Target("overflow", "float16", {"x": "high"}, {"x": (0.0, 1.0)}),))
    assert aim.limit == 65504.0 and aim.threat == "overflow"
    small, large = (aim.secondary(Observation(0.1, np.array([v]), np.array([0.0]))) for v in (10.0, 60000.0))
    assert 0 < small < large < 1
    assert Aim().secondary(Observation(0.1, np.array([1e30]), np.array([0.0]))) < 1


def test_aimed_candidates_sit_in_the_band_and_nearly_constant():
    spec = type("S", (), {"name": "x", "shape": (64,), "dtype": "float32", "is_integer": False})()
    aim = Aim((Target("approximation", "float32", {"x": "high"}, {"x": (88.3, 88.7)}),))
    cands = aim.candidates([spec], {"x": InputRange(-300.0, 88.7)}, np.random.default_rng(0), conform)
    assert cands[0]["x"].min() == np.float32(88.7)  # the corner
    nearly = cands[1]["x"]  # the band's far end, nearly constant
    assert abs(float(nearly.mean()) - 88.7) < 0.2 and 0 < float(nearly.std()) < 0.2
    assert all(88.3 - 0.01 <= float(c["x"].min()) for c in cands[1:])


def test_commands_print_the_check_and_say_the_violation_is_where_it_warned(tmp_path, capsys):
    path = tiny_cnn_onnx(os.path.join(tmp_path, "cnn.onnx"), seed=0)
    out = os.path.join(tmp_path, "r.json")
    code, stdout, err = run_cli(capsys, "search", path, "--low", "-32768", "--high", "32767", "--pipeline",
                                "ToMixedPrecision,zero", "--rtol", "1e-2", "--atol", "1e-2", "--budget", "20",
                                "--jobs", "0", "--json", out)
    assert code == 1, err
    assert "check: lv = relax.astype can overflow" in err  # before searching
    assert err.index("check:") < err.index("searching the range")
    assert "the violation lies where check warned" in stdout
    data = json.load(open(out))
    assert data["range_check"]["reached"] == [data["range_check"]["warnings"][0]["position"]]
    from tvm_numguard.report.html import _range_check  # the trace page's section, on this document

    assert "the violation lies here" in _range_check(data) and "Conv node" in _range_check(data)


def test_given_inputs_make_no_range_check(tmp_path, capsys):
    path = tiny_cnn_onnx(os.path.join(tmp_path, "cnn.onnx"), seed=0)
    witness = os.path.join(tmp_path, "w.npz")
    np.savez(witness, x=np.zeros((1, 3, 16, 16), "float32"))
    out = os.path.join(tmp_path, "r.json")
    code, _, err = run_cli(capsys, "bisect", path, "--low", "-1", "--high", "1", "--inputs", witness, "--jobs", "0",
                           "--json", out)
    assert code == 0, err
    assert "range_check" not in json.load(open(out)) and "check:" not in err


def test_the_guard_aims_its_short_search_and_reports_the_warning():
    """ToMixedPrecision applied before tvm.compile to a convolution whose float16 cast
    overflows only at the mixed corner of its weights' signs: with a budget of 20
    inputs the guard finds it (the unaimed search does not at 50), and its report
    says the violation lies where the check warned."""
    import warnings as python_warnings

    import tvm
    from tvm import relax

    from tvm_numguard.api.guard import NumericalRiskWarning

    model, low, high = rare.fp16_mixed()
    said = []
    with python_warnings.catch_warnings():
        python_warnings.simplefilter("ignore", NumericalRiskWarning)
        with ng.guard(low, high, rtol=1e-2, atol=1e-2, budget="20", progress=said.append, jobs=0, time_limit=None) as g:
            tvm.compile(relax.transform.ToMixedPrecision()(model.mod), "llvm")
    (entry,) = g.report
    assert entry.violation and entry.culprit == "ToMixedPrecision#0"
    section = entry.data["range_check"]
    assert section["warnings"][0]["op"] == "relax.astype" and section["reached"]
    assert any(str(line).startswith("check: ") for line in said)
