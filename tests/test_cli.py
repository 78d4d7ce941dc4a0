"""The command line: exit codes, one-line errors, reports that are whole or absent."""

import json
import os
import stat
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tvm_numguard import load_model
from tvm_numguard.report import validate
from tvm_numguard.report.files import read_witness
from clirun import assert_one_line_error, error_lines, run_cli, run_printed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")


def onnx_file(path, op="Relu", dims=(1, 4), extra_attrs=None):
    node = helper.make_node(op, ["x"], ["y"], **(extra_attrs or {}))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def log_model(path):
    node = helper.make_node("Log", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def test_demo_violation_exit_1_with_report_and_witness(capsys, tmp_path):
    report = tmp_path / "r.json"
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--pipeline",
                             "ToMixedPrecision,default", "--json", str(report))
    assert code == 1, err
    assert "culprit   ToMixedPrecision#0" in out
    data = json.loads(report.read_text())
    validate(data)
    witness = tmp_path / "r.witness.npz"
    assert data["witness"]["path"] == str(witness) and witness.exists()
    assert f"--inputs {witness}" in data["replay"]


def test_witness_is_kept_when_the_bisection_is_interrupted(capsys, tmp_path, monkeypatch):
    # Ctrl-C (or a crash) during the long bisection: the witness was written before it began
    import tvm_numguard.engine.engine

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tvm_numguard.engine.engine, "bisect_session", interrupted)
    witness = tmp_path / "w.npz"
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--pipeline",
                             "ToMixedPrecision,default", "--save-inputs", str(witness), "-v")
    last = err.strip().splitlines()[-1]  # the phase it stopped in, then where the witness is
    assert code == 130 and last.startswith("numguard: interrupted while violation (score "), last
    assert last.endswith(f"; the witness of the violation found is kept in {witness}"), last
    assert f"witness saved to {witness}" in err
    inputs = read_witness(str(witness))
    model = load_model(DEMO)
    assert set(inputs) == {spec.name for spec in model.inputs}
    assert all(0.0 <= v.min() and v.max() <= 1.0 for v in inputs.values())
    # and it is a witness: bisecting on it alone shows the violation
    monkeypatch.undo()
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--pipeline",
                             "ToMixedPrecision,default", "--inputs", str(witness), "--json", str(tmp_path / "r.json"))
    assert code == 1 and "culprit   ToMixedPrecision#0" in out


def test_clean_exit_0_and_verbose_trace(capsys, tmp_path):
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--pipeline", "zero", "-v",
                             "--save-inputs", str(tmp_path / "w.npz"))
    assert code == 0
    assert "numguard bisect: clean" in out
    assert "BISECT: running pass (" in err and "FuseOps#0 [relax]" in err
    assert "BISECT: NOT running pass (" in err
    assert not (tmp_path / "w.npz").exists()  # no violation, no witness


def test_passes_lists_events(capsys):
    code, out, err = run_cli(capsys, "passes", DEMO, "--pipeline", "FastMathTransform,zero")
    assert code == 0
    assert "FastMathTransform#0" in out and "optional" in out and "required" in out
    assert "tirx.LowerIntrin#0" in out


