"""What the command line tells a newcomer: the fix and how to verify it,
progress in a CI log, versions, exit codes, the short event list."""

import json
import os
import re
import shlex

import pytest

from clirun import error_lines, run_cli
from tvm_numguard.cli.console import PROGRESS_PREFIX

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
UNSAFE = ["--low", "0", "--high", "1", "--pipeline", "ToMixedPrecision,default", "--budget", "20"]


def test_the_summary_says_what_to_do_and_the_verify_line_verifies_it(capsys, tmp_path):
    code, out, err = run_cli(capsys, "bisect", DEMO, *UNSAFE, "--json", str(tmp_path / "r.json"))
    assert code == 1, err
    assert "pass ToMixedPrecision#0 changes what the model computes" in out.splitlines()[0]
    assert "max(atol, rtol * |reference|)" in out and "above 1 is a violation" in out
    assert 'disabled_pass=["ToMixedPrecision"]' in out and "tvm_numguard.guard(low=0.0, high=1.0)" in out
    verify = next(line for line in out.splitlines() if line.startswith("  verify"))
    words = shlex.split(verify.split("    ", 1)[1].split("   (expect")[0])
    assert words[:2] == ["numguard", "bisect"] and "--disable" in words
    # one score per line, each saying what it compares; the search's own (the worse of them) is not one
    data = json.load(open(tmp_path / "r.json"))
    scored = [line for line in out.splitlines() if re.search(r"\bscore [0-9]", line)]
    assert "inputs" not in "".join(scored) and not any(len(re.findall(r"\bscore [0-9]", s)) > 1 for s in scored)
    (passed,) = [line.split() for line in scored if line.split()[:2] == ["pass", "score"]]
    (imported,) = [line.split() for line in scored if line.split()[:2] == ["import", "score"]]
    assert float(passed[2]) == pytest.approx(data["metrics"][0]["score"], rel=1e-2)
    assert float(imported[2]) == pytest.approx(data["framework"]["outputs"][0]["score"], rel=1e-2)
    assert "the optimized build against the reference" in " ".join(passed)
    assert "TVM's reference against the model's framework (onnxruntime" in " ".join(imported)
    (stages,) = [line for line in out.splitlines() if line.startswith("  stages")]
    assert "import: agrees" in stages and "lowering: " in stages and "float64 build" in stages  # said, explained
    code, out, err = run_cli(capsys, *words[1:])
    assert code == 0, out + err  # the fix the summary proposes clears the violation
    assert "disabled: ToMixedPrecision#0" in out


def test_the_page_colours_each_stage_as_the_summary_words_it():
    from tvm_numguard.report.html import _stages

    data = {"attribution": {"import": "import", "pass": "clean", "target": "unanswered", "lowering": "differs"},
            "cpu_reference": {"target": "cuda"}}
    page = _stages(data, ["import"])
    assert "import: <span class='bad'>differs, TVM at fault</span>" in page
    assert "pass: <span class='good'>clean</span>" in page
    assert "target: <span class='none'>not answered</span>" in page  # grey, not green
    assert "lowering: <span class='note'>differs</span>" in page and "never a failure" in page  # amber, explained
    assert "target" not in _stages({**data, "cpu_reference": None}, [])  # plain llvm: no target stage


@pytest.mark.parametrize("event, fragment", [
    ("NoSuchPass#0", "no such pass event"),
    ("tirx.LowerIntrin#0", "required"),
    ("FuseOps#0/tirx.Simplify#0", "nested"),
])
def test_disable_takes_optional_events_only(capsys, event, fragment):
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--disable", event)
    assert code == 2 and len(error_lines(err)) == 1 and fragment in error_lines(err)[0], err


