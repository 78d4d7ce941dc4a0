"""numguard replay: a recorded finding reproduces, or says what changed; bad reports are one line and exit 2."""

import json
import os
import shutil

import pytest
import tvm

from tvm_numguard.cli import main
from tvm_numguard.report import validate
from clirun import assert_one_line_error, run_cli, run_printed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
VIOLATING = ["--pipeline", "ToMixedPrecision,default", "--low", "0", "--high", "1", "--budget", "20"]


def make_report(folder, *args):
    """Run the CLI in ``folder`` on a copy of the demo model, with relative paths
    (so the report names mlp.onnx and r.witness.npz as the user typed them)."""
    os.makedirs(folder, exist_ok=True)
    shutil.copy(DEMO, os.path.join(folder, "mlp.onnx"))
    here = os.getcwd()
    os.chdir(folder)
    try:
        with pytest.raises(SystemExit) as exc:
            main(["bisect", "mlp.onnx", *args, "--json", "r.json"])
    finally:
        os.chdir(here)
    return exc.value.code


@pytest.fixture(scope="module")
def violation_dir(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("violation"))
    assert make_report(folder, *VIOLATING) == 1
    return folder


@pytest.fixture
def copy_report(violation_dir, tmp_path, monkeypatch):
    """Copy the violation report (and, unless told, its witness and model) into
    tmp_path after ``edit(data)``; replay runs from an unrelated folder. Replay
    also looks in the folder the report was made in: a report copied without
    its model or witness names a folder that no longer exists."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    def copy(edit=None, model=True, witness=True):
        data = json.loads(open(os.path.join(violation_dir, "r.json")).read())
        if edit is not None:
            edit(data)
        for name, wanted in (("mlp.onnx", model), ("r.witness.npz", witness)):
            if wanted:
                shutil.copy(os.path.join(violation_dir, name), tmp_path / name)
        if not (model and witness):  # a file that is nowhere: the folder the report was made in is gone too
            data["environment"]["cwd"] = str(tmp_path / "gone")
        path = tmp_path / "r.json"
        path.write_text(json.dumps(data))
        return str(path)

    return copy


def test_violation_reproduces_exit_1_and_culprit_still_clears(capsys, copy_report, tmp_path):
    report = copy_report()
    result = tmp_path / "replay.json"
    code, out, err = run_cli(capsys, "replay", report, "--json", str(result))
    assert code == 1, err
    assert "numguard replay: VIOLATION, the finding reproduces" in out
    assert "culprit   ToMixedPrecision#0: skipping it alone still clears the violation" in out
    assert "nothing in the environment changed" in out
    data = json.loads(result.read_text())
    assert data["reproduces"] is True and data["exit_code"] == 1
    assert data["culprit"]["id"] == "ToMixedPrecision#0" and data["culprit"]["still_clears"] is True
    assert data["score"] > 1 and data["configuration"]["pipeline"] == "ToMixedPrecision,default"
    assert data["model"]["source"] == str(tmp_path / "mlp.onnx")  # found next to the report


def test_witness_named_under_another_folder_is_found_next_to_the_report(capsys, copy_report, tmp_path):
    # e.g. made with --json out/r.json, replayed from inside out/
    code, out, err = run_cli(capsys, "replay", copy_report(_set("witness", "path", "out/r.witness.npz")))
    assert code == 1, err
    assert f"witness   {tmp_path / 'r.witness.npz'}" in out


def test_culprit_that_is_no_longer_an_event_is_not_tested(capsys, copy_report):
    def rename(data):
        data["bisection"]["culprit"]["id"] = "NoSuchPass#0"

    code, out, err = run_cli(capsys, "replay", copy_report(rename))
    assert code == 1, err
    assert "culprit   NoSuchPass#0: not tested (it is no longer an optional pass event" in out


def test_edited_configuration_no_longer_reproduces_exit_0(capsys, copy_report):
    def zero(data):
        data["configuration"]["pipeline"] = "zero"
        validate(data)  # still a valid report

    report = copy_report(zero)
    recorded = json.loads(open(report).read())["metrics"][0]["score"]
    code, out, err = run_cli(capsys, "replay", report)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    assert lines[0].startswith(f"numguard replay: the finding no longer reproduces (score 0 now, {recorded:.3g} in the "
                               "report)")
    assert lines[0].endswith("; nothing in the environment changed")


def test_no_longer_reproduces_names_what_changed(capsys, copy_report):
    def older_tvm(data):
        data["configuration"]["pipeline"] = "zero"
        data["environment"]["tvm_version"] = "0.26.0"
        validate(data)

    code, out, err = run_cli(capsys, "replay", copy_report(older_tvm))
    assert code == 0, err
    assert "no longer reproduces" in out and f"; TVM 0.26.0 -> {tvm.__version__}" in out


def _set(*keys_value):
    *keys, value = keys_value

    def edit(data):
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


@pytest.mark.parametrize(
    "make,fragments",
    [
        (lambda c, t: str(t / "missing.json"), ["report file not found", "missing.json"]),
        (lambda c, t: str(t), ["report path is a directory"]),
        (lambda c, t: _write(t / "x.json", "this is not JSON\n"), ["not a numguard report: not JSON"]),
        (lambda c, t: _write(t / "x.json", '{"hello": 1}'), ["not a numguard report:", "is a required property"]),
        (lambda c, t: c(_set("verdict", "maybe")), ["not a numguard report: 'maybe' is not one of", "(at $.verdict)"]),
        (lambda c, t: c(_set("command", "guard")), ["in-memory module", "cannot be replayed from the command line"]),
        (lambda c, t: c(witness=False), ["witness file not found: r.witness.npz"]),
        (lambda c, t: c(model=False), ["model file not found: mlp.onnx"]),
        (lambda c, t: c(_set("model", "sha256", "0" * 64)), ["the report was made from a different model file"]),
    ],
)
def test_bad_report_is_one_line_and_exit_2(capsys, copy_report, tmp_path, make, fragments):
    code, out, err = run_cli(capsys, "replay", make(copy_report, tmp_path))
    assert_one_line_error(code, err, *fragments)
    assert out == ""


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_changed_model_file_is_refused(capsys, copy_report, tmp_path):
    report = copy_report()
    with open(tmp_path / "mlp.onnx", "ab") as f:
        f.write(b"\0")  # the same name, other bytes
    code, _, err = run_cli(capsys, "replay", report)
    assert_one_line_error(code, err, "mlp.onnx: the report was made from a different model file")


def test_clean_report_has_nothing_to_replay(capsys, tmp_path):
    folder = str(tmp_path / "clean")
    assert make_report(folder, "--pipeline", "zero", "--low", "0", "--high", "1", "--budget", "20") == 0
    capsys.readouterr()
    code, _, err = run_cli(capsys, "replay", os.path.join(folder, "r.json"))
    assert_one_line_error(code, err, "nothing to replay: the report's verdict is clean and it has no witness")


def test_unwritable_json_fails_before_any_build(capsys, copy_report, tmp_path):
    code, _, err = run_cli(capsys, "replay", copy_report(), "--json", str(tmp_path / "no" / "out.json"))
    assert_one_line_error(code, err, "does not exist")


def test_an_import_finding_has_nothing_to_rebuild_and_its_replay_line_runs_as_printed(capsys, tmp_path,
                                                                                     script_not_on_path):
    from test_framework import mvn_model

    model = mvn_model(tmp_path / "mvn.onnx")
    code, _, err = run_cli(capsys, "bisect", model, "--low", "900", "--high", "1100", "--budget", "20",
                           "--json", str(tmp_path / "r.json"))
    assert code == 1, err
    code, _, err = run_cli(capsys, "replay", str(tmp_path / "r.json"))
    assert_one_line_error(code, err, "nothing for replay to rebuild")
    line = err.split("reruns it with the framework: ", 1)[1].strip()
    assert line.startswith(f"{script_not_on_path} bisect "), line  # the program as invoked
    again = run_printed(line, tmp_path)
    assert again.returncode == 1 and "IMPORT" in again.stdout, again.stderr[-2000:]
