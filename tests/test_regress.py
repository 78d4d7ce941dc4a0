"""numguard regress: a pass's own question over a corpus, in worker processes.

The planted bugs of patches/ are passes nobody here wrote for this test (and
run as their manifest says: Relax passes first, TIR passes where their
pipeline puts them); the stock passes are TVM's own.
"""

from __future__ import annotations

import json
import os
import re
from xml.etree import ElementTree

import pytest

import patches

from tvm_numguard.locate.options import Options
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.testing.regress import RegressRow, RegressRun, RowRequest, collect, regress
from tvm_numguard.testing.regress.run import EXIT_CLEAN, EXIT_ERROR, EXIT_NOT_CHANGED, EXIT_VIOLATION
from tvm_numguard.build.workers import Workers
from tvm_numguard.report.schemas import REGRESS_SCHEMA, validate

from clirun import assert_one_line_error, run_cli, run_printed

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
with open(os.path.join(os.path.dirname(HERE), "patches", "manifest.json")) as f:
    MANIFEST = {e["name"]: e for e in json.load(f)}

# each planted bug as a pass under test: (pipeline, TIR pipeline) with the pass in brackets
# (Relax passes first, TIR passes where their manifest pipeline puts them; the pair patch's two
# passes become its make_pass, one Sequential)
PLANTED = {name: patches.under_test(entry) for name, entry in MANIFEST.items()}


def request(pipeline: str, tir: str = "default", out_dir: str = "/tmp/numguard-regress-test", **options):
    opts = Options(low=0.0, high=1.0, budget=options.pop("budget", "100"), **options)
    return RowRequest(CompileConfig(pipeline=pipeline, tir_pipeline=tir), opts, out_dir)


@pytest.mark.slow  # every patch through regress; the fast tier keeps regress's row and render tests
def test_every_planted_bug_is_flagged_on_its_model_and_blamed_on_its_own_pass(tmp_path):
    requests = [request(*PLANTED[name], out_dir=str(tmp_path)) for name in PLANTED]
    models = {name: collect([f"patches/{name}"])[0] for name in PLANTED}
    for name, req in zip(PLANTED, requests):
        run = regress([req], [models[name]], Workers(jobs=2))
        row = run.rows[0]
        assert row.verdict == "violation", (name, row)
        assert row.changed is True
        # attributed to the pass: the culprit is among the pass's own events, as the manifest says
        assert row.culprit == [MANIFEST[name]["culprit"]], (name, row.culprit)
        assert set(row.culprit) <= set(row.events)
        assert os.path.isfile(row.witness) and row.score > 1.0
        assert row.baseline_err is not None  # the oracle ran: the pipeline without the pass against float64
        assert run.exit_code == EXIT_VIOLATION


def test_the_reference_is_the_pipeline_without_the_pass_not_without_every_optional_pass():
    # the pair patch is a Sequential of two passes; every other pass of 'default' runs in both builds
    run = regress([request("[patches.pair_recip_scale:make_pass],default")], collect(["patches/pair_recip_scale"]),
                  Workers(jobs=0))
    row = run.rows[0]
    assert row.events == ["DivToReciprocalMul#0", "NarrowScaleConstFP16#0"]
    assert row.verdict == "violation" and row.culprit == ["NarrowScaleConstFP16#0"]


@pytest.mark.slow  # a regress over every stock pass; the fast tier keeps the planted-bug rows
def test_stock_passes_raise_no_false_alarm_and_a_pass_that_changes_nothing_proves_nothing(tmp_path):
    noop = os.path.join(HERE, "regress_passes.py")
    specs = ["FoldConstant", "CanonicalizeBindings", "EliminateCommonSubexpr", f"{noop}:noop"]
    requests = [request(f"[{spec}],zero", out_dir=str(tmp_path)) for spec in specs]
    run = regress(requests, collect(["tiny", "patches"]), Workers(jobs=2))
    assert not run.violations, [(r.pass_spec, r.model, r.score) for r in run.violations]
    assert not run.errors, [(r.model, r.reason) for r in run.errors]
    assert run.changed_count("FoldConstant") >= 1  # it folds the patches' constant subexpressions
    noop_spec = run.passes[-1]
    assert run.changed_count(noop_spec) == 0
    assert all(r.reason == "the pass did not change the model" for r in run.rows_of(noop_spec))
    # (CanonicalizeBindings and EliminateCommonSubexpr find nothing to do on these small models either)
    assert noop_spec in run.under_changed and "FoldConstant" not in run.under_changed
    assert run.exit_code == EXIT_NOT_CHANGED