@pytest.mark.slow  # a whole bisect to read its log; the fast tier keeps the console's own tests
def test_progress_phases_reach_a_log_that_is_not_a_terminal(capsys):
    code, out, err = run_cli(capsys, "bisect", DEMO, *UNSAFE)
    assert code == 1
    progress = [line for line in err.splitlines() if line.startswith(PROGRESS_PREFIX)]
    assert any("building the optimized model" in line for line in progress)
    assert any("bisecting" in line for line in progress)
    # every step is a line of its own in a log (issue 25: long runs were silent there)
    assert any("bisection probe 1 of about" in line for line in progress), err
    code, out, err = run_cli(capsys, "bisect", DEMO, *UNSAFE, "-v")
    assert any("prefix " in line for line in err.splitlines())
    code, out, err = run_cli(capsys, "bisect", DEMO, *UNSAFE, "-q")
    assert not any(line.startswith(PROGRESS_PREFIX) for line in err.splitlines())


def test_version_names_tvm_and_python(capsys):
    code, out, err = run_cli(capsys, "--version")
    assert code == 0 and out.startswith("numguard ") and "\nTVM 0.27" in out and "\nPython 3." in out


@pytest.mark.parametrize("args", [["--help"], ["bisect", "--help"], ["passes", "--help"]])
def test_help_lists_exit_codes(capsys, args):
    code, out, err = run_cli(capsys, *args)
    assert code == 0
    for line in ("0  clean", "1  violation", "2  bad usage", "3  internal error", "5  TVM cannot import the model"):
        assert line in out, line


@pytest.mark.parametrize("command, line", [("regress", "4  a pass changed"), ("reduce", "0  the repro is written")])
def test_a_command_with_exit_codes_of_its_own_lists_them(capsys, command, line):
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0 and line in out and "1  violation: the optimized" not in out


def test_click_errors_have_the_numguard_prefix(capsys):
    code, out, err = run_cli(capsys, "bisect", DEMO, "--lo", "0")
    assert code == 2 and err.startswith("numguard: error: No such option '--lo'") and "numguard bisect --help" in err


def test_an_internal_error_exits_3_and_asks_for_a_report(capsys, monkeypatch):
    import tvm_numguard.engine.engine

    def broken(*args, **kwargs):
        raise RuntimeError("an invariant of ours broke")

    monkeypatch.setattr(tvm_numguard.engine.engine, "judge", broken)
    code, out, err = run_cli(capsys, "bisect", DEMO, *UNSAFE)
    (line,) = error_lines(err)
    assert code == 3 and "internal error" in line and "an invariant of ours broke" in line
    assert "numguard --version" in line and "Traceback" not in err


def test_passes_shows_top_level_events_unless_all(capsys, tmp_path):
    code, out, err = run_cli(capsys, "passes", DEMO, "--json", str(tmp_path / "top.json"))
    assert code == 0 and "nested events hidden" in out
    top = json.load(open(tmp_path / "top.json"))["events"]
    code, out, err = run_cli(capsys, "passes", DEMO, "--all", "--json", str(tmp_path / "all.json"))
    every = json.load(open(tmp_path / "all.json"))["events"]
    assert top and all("/" not in r["id"] for r in top)
    assert len(every) > len(top) and any("/" in r["id"] for r in every)
    assert {r["id"] for r in top} == {r["id"] for r in every if "/" not in r["id"]}
@pytest.mark.slow  # end to end; the fast tier keeps unit tests of the same logic
def test_trace_names_the_origin_in_the_users_model_and_the_html_leads_with_numbers(capsys, tmp_path):
    html = str(tmp_path / "t.html")
    code, out, err = run_cli(capsys, "trace", DEMO, *UNSAFE, "--html", html, "--json", str(tmp_path / "t.json"))
    assert code == 1, err
    assert "in your model: ONNX MatMul node producing 'h'" in out
    data = json.load(open(tmp_path / "t.json"))
    page = open(html).read()
    assert page.index("id='summary'") < page.index("Error per pass")
    assert "TVM " + data["environment"]["tvm_version"] in page and "What to do" in page
    assert "ONNX MatMul node producing" in page
    score = data["metrics"][0]["score"]
    tir = [r for r in data["trace"]["passes"] if r["level"] == "tir"]
    assert tir and all(r["cumulative"]["score"] == score for r in tir)  # where the build is, not 0


