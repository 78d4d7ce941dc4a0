"""numguard reduce: a violation cut down to a few Relax operators, written as a repro that reproduces."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tvm_numguard.ir.model import load_model
from tvm_numguard.locate.options import Options
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.testing.reduce import PassQuestion, reduce_violation
from tvm_numguard.testing.reduce.cut import cut, main_bindings
from tvm_numguard.testing.reduce.reducer import Answer
from tvm_numguard.testing.regress import RowRequest, collect, regress
from tvm_numguard.report.files import read_witness
from tvm_numguard.base.tolerance import Tolerance
from tvm_numguard.testing import assert_same_on_witness
from tvm_numguard.build.workers import Workers

from clirun import run_cli
from test_regress import MANIFEST, PLANTED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _violation(name: str, tmp_path):
    config = CompileConfig(pipeline=PLANTED[name][0], tir_pipeline=PLANTED[name][1])
    entry = collect([f"patches/{name}"])[0]
    options = Options(low=MANIFEST[name]["low"], high=MANIFEST[name]["high"], budget="100")
    row, = regress([RowRequest(config, options, str(tmp_path))], [entry], Workers(jobs=0)).rows
    assert row.verdict == "violation"
    return config, entry.load(str(tmp_path)), read_witness(row.witness)


def _reduced_ok(name, tmp_path):
    config, model, witness = _violation(name, tmp_path)
    reduction = reduce_violation(model, config, witness, Tolerance())
    assert reduction.operators <= 3 and reduction.builds <= 20, (name, reduction.steps)
    assert reduction.verified["reproduced_twice"] and reduction.verified["clean_without_pass"], reduction.verified
    return reduction


@pytest.mark.parametrize("name", ["var_onepass", "tir_tf32"])  # a Relax pass on 7 operators; a TIR pass
def test_a_planted_bug_reduces_to_at_most_3_operators_within_20_builds(name, tmp_path):
    reduction = _reduced_ok(name, tmp_path)
    assert reduction.operators < reduction.operators_before


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_every_planted_bug_reduces(name, tmp_path):
    _reduced_ok(name, tmp_path)


class NeedsTwoOps(PassQuestion):
    """A fake check: 'violates' when the candidate still computes both exp and log (no pass, no build)."""

    def __call__(self, mod, inputs):
        self.builds += 2
        text = mod.script()
        both = "R.exp(" in text and "R.log(" in text
        return Answer(both, 2.0 if both else 0.0, [], 2)


def test_the_cut_grows_upstream_until_it_violates_and_drops_what_is_not_needed():
    from tvm.script import relax as R
    import tvm

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.abs(x)
            b = R.exp(a)
            c = R.add(b, a)
            d = R.log(c)
            e = R.tanh(d)
            R.output(e)
        return e

    model = load_model(tvm.IRModule({"main": main}))
    witness = {"x": np.linspace(-1, 1, 4).astype("float32")}
    config = CompileConfig(pipeline="[FoldConstant],zero")
    reduction = reduce_violation(model, config, witness, Tolerance(), question=NeedsTwoOps(config, Tolerance()))
    kept = sorted(b.value.op.name for b in main_bindings(reduction.cut.mod))
    # no binding violates alone in the probe, so the sink is the output (tanh); the cut grows to depth 3,
    # which takes in abs too, and the drop step leaves abs out again: its captured value is fed instead
    assert kept == ["relax.add", "relax.exp", "relax.log", "relax.tanh"]
    assert [name for name, _ in reduction.cut.inputs] == ["cut_a"]
    assert any(step.startswith("without a") and step.endswith("violates") for step in reduction.steps)


def test_cut_feeds_left_out_bindings_as_inputs():
    mod = collect(["patches/var_onepass"])[0].load("/tmp")
    bindings = main_bindings(mod.mod)
    last = len(bindings) - 1
    single = cut(mod.mod, [last], [last])
    assert len(main_bindings(single.mod)) == 1
    assert all(k is not None for _, k in single.inputs)  # every input is a captured value
@pytest.mark.slow  # end to end; the fast tier keeps unit tests of the same logic
def test_cli_reduce_writes_a_repro_whose_test_fails_with_the_pass_and_passes_without_it(tmp_path, capsys):
    report = tmp_path / "r.json"
    code, _, err = run_cli(capsys, "regress", "--pass", "patches.var_onepass:make_pass", "--models",
                           "patches/var_onepass", "--json", str(report), "--out", str(tmp_path / "w"), "--jobs", "0",
                           "-q")
    assert code == 1, err
    out = tmp_path / "repro"
    code, stdout, err = run_cli(capsys, "reduce", str(report), "-o", str(out), "-q")
    assert code == 0, err
    assert "7 -> 1 Relax operator(s)" in stdout and "reproduces twice: yes" in stdout
    record = json.loads((out / "repro.json").read_text())
    assert record["operators"] == 1 and record["builds"] <= 20 and record["verified"]["clean_without_pass"]
    # the shapes were halved while the violation survived: the witness is sliced with them
    assert np.prod(record["inputs"]["x"]) < 4 * 16 and any(s.startswith("shapes 16 -> 8") for s in record["steps"])
    assert read_witness(str(out / "witness.npz"))["x"].shape == tuple(record["inputs"]["x"])
    # the repro's own test: fails while the pass is broken ...
    test = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out / "test_repro.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert test.returncode == 1 and "changes what" in test.stdout, test.stdout[-2000:]
    # ... and holds for a pass that computes the same (what the fixed pass would do)
    assert_same_on_witness(out / "model.py", out / "witness.npz", pipeline="[FoldConstant],zero")


def test_cli_reduce_refuses_a_report_that_does_not_record_the_configuration(tmp_path, capsys):
    report = tmp_path / "old.json"
    row = {"verdict": "violation", "witness": "w.npz", "model": "tiny/mlp", "pass_spec": "FoldConstant"}
    report.write_text(json.dumps({"schema": "numguard-regress/1", "rows": [row], "models": []}))
    code, _, err = run_cli(capsys, "reduce", str(report), "-o", str(tmp_path / "repro"))
    assert code == 2 and "does not record the configuration" in err and len(err.strip().splitlines()) == 1


def test_cli_reduce_refuses_a_report_without_a_violation(tmp_path, capsys):
    report = tmp_path / "r.json"
    run_cli(capsys, "regress", "--pass", "FoldConstant", "--models", "tiny/mlp", "--json", str(report), "--jobs", "0",
            "--require-changed", "0", "-q")
    code, _, err = run_cli(capsys, "reduce", str(report), "-o", str(tmp_path / "repro"))
    assert code == 2 and "no violation row" in err and len(err.strip().splitlines()) == 1


def test_shrinking_refuses_shapes_the_operators_cannot_take_without_a_build():
    from tvm.script import relax as R
    import tvm

    from tvm_numguard.testing.reduce.reducer import resize

    @R.function
    def main(x: R.Tensor((4, 6), "float32")):
        with R.dataflow():
            y = R.reshape(x, R.shape([24]))
            R.output(y)
        return y

    values = {"x": np.arange(24, dtype="float32").reshape(4, 6)}
    assert resize(tvm.IRModule({"main": main}), values, 4, 2) is None  # reshape to 24 elements cannot take 2x6


def test_a_tuple_a_kept_binding_reads_is_kept_not_fed_as_an_input():
    # batch_norm returns a tuple: the binding that takes its first field cannot get it as an input
    from tvm_numguard.testing.generate import GeneratorConfig, generate

    graph = generate(0, 19, GeneratorConfig())  # conv2d -> batch_norm -> ... (a model DecomposeOpsForInference changes)
    mod = graph.to_irmodule()
    bindings = main_bindings(mod)
    field = next(k for k, b in enumerate(bindings) if type(b.value).__name__ == "TupleGetItem")
    single = cut(mod, [field], [field])
    assert [type(b.value).__name__ for b in main_bindings(single.mod)] == ["Call", "TupleGetItem"]
    assert all(k is None or k != field - 1 for _, k in single.inputs)
