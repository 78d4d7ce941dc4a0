"""A pipeline that does not build is a finding: the pass that breaks it is
bisected on 'builds / does not build', confirmed, and reported with a fix and
a repro that needs TVM alone (exit 1, not a usage error) (issue 25)."""

import json
import os
import subprocess
import sys

import pytest

from clirun import run_cli  # noqa: E402
from test_advice import code_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
BREAKER = os.path.join(ROOT, "tests", "build_breakers.py") + ":reject_float16"
PIPELINE = f"FoldConstant,ToMixedPrecision,{BREAKER},default"


def test_passes_lists_the_events_up_to_where_the_build_stopped_and_bisects_nothing(capsys, tmp_path):
    document = tmp_path / "passes.json"
    code, out, err = run_cli(capsys, "passes", DEMO, "--pipeline", PIPELINE, "--json", str(document))
    assert code == 1, err
    assert "the build stopped in RejectFloat16#0 or after it: ValueError: RejectFloat16: float16 tensors" in out
    assert "numguard bisect" in out and "BUILD FAILURE" not in out and "probe" not in err  # listed, not bisected
    rows = json.loads(document.read_text())["events"]
    assert [r["id"] for r in rows][-1] == "RejectFloat16#0" and "build_error" in rows[-1]
    assert "ToMixedPrecision#0" in [r["id"] for r in rows]  # the events before it are listed


def test_bisect_and_check_name_the_pass_that_breaks_the_build(capsys, tmp_path):
    for command in ("bisect", "check"):
        document = tmp_path / f"{command}.json"
        code, out, err = run_cli(capsys, command, DEMO, "--low", "0", "--high", "1", "--pipeline", PIPELINE,
                                 "--json", str(document))
        assert code == 1, err
        data = json.loads(document.read_text())  # a finding is never lost: validated when written
        assert data["verdict"] == "build_failure" and data["command"] == command
        assert data["build_failure"]["culprit"] == "RejectFloat16#0" and data["build_failure"]["confirmed"]
        assert "from_onnx" in data["build_failure"]["repro"]
        out = " ".join(out.split())  # prose lines are folded
        assert "BUILD FAILURE: pass RejectFloat16#0 breaks the build" in out
        assert "confirmed: skipping it alone builds" in out
        assert "RejectFloat16: float16 tensors are not supported" in out
        assert "Traceback" not in err


@pytest.mark.slow  # two fresh processes importing TVM and torch: the check above keeps the finding in the fast tier
def test_the_repro_fails_and_the_fix_builds_in_a_fresh_process(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--pipeline", PIPELINE)
    assert code == 1
    blocks = code_blocks(out)
    fix, repro = blocks[0], blocks[-1]
    assert "from_onnx" in repro
    failing = subprocess.run([sys.executable, "-c", repro], capture_output=True, text=True, timeout=300)
    assert failing.returncode != 0 and "RejectFloat16: float16 tensors are not supported" in failing.stderr
    model = "\n".join(line for line in repro.splitlines() if line.startswith(("import", "from", "mod =")))
    built = subprocess.run([sys.executable, "-c", model + "\n" + fix], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]


def test_a_build_code_generation_breaks_whatever_is_skipped_blames_no_pass(capsys, tmp_path):
    """TVM 0.27's llvm code generation has no float16 atan ('unknown intrinsic tirx.atan', after every
    pass ran). The probes were built lazily, their machine code made only to run them, and a build
    question runs nothing: every probe 'built', and the last optional pass was blamed and 'confirmed'
    (a red-team trial). Every probe makes its machine code now: no pass is at fault."""
    from onnx import TensorProto, helper

    from onnxfile import save_onnx

    path = save_onnx(str(tmp_path / "atan16.onnx"), [helper.make_node("Atan", ["x"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 16])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 16])], [], opset=18)
    document = tmp_path / "atan.json"
    code, out, err = run_cli(capsys, "bisect", path, "--low", "-2", "--high", "2", "--json", str(document))
    failure = json.loads(document.read_text())["build_failure"]
    assert code == 1 and failure["culprit"] is None and "unknown intrinsic tirx.atan" in failure["reference_error"]
    assert "CODEGEN: llvm's code generation has no lowering of tirx.atan" in " ".join(out.split())