@pytest.mark.parametrize(
    "make_args,fragments",
    [
        (lambda t: ["bisect", str(t / "missing.onnx"), "--low", "0", "--high", "1"], ["model file not found"]),
        (lambda t: ["bisect", str(t), "--low", "0", "--high", "1"], ["directory"]),
        (lambda t: ["bisect", DEMO, "--low", "1", "--high", "0"], ["low > high"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "inf"], ["finite"]),
        (lambda t: ["bisect", DEMO, "--low", "nan", "--high", "1"], ["finite"]),
        (lambda t: ["bisect", DEMO], ["--low"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--pipeline", "NoSuchPass,zero"], ["NoSuchPass"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--pipeline", "zero,,default"], ["empty part"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--pipeline", "nosuchmodule:f"], ["nosuchmodule"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--tir-pipeline", "NoTirPass,default"], ["NoTirPass"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--target", "nosuchtarget"], ["nosuchtarget"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--target", "cuda"], ["cuda"]),
        (lambda t: ["bisect", DEMO, "--range", "nosuch=0:1"], ["nosuch", "x"]),
        (lambda t: ["bisect", DEMO, "--range", "x=0"], ["NAME=LO:HI"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--shape", "x=1,bad"], ["--shape"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--json", str(t / "no" / "r.json")],
         ["does not exist"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--inputs", str(t / "none.npz")], ["not found"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--budget", "0"], ["budget"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--budget", "lots"], ["budget"]),
        (lambda t: ["bisect", DEMO, "--low", "-1e39", "--high", "1"], ["outside the range of float32"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--atol", "nan"], ["atol", ">= 0", "nan"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--rtol", "nan"], ["rtol", ">= 0", "nan"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--rtol", "-1"], ["rtol", ">= 0"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--atol", "-1"], ["atol", ">= 0"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--atol", "inf"], ["atol", "finite"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--opt-level", "9"],
         ["--opt-level must be", "0 to 4"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--opt-level", "-5"],
         ["--opt-level must be", "0 to 4"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--shape", "x=1,16"],
         ["--shape x: dimension 1 is fixed at 32 in the model, 16 given"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--shape", "x=2,32"],  # a batch the model forbids
         ["--shape x: dimension 0 is fixed at 1 in the model, 2 given", "--fix-shapes"]),
        (lambda t: ["bisect", DEMO, "--low", "0", "--high", "1", "--shape", "x=1,16", "--fix-shapes"],
         ["--shape x: dimension 1 is fixed at 32 in the model, 16 given", "does not import at that shape",
          "operator MatMul"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, make_args, fragments):
    code, out, err = run_cli(capsys, *make_args(tmp_path))
    assert_one_line_error(code, err, *fragments)


def test_not_a_model(capsys, tmp_path):
    path = tmp_path / "fake.onnx"
    path.write_text("this is not a model\n")
    code, _, err = run_cli(capsys, "bisect", str(path), "--low", "0", "--high", "1")
    assert_one_line_error(code, err, "not a readable ONNX model")


def recurrent_onnx(path, op: str) -> str:
    """An ONNX LSTM or GRU over 5 steps of 8 features, 16 hidden (valid: the ONNX checker passes it)."""
    from onnx import numpy_helper

    import numpy as np

    gates = {"LSTM": 4, "GRU": 3}[op]
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.uniform(-0.3, 0.3, (1, gates * 16, n)).astype(np.float32), name)
               for name, n in (("W", 8), ("R", 16))]
    node = helper.make_node(op, ["x", "W", "R"], ["y"], hidden_size=16)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 1, 1, 16])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return str(path)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_an_operator_tvm_cannot_import_is_tvms_limit_with_its_own_exit_code_and_the_route_that_imports(
        capsys, tmp_path, op):
    code, out, err = run_cli(capsys, "bisect", recurrent_onnx(tmp_path / "rnn.onnx", op), "--low", "0", "--high", "1")
    assert code == 5 and out == "", err  # not 2: the model is valid, TVM 0.27's ONNX frontend lacks the operator
    (line,) = error_lines(err)
    assert line.startswith("numguard: TVM cannot import the model:") and f"no converter for {op}" in line
    assert "a limit of TVM, not of the model" in line and "Traceback" not in err
    assert ".pt2" in line and "torch.export.export" in line  # the route that imports: test_the_pt2_route_...


def test_the_pt2_route_the_limit_names_imports_an_lstm_and_a_gru(tmp_path):
    import torch

    for kind in ("LSTM", "GRU"):
        net = getattr(torch.nn, kind)(8, 16)
        path = str(tmp_path / f"{kind}.pt2")
        torch.export.save(torch.export.export(net.eval(), (torch.randn(5, 1, 8),)), path)
        assert [s.shape for s in load_model(path).inputs] == [(5, 1, 8)]


def test_an_operator_tvm_lacks_is_named_and_one_of_no_onnx_domain_is_bad_input(capsys, tmp_path):
    # Celu is a valid ONNX operator that TVM's Relax frontend does not convert: TVM's limit
    code, _, err = run_cli(capsys, "bisect", onnx_file(tmp_path / "op.onnx", op="Celu"), "--low", "0", "--high", "1")
    assert code == 5 and "no converter for Celu" in err and ".pt2" not in err  # the torch route has no Celu to say
    node = helper.make_node("MyOp", ["x"], ["y"], domain="com.example")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "custom.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                      helper.make_opsetid("com.example", 1)]), str(path))
    code, _, err = run_cli(capsys, "bisect", str(path), "--low", "0", "--high", "1")
    assert_one_line_error(code, err, "MyOp")  # no ONNX operator: not a model ONNX defines, exit 2


def test_malformed_onnx_node_is_rejected_before_the_frontend(capsys, tmp_path):
    # MaxUnpool with one input is malformed; TVM's frontend segfaults on it
    path = onnx_file(tmp_path / "bad.onnx", op="MaxUnpool", dims=(1, 1, 4, 4), extra_attrs={"kernel_shape": [2, 2]})
    code, _, err = run_cli(capsys, "bisect", path, "--low", "0", "--high", "1")
    assert_one_line_error(code, err, "MaxUnpool")


def test_dynamic_dims_need_shape(capsys, tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    path = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    code, _, err = run_cli(capsys, "bisect", str(path), "--low", "0", "--high", "1")
    assert_one_line_error(code, err, "'x'", "--shape x=N,4")
    code, out, err = run_cli(capsys, "bisect", str(path), "--low", "0", "--high", "1", "--shape", "x=2,4",
                             "--pipeline", "zero")
    assert code == 0, err


def test_fix_shapes_still_imports_a_model_at_a_size_it_fixes_and_says_the_framework_cannot_judge(capsys):
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--shape", "x=2,32", "--fix-shapes",
                             "--pipeline", "zero", "--budget", "5")
    assert code == 0, err
    assert "x[2, 32]" in out and "import: not answered" in out
    assert "the model fixes input 'x' at [1, 32], given [2, 32]" in out


def test_reference_nan_everywhere_blames_the_range(capsys, tmp_path):
    path = log_model(tmp_path / "log.onnx")
    report = tmp_path / "r.json"
    code, _, err = run_cli(capsys, "bisect", path, "--low", "-2", "--high", "-1", "--json", str(report))
    assert_one_line_error(code, err, "NaN/Inf on every", "range is wrong")
    assert not report.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "log.onnx"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output_directory(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    code, _, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--json", str(locked / "r.json"))
    assert_one_line_error(code, err, "not writable")


def test_output_path_that_is_a_directory(capsys, tmp_path):
    code, _, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--json", str(tmp_path))
    assert_one_line_error(code, err, "is a directory")


def test_console_script_exit_codes(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "numguard")
    proc = subprocess.run([exe, "bisect", str(tmp_path / "x.onnx"), "--low", "0", "--high", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "model file not found" in proc.stderr


def test_module_callable_parts_import_from_the_working_directory(tmp_path):
    (tmp_path / "mypasses.py").write_text(
        "from tvm import relax\n\ndef make_pass():\n    return relax.transform.FastMathTransform()\n")
    exe = os.path.join(os.path.dirname(sys.executable), "numguard")
    proc = subprocess.run([exe, "passes", DEMO, "--pipeline", "mypasses:make_pass,zero"], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "FastMathTransform#0" in proc.stdout


def test_outputs_that_ignore_the_inputs_are_called_out(capsys, tmp_path):
    """Like the onnx wheel's light models with placeholder weights: y = x * 0 + b."""
    import numpy as np
    from onnx import numpy_helper

    nodes = [helper.make_node("Mul", ["x", "zero"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              initializer=[numpy_helper.from_array(np.zeros((1, 4), np.float32), "zero"),
                                           numpy_helper.from_array(np.ones((1, 4), np.float32), "b")])
    path = str(tmp_path / "constant.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    code, out, err = run_cli(capsys, "bisect", path, "--low", "0", "--high", "1", "--budget", "8",
                             "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    assert "the outputs were the same on every one of the 8 valid inputs tried" in out
    assert "randomize_onnx_weights" in out
    assert json.load(open(tmp_path / "r.json"))["search"]["outputs_constant"] is True
    # the demo's outputs do depend on its inputs
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--budget", "8")
    assert code == 0 and "the outputs were the same" not in out


def test_a_time_limited_search_names_the_budget_that_repeats_it(capsys, tmp_path):
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--budget", "300,0.05s",
                             "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    data = json.load(open(tmp_path / "r.json"))
    done = data["search"]["evaluations"]
    assert data["search"]["stopped_by"] == "time" and done < 300
    assert f"the time limit stopped the search after {done} inputs; --budget {done}/300 repeats these inputs" in out
    assert f"--budget {done}/300 " in data["replay"]
    code, out, err = run_cli(capsys, *data["replay"].split()[1:], "--json", str(tmp_path / "again.json"))
    again = json.load(open(tmp_path / "again.json"))
    assert code == 0 and again["search"]["evaluations"] == done and again["search"]["stopped_by"] == "evaluations"


def test_a_range_of_one_point_is_not_called_input_independent(capsys, tmp_path):
    """Every input tried was the same: identical outputs say nothing about the model."""
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0.5", "--high", "0.5", "--budget", "6",
                             "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    assert "the outputs were the same" not in out
    assert json.load(open(tmp_path / "r.json"))["search"]["outputs_constant"] is False


def test_a_default_witness_never_overwrites_an_earlier_one(tmp_path, monkeypatch):
    """Two runs in one folder keep both witnesses (issue 25); the name is chosen once per command."""
    from tvm_numguard.cli.groups import Outputs

    import time

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(time, "strftime", lambda fmt: "20261126-154512")
    first = Outputs()
    assert first.witness_path == "numguard-witness-20261126-154512.npz"  # says which run: when it started
    (tmp_path / first.witness_path).write_bytes(b"earlier run")
    assert first.witness_path == "numguard-witness-20261126-154512.npz"  # the same command keeps its own name
    second = Outputs()
    assert second.witness_path == "numguard-witness-20261126-154512-2.npz"
    assert Outputs(json="r.json").witness_path == "r.witness.npz"


def _help_of(capsys, command: str) -> str:
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0
    return "".join(out.split())  # click folds the help text, also at hyphens


def _unspaced(text: str) -> str:
    return "".join(text.split())


def test_the_witness_is_written_where_save_inputs_help_says(tmp_path, monkeypatch, capsys):
    import re

    for command in ("bisect", "search", "trace"):
        assert _unspaced("default: next to --json (REPORT.witness.npz for REPORT.json), else "
                         "./numguard-witness-DATE-TIME.npz (when the command started)") in _help_of(capsys, command)
    assert _unspaced("default: ./numguard-witness-DATE-TIME.npz (when the command started)") in _help_of(capsys, "fix")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "search", DEMO, "--low", "0", "--high", "1", "--pipeline",
                           "ToMixedPrecision,default", "--budget", "20", "--jobs", "0")
    assert code == 1, err
    (written,) = os.listdir(tmp_path)
    assert re.fullmatch(r"numguard-witness-\d{8}-\d{6}\.npz", written), written  # DATE-TIME, as the help says
    from tvm_numguard.cli.groups import Outputs

    assert Outputs(json="out/r.json").witness_path == "out/r.witness.npz"


def test_the_usage_hint_names_the_program_as_invoked_and_runs(capsys, script_not_on_path):
    code, _, err = run_cli(capsys, "bisect", DEMO, "--no-such-option")
    assert code == 2
    hint = err.split("(see '", 1)[1].split("')", 1)[0]
    assert hint == f"{script_not_on_path} bisect --help", err
    shown = run_printed(hint, os.getcwd())
    assert shown.returncode == 0 and "Usage:" in shown.stdout and "--save-inputs" in shown.stdout


def test_a_missing_model_file_is_said_before_tvm_is_imported(tmp_path):
    # importing TVM takes seconds; a typo in the path is told at once
    import subprocess
    import sys

    script = ("import sys\nfrom tvm_numguard.cli import main\ntry:\n    main(['bisect', sys.argv[1], '--low', '0', "
              "'--high', '1'])\nexcept SystemExit as done:\n    print(done.code, 'tvm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "missing.onnx")], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    assert "model file not found" in done.stderr


def test_check_help_says_it_builds_nothing(capsys):
    code, out, err = run_cli(capsys, "check", "--help")
    text = " ".join(out.split())
    assert code == 0 and "in the pipeline the check reads (it builds nothing)" in text
    assert "in every build" not in text


def test_a_range_half_given_is_named_by_its_flags_on_the_command_line(capsys):
    # the library's message names the parameters (low, high); the command line says its flags
    assert_one_line_error(*run_cli(capsys, "bisect", DEMO, "--high", "1")[::2], "give both --low and --high")
    with pytest.raises(ValueError, match="give both low and high"):
        __import__("tvm_numguard").Options(low=0.0)


def test_a_bad_tolerance_is_named_by_its_flag_on_the_command_line(capsys):
    assert_one_line_error(*run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--atol", "-1")[::2],
                          "--atol must be a finite number >= 0")
    with pytest.raises(ValueError, match="^rtol must be a finite number >= 0"):
        __import__("tvm_numguard").Options(low=0.0, high=1.0, rtol=float("nan"))


def test_a_negative_seed_or_a_bad_opt_level_is_bad_input_named_by_its_flag(capsys):
    # --seed -1 reached numpy's generator and ended in an internal error (exit 3)
    assert_one_line_error(*run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--seed", "-1")[::2],
                          "--seed must be a whole number >= 0")
    assert_one_line_error(*run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--opt-level", "9")[::2],
                          "--opt-level must be an integer from 0 to 4")
    with pytest.raises(ValueError, match="^seed must be a whole number >= 0"):
        __import__("tvm_numguard").Options(low=0.0, high=1.0, seed=-1)


def test_given_inputs_that_hold_nan_are_said_to_hold_it(tmp_path, capsys):
    """Issue 55.5: NaN in --inputs was reported as the inputs being outside the model's domain."""
    from torch_blocks import unet

    x = np.random.default_rng(0).uniform(-1, 1, (1, 4, 8, 8)).astype("float32")
    x[0, 1, 2, 3] = np.nan
    np.savez(tmp_path / "w.npz", x=x)
    code, _, err = run_cli(capsys, "bisect", unet(tmp_path / "unet.pt2"), "--low", "-1", "--high", "1",
                           "--pipeline", "zero", "--inputs", str(tmp_path / "w.npz"))
    assert_one_line_error(code, err, "the given inputs hold NaN/Inf themselves (x: 1 NaN of 256 elements)")
    assert "domain" not in err


def test_a_torch_import_failure_names_the_operator_not_its_printed_object(tmp_path, capsys):
    """Issue 55.5: TVM prints an operator in an error as its whole object (ir.Op(span=None, ..., some 500
    characters), and the one line was cut inside it. A float16 UNet whose GroupNorms keep float32
    parameters: TVM's torch frontend refuses the mixed group_norm, and the line names it."""
    import torch
    from torch_blocks import unet

    path = unet(tmp_path / "unet.pt2", dtype=torch.float16, norms=torch.float32)
    code, out, err = run_cli(capsys, "bisect", path, "--low", "-1", "--high", "1", "--pipeline", "zero")
    assert code == 1 and out == "", err
    first = err.splitlines()[0]
    assert first.endswith(f"cannot import {path}: relax.nn.group_norm expects that all inputs must have the same "
                          "dtype, but got T.float32 and T.float16"), first
    assert "ir.Op(" not in err and "..." not in first


def test_a_target_tvm_has_no_default_pipeline_for_is_a_usage_error_not_an_internal_one(capsys):
    """A new user's --target c with the default pipeline: TVM 0.27's get_default_pipeline raises ValueError
    for it, which came out as 'internal error' (exit 3); it is the user's choice of pipeline: exit 2."""
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--target", "c")
    assert_one_line_error(code, err, "TVM has no 'default' pipeline for target c", "--pipeline zero")