def test_long_binding_lines_are_cut_between_words():
    from tvm_numguard.report.text import shorten

    line = 'lv3: R.Tensor((1, 16), dtype="float16") = R.matmul(lv2, metadata["ir.GenericConst"][1], out_dtype="void")'
    short = shorten(line, 100)
    assert len(short) <= 100 and short.endswith(" ...")
    kept = short[:-4]
    assert line.startswith(kept) and line[len(kept)] in ' ,(="' or kept.endswith((",", "(", "=", " ")), short
    assert shorten("short", 100) == "short"
@pytest.mark.slow  # end to end; the fast tier keeps unit tests of the same logic
def test_long_runs_talk_at_default_verbosity_one_line_per_step_in_a_log(capsys):
    """Search rounds and trace's table rows (with what is left) reach a log
    (stderr not a terminal) at default verbosity (issue 25); probes: above."""
    code, _, err = run_cli(capsys, "trace", DEMO, "--low", "0", "--high", "1", "--pipeline",
                           "ToMixedPrecision,default", "--search", "random", "--budget", "30", "--jobs", "0")
    assert code == 1, err
    steps = [line for line in err.splitlines() if line.startswith(PROGRESS_PREFIX)]
    assert any("inputs evaluated" in line for line in steps), err
    rows = [line for line in steps if "per-pass table: row" in line]
    assert rows and "s left" in rows[0] and rows[-1].rstrip().endswith("measured"), err
    assert "\r" not in err  # overwriting is for terminals only


def test_help_answers_without_importing_tvm():
    """--help and a usage error need no TVM (issue 25: 3 s of import before a help text)."""
    import subprocess
    import sys

    probe = ("import sys\nfrom tvm_numguard.cli import cli\n"
             "for args in (['--help'], ['bisect', '--help'], ['check', '--help'], ['regress', '--help']):\n"
             "    try:\n        cli.main(args=args, prog_name='numguard', standalone_mode=False)\n"
             "    except SystemExit:\n        pass\n"
             "print('tvm imported' if 'tvm' in sys.modules else 'no tvm')\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("no tvm"), out.stdout[-500:]


def test_the_package_keeps_its_public_functions_beside_subpackages_of_the_same_name():
    import types

    import tvm_numguard as ng
    import tvm_numguard.locate.bisect.strategies  # noqa: F401  (imports the subpackage 'bisect')
    import tvm_numguard.api.guard.cache  # noqa: F401
    import tvm_numguard.locate.ranges  # noqa: F401
    import tvm_numguard.api.trace.tracer  # noqa: F401

    for name in ("bisect", "search", "guard", "trace"):
        assert callable(getattr(ng, name)) and not isinstance(getattr(ng, name), types.ModuleType), name
    assert set(ng.__all__) <= set(dir(ng))


def test_a_clean_run_whose_import_differs_says_so_in_its_headline():
    """A clean run with an excused import difference (import score 1e5 on a
    cumsum's cancellation) said a bare "clean": the headline says the
    difference is there and why it is no failure."""
    from tvm_numguard.report.imports import headline

    data = {"verdict": "clean", "at_fault": [], "framework": {"verdict": "benign"}}
    assert headline(data).startswith("clean (TVM's reference differs from the model's framework, not by TVM's fault")
    assert "precision" in headline({**data, "framework": {"verdict": "precision"}})
    assert headline({**data, "framework": {"verdict": "agrees"}}) == ""  # nothing to say: a bare clean
    assert headline({**data, "verdict": "benign"}) == ""  # the pass's own word says it


def test_a_range_is_printed_with_the_digits_that_tell_its_ends_apart():
    """[1000, 1001] was printed '[1e+03, 1e+03]' (a red-team trial)."""
    from tvm_numguard.report.text import span

    assert span({"low": 1000.0, "high": 1001.0}) == "[1000, 1001]"
    assert span({"low": 0.0, "high": 1.0}) == "[0, 1]"
    assert span({"low": 1e8, "high": 1.0000001e8}) == "[1e+08, 1.0000001e+08]"