def test_a_row_whose_pass_changes_nothing_is_clean_without_a_build(tmp_path, monkeypatch):
    from tvm_numguard.build import compile as compile_module

    noop = os.path.join(HERE, "regress_passes.py")
    # a build's TIR phase: the lowering and the code generation (relax.build, or its two steps)
    built, real_build = [], compile_module._tir_phase
    monkeypatch.setattr(compile_module, "_tir_phase", lambda *a, **k: built.append(1) or real_build(*a, **k))
    requests = [request(f"[{noop}:noop],zero", out_dir=str(tmp_path)),
                request("[FoldConstant],zero", out_dir=str(tmp_path))]
    unchanged, folded = regress(requests, collect(["patches/fold_fp16"]), Workers(jobs=0)).rows
    assert (unchanged.verdict, unchanged.changed, unchanged.reason) == (
        "clean", False, "the pass did not change the model")
    assert unchanged.events == ["NoOpRewrite#0"]  # the pass's own events, as a build records them
    assert folded.changed is True and len(built) >= 2  # a pass that changed it: built with and without it, as before
    built.clear()
    regress(requests[:1], collect(["patches/fold_fp16"]), Workers(jobs=0))
    assert built == []  # the Relax phase alone said the pass changed nothing: no lowering, no code generation


def test_a_pass_that_crashes_the_compiler_is_one_untestable_row_and_the_run_goes_on(tmp_path):
    crash = os.path.join(HERE, "crash_passes.py")
    requests = [request(f"[{crash}:pack_crash],zero", out_dir=str(tmp_path)),
                request("[patches.fold_fp16:make_pass],zero", out_dir=str(tmp_path))]
    run = regress(requests, collect(["patches/fold_fp16"]), Workers(jobs=2))
    crashed, flagged = run.rows
    assert crashed.verdict == "untestable" and "SIGSEGV" in crashed.reason
    assert flagged.verdict == "violation"


@pytest.mark.slow  # two regress runs; the fast tier keeps the workers' own independence test (test_workers)
def test_the_rows_do_not_depend_on_the_number_of_workers(tmp_path):
    requests = [request("[patches.exp_range:make_pass],zero", out_dir=str(tmp_path)),
                request("[FoldConstant],zero", out_dir=str(tmp_path))]
    models = collect(["patches/exp_range", "tiny/mlp", "patches/fold_fp16"])

    def rows(jobs):
        return [{k: v for k, v in r.to_json().items() if k not in ("seconds", "peak_private_bytes")}
                for r in regress(requests, models, Workers(jobs=jobs)).rows]

    assert rows(1) == rows(2)


def test_exit_code_order_violation_then_error_then_not_changed():
    def run(*rows, require_changed=1):
        return RegressRun(["p"], [], list(rows), require_changed)

    changed_clean = RegressRow("p", "m", "clean", changed=True)
    assert run(changed_clean).exit_code == EXIT_CLEAN
    assert run(RegressRow("p", "m", "clean", changed=False)).exit_code == EXIT_NOT_CHANGED
    assert run(RegressRow("p", "m", "clean", changed=False), require_changed=0).exit_code == EXIT_CLEAN
    assert run(changed_clean, RegressRow("p", "n", "error")).exit_code == EXIT_ERROR
    assert run(RegressRow("p", "n", "error"), RegressRow("p", "m", "violation", changed=True)).exit_code == \
        EXIT_VIOLATION
    assert run(changed_clean, RegressRow("p", "n", "untestable")).exit_code == EXIT_CLEAN


