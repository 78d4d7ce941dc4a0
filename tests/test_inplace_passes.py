"""A pass that edits its input module in place must not poison later builds (issue 10.1).

``patches/inplace_softmax.py`` is a module pass written the common way
(``mod[gv] = new_func``): it rewrites softmax without the max subtraction, which
overflows to NaN on inputs in [0, 100]. Before every build started from a
pristine module, the first build rewrote the model's own module object, every
later build (the reference included) started from the rewritten one, and
bisect, trace, search, replay and the guard all called the model clean.
"""

import json

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax

import tvm_numguard as numguard
from tvm_numguard.api.guard import NumericalRiskWarning
from patches import inplace_softmax

from clirun import run_cli  # noqa: E402

PIPELINE = "patches.inplace_softmax:make_pass,zero"
CULPRIT = "NaiveSoftmax#0"


@pytest.fixture()
def model_file(tmp_path):
    """A TVMScript-style .py model file holding the patch's model."""
    path = tmp_path / "softmax_model.py"
    path.write_text("from patches.inplace_softmax import make_model\nModule = make_model()\n")
    return str(path)


def _run(executable, x):
    vm = relax.VirtualMachine(executable, tvm.cpu())
    return vm["main"](tvm.runtime.tensor(x)).numpy()


def test_bisect_and_replay_see_the_in_place_pass(capsys, tmp_path, model_file):
    report_path = str(tmp_path / "r.json")
    code, out, err = run_cli(capsys, "bisect", model_file, "--low", "0", "--high", "100", "--pipeline", PIPELINE,
                             "--budget", "40", "--json", report_path)
    assert code == 1, out + err
    data = json.load(open(report_path))
    assert data["bisection"]["culprit"]["id"] == CULPRIT
    assert data["search"]["invalid"] == 0  # the reference (stock softmax) is finite everywhere
    code, out, err = run_cli(capsys, "replay", report_path)
    assert code == 1, out + err
    assert "reproduces" in out


def test_search_and_trace_see_the_in_place_pass(capsys, tmp_path, model_file):
    code, out, err = run_cli(capsys, "search", model_file, "--low", "0", "--high", "100", "--pipeline", PIPELINE,
                             "--budget", "20", "--search", "boundary")
    assert code == 1, out + err
    code, out, err = run_cli(capsys, "trace", model_file, "--low", "0", "--high", "100", "--pipeline", PIPELINE,
                             "--budget", "20", "--json", str(tmp_path / "t.json"))
    assert code == 1, out + err
    traced = json.load(open(tmp_path / "t.json"))["trace"]
    assert traced["culprit"] == CULPRIT and traced["origin"]["op"] == "relax.divide"


def test_guard_disables_an_in_place_pass_in_the_pipeline():
    mod = inplace_softmax.make_model()
    before = tvm_ffi.structural_hash(mod)
    pipeline = tvm.transform.Sequential([inplace_softmax.make_pass(), relax.get_pipeline("zero"),
                                         relax.get_pipeline("default")])
    with pytest.warns(NumericalRiskWarning, match=CULPRIT):
        with numguard.guard(0.0, 100.0, budget="30", time_limit=None) as g:
            ex = tvm.compile(mod, "llvm", relax_pipeline=pipeline)
    (entry,) = g.report
    assert entry.violation and entry.culprit == CULPRIT
    # its one rewrite (the softmax) is what breaks the model: nothing narrower than the pass off
    assert entry.data["guard"]["disabled"] == [CULPRIT] and entry.data["guard"]["fix"] == []
    big = np.full((2, 8), 100.0, "float32")
    assert np.all(np.isfinite(_run(ex, big)))  # the returned build is the safe one
    # the guard's builds left the user's module as the user's code left it
    assert tvm_ffi.structural_hash(mod) == before
    assert any(c.op.name == "relax.nn.softmax" for c in _calls(mod["main"]))


def test_guard_judges_an_in_place_pass_applied_before_the_compile():
    mod = inplace_softmax.make_model()
    with pytest.warns(NumericalRiskWarning, match=CULPRIT):
        with numguard.guard(0.0, 100.0, budget="30", fix="off", time_limit=None) as g:
            rewritten = inplace_softmax.make_pass()(mod)  # edits ``mod`` itself, as it would unguarded
            ex = tvm.compile(rewritten, "llvm")
    (entry,) = g.report
    assert entry.data["guard"]["prelude"] == ["NaiveSoftmax"]
    assert entry.data["guard"]["note"] is None  # replayed from a copy of the module as it was before the pass
    assert entry.culprit == CULPRIT and entry.data["guard"]["disabled"] == [CULPRIT]
    assert np.all(np.isfinite(_run(ex, np.full((2, 8), 100.0, "float32"))))


def test_recorded_snapshots_are_not_edited_by_later_passes():
    """The snapshot after an event is the module as that event left it, even
    when a later pass edits the module object in place."""
    from tvm_numguard.build.compile import BuildRequest, compile_model

    mod = inplace_softmax.make_model()
    config = numguard.CompileConfig(pipeline="CanonicalizeBindings," + PIPELINE)
    build = compile_model(mod, config, BuildRequest(record=True))
    assert build.ok, build.error
    first = build.snapshots["CanonicalizeBindings#0"]
    assert any(c.op.name == "relax.nn.softmax" for c in _calls(first["main"]))
    assert not any(c.op.name == "relax.nn.softmax" for c in _calls(build.snapshots[CULPRIT]["main"]))


def _calls(func) -> list:
    found = []
    relax.analysis.post_order_visit(
        func, lambda e: found.append(e) if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op) else None)
    return found