def test_cli_regress_writes_json_junit_and_html_and_exits_1_on_a_violation(tmp_path, capsys):
    out = tmp_path / "r.json"
    junit = tmp_path / "j.xml"
    page = tmp_path / "r.html"
    code, stdout, err = run_cli(capsys, "regress", "--pass", "patches.exp_range:make_pass", "--models",
                                "patches/exp_range", "--models", "tiny/mlp", "--json", str(out), "--junit", str(junit),
                                "--html", str(page), "--out", str(tmp_path / "w"), "--jobs", "2", "-q")
    assert code == 1, err
    # tiny/mlp ends in an Exp
    assert "patches/exp_range" in stdout and "violation" in stdout and "changed 2 of 2" in stdout
    data = json.loads(out.read_text())
    validate(data, REGRESS_SCHEMA)  # issue 55.5: regress --json had no shipped schema
    assert data["exit_code"] == 1 and data["summary"]["patches.exp_range:make_pass"]["violation"] == 1
    (row,) = [r for r in data["rows"] if r["verdict"] == "violation"]
    assert row["model"] == "patches/exp_range" and row["culprit"] == ["FastExpCutoff#0"]
    assert row["replay"].startswith("numguard regress --pass patches.exp_range:make_pass --models patches/exp_range")
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert "FastExpCutoff#0" in page.read_text()


def test_the_replay_line_runs_as_printed_where_numguard_is_not_on_path(tmp_path, capsys, script_not_on_path):
    junit, page = tmp_path / "j.xml", tmp_path / "r.html"
    code, stdout, err = run_cli(capsys, "regress", "--pass", "patches.exp_range:make_pass", "--models",
                                "patches/exp_range", "--out", str(tmp_path / "w"), "--junit", str(junit),
                                "--html", str(page), "--jobs", "0", "-q")
    assert code == 1, err
    (line,) = [ln.split("replay: ", 1)[1] for ln in stdout.splitlines() if ln.strip().startswith("replay: ")]
    assert line.startswith(f"{script_not_on_path} regress ")  # the program as invoked, not a bare numguard
    assert f"replay: {line}" in junit.read_text() and line.split()[0] in page.read_text()
    again = run_printed(line, tmp_path, importable=[ROOT])  # its witness under --out's default there
    assert again.returncode == 1, again.stderr[-2000:]  # the violation again, not "numguard: command not found"
    assert "FastExpCutoff#0" in again.stdout and re.search(r"patches/exp_range +yes +violation", again.stdout)


@pytest.mark.parametrize("argv, message", [
    (["regress", "--models", "tiny"], "name the pass under test"),
    (["regress", "--pass", "FoldConstant", "--models", "no/such/thing"], "no such file or directory"),
    (["regress", "--pass", "NoSuchPass", "--models", "tiny"], "unknown pipeline part"),
    (["regress", "--pass", "FoldConstant", "--models", "tiny/nope"], "no model 'nope'"),
    (["regress", "--pass", "FoldConstant", "--pipeline", "[DeadCodeElimination],zero", "--models", "tiny"],
     "only one pass can be under test"),
    (["regress", "--pass", "FoldConstant"], "--models PATH|CORPUS and/or --random N"),
    (["regress", "--pass", "FoldConstant", "--models", "tiny", "--target-pass", "FoldConstant"], "give --random N"),
    (["regress", "--pass", "FoldConstant", "--models", "tiny", "--discontinuous"], "give --random N"),
    (["regress", "--pass", "FoldConstant", "--random", "2", "--target-pass", "Nope"], "not a pass with a known"),
    (["regress", "--pass", "FoldConstant", "--models", "random/x"], "named random/SEED-INDEX"),
])
def test_cli_regress_usage_errors_are_one_line_and_exit_2(argv, message, capsys):
    code, _, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, message)


def test_a_build_failure_says_whether_the_pass_caused_it(tmp_path):
    # onnx wheel models: TVM 0.27 cannot legalize a multi-parameter PReLU with any pipeline, and its own
    # FastMathTransform breaks the build of an Expand whose shape is computed (ExternFunc has no 'name')
    models = collect(["onnx-node/pytorch-converted/test_PReLU_1d_multiparam",
                      "onnx-node/simple/test_expand_shape_model3"])
    run = regress([request("[FastMathTransform],zero", out_dir=str(tmp_path))], models, Workers(jobs=0))
    prelu, expand = run.rows
    assert prelu.verdict == "untestable" and prelu.reason.startswith("does not build, with or without the pass")
    assert expand.verdict == "untestable" and expand.reason.startswith("does not build with the pass (it does without)")


def test_cli_regress_adds_generated_models_that_replay_by_name(tmp_path, capsys):
    out = tmp_path / "r.json"
    code, stdout, err = run_cli(capsys, "regress", "--pass", "FoldConstant", "--random", "3", "--seed", "5",
                                "--target-pass", "FoldConstant", "--json", str(out), "--jobs", "0", "-q")
    assert code == 0, err
    rows = json.loads(out.read_text())["rows"]
    assert [r["model"] for r in rows] == [f"random/5-{i}@FoldConstant" for i in range(3)]
    assert all(r["changed"] and r["verdict"] == "clean" for r in rows), rows
    assert "--models random/5-1@FoldConstant" in rows[1]["replay"] and "--seed 5" in rows[1]["replay"]
    # the replay line names the same model, with the ranges it was generated for
    made, = [m for m in collect(["random/5-1@FoldConstant"])]
    assert made.source == "random:5:1::FoldConstant" and made.ranges


def test_discontinuous_generated_models_are_asked_for_and_named_so():
    from tvm_numguard.cli.regress import CorpusChoice
    from tvm_numguard.testing.generate.ops import SPECS
    from tvm_numguard.testing.regress.corpus import random_graph

    models = CorpusChoice((), 30, None, discontinuous=True).models(2)
    assert all(m.name.endswith("~discontinuous") for m in models)
    again, = collect([models[7].name])
    assert again == models[7]
    ops = {op for m in models for op in random_graph(m.source).operators()}
    assert ops & {name for name, spec in SPECS.items() if spec.discontinuous}


def test_the_summary_tells_the_changed_rate_on_generated_models(capsys):
    code, stdout, err = run_cli(capsys, "regress", "--pass", "FoldConstant", "--models", "tiny/mlp", "--random", "2",
                                "--target-pass", "FoldConstant", "--jobs", "0", "-q")
    assert code == 0, err
    assert "FoldConstant: changed 2 of 3 model(s) (2 of the 2 generated)" in stdout


def test_regress_json_of_a_pass_authors_pass_follows_its_shipped_schema(tmp_path, capsys):
    """Issue 55.5: regress --json had no schema. A PyExprMutator that computes rsqrt in float16 over a
    Llama block (it violates) and a UNet (no rsqrt: it changes nothing there): the document validates,
    and a document that breaks it (an unknown verdict, a row missing its score) does not."""
    import jsonschema
    from torch_blocks import llama_block, unet

    out = tmp_path / "r.json"
    code, _, err = run_cli(capsys, "regress", "--pass", "regress_passes:make_rsqrt_fp16", "--models",
                           llama_block(tmp_path / "llama.pt2"), "--models", unet(tmp_path / "unet.pt2"),
                           "--low", "-2", "--high", "2", "--budget", "10", "--json", str(out),
                           "--out", str(tmp_path / "w"), "--jobs", "0", "-q")
    assert code == 1, err
    data = json.loads(out.read_text())
    validate(data, REGRESS_SCHEMA)
    assert [(r["model"].rsplit("/", 1)[-1], r["verdict"], r["changed"]) for r in data["rows"]] == [
        ("llama.pt2", "violation", True), ("unet.pt2", "clean", False)]
    for broken in ({**data["rows"][0], "verdict": "fine"}, {k: v for k, v in data["rows"][0].items() if k != "score"}):
        with pytest.raises(jsonschema.ValidationError):
            validate({**data, "rows": [broken]}, REGRESS_SCHEMA)
