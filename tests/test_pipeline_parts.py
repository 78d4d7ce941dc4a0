"""Pipeline parts given as module:callable or file.py:callable, and replay from
any folder (issue 10.4)."""

import json
import os
import shutil

import pytest

from tvm_numguard.base.errors import PipelineError
from tvm_numguard.ir.pipeline import CompileConfig

from clirun import assert_one_line_error, run_cli  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
RANGE = ["--low", "0", "--high", "1", "--budget", "10"]


def test_a_factory_that_raises_is_a_usage_error(capsys, tmp_path):
    (tmp_path / "broken.py").write_text("def make():\n    raise RuntimeError('factory broke')\n")
    for option in ("--pipeline", "--tir-pipeline"):
        part = f"{tmp_path / 'broken.py'}:make," + ("zero" if option == "--pipeline" else "default")
        code, out, err = run_cli(capsys, "bisect", DEMO, *RANGE, option, part)
        assert_one_line_error(code, err, "make() raised RuntimeError: factory broke")


def test_a_factory_gets_the_target_only_when_it_asks_for_it():
    # EliminateCommonSubexpr(call_only=False): one parameter, with a default
    config = CompileConfig(pipeline="tvm.relax.transform:EliminateCommonSubexpr,zero")
    config.validate()


def test_a_pipeline_file_imports_the_modules_beside_it(capsys, tmp_path):
    folder = tmp_path / "passes"
    folder.mkdir()
    (folder / "helpers.py").write_text("from tvm import relax\n\ndef fast():\n    return relax.transform."
                                       "FastMathTransform()\n")
    (folder / "mypipe.py").write_text("from helpers import fast\n\ndef make(target):\n    return fast()\n")
    code, out, err = run_cli(capsys, "passes", DEMO, "--pipeline", f"{folder / 'mypipe.py'}:make,zero")
    assert code == 0, err
    assert "FastMathTransform#0" in out


def test_file_parts_are_kept_absolute(tmp_path, monkeypatch):
    (tmp_path / "p.py").write_text("from tvm import relax\n\ndef make():\n    return relax.transform.FoldConstant()\n")
    monkeypatch.chdir(tmp_path)
    config = CompileConfig(pipeline="p.py:make,zero")
    assert config.pipeline == f"{tmp_path / 'p.py'}:make,zero"
    with pytest.raises(PipelineError, match="^opt_level must be an integer from 0 to 4"):
        CompileConfig(opt_level=5)


def test_report_replays_from_any_folder(capsys, tmp_path, monkeypatch):
    """Made in work/ with relative paths, the report in out/; replayed from elsewhere/."""
    work, out_dir, elsewhere = tmp_path / "work", tmp_path / "work" / "out", tmp_path / "elsewhere"
    for folder in (work, out_dir, elsewhere):
        folder.mkdir(exist_ok=True)
    shutil.copy(DEMO, work / "mlp.onnx")
    (work / "mypipe.py").write_text("from tvm import relax\n\ndef make():\n    return relax.transform."
                                    "ToMixedPrecision()\n")
    monkeypatch.chdir(work)
    code, out, err = run_cli(capsys, "bisect", "mlp.onnx", *RANGE, "--pipeline", "mypipe.py:make,default",
                             "--json", "out/r.json", "--save-inputs", "w.npz")
    assert code == 1, err
    data = json.load(open(out_dir / "r.json"))
    assert f" {work / 'mlp.onnx'} " in data["replay"] and data["replay"].endswith(f"--inputs {work / 'w.npz'}")
    monkeypatch.chdir(elsewhere)
    code, out, err = run_cli(capsys, "replay", str(out_dir / "r.json"))
    assert code == 1, err
    assert "the finding reproduces" in out


def test_a_mistyped_pass_name_gets_did_you_mean():
    from tvm_numguard.base.errors import PipelineError
    from tvm_numguard.ir.pipeline import CompileConfig

    for typo, meant in [("ToMixedPrecison", "ToMixedPrecision"), ("fastmathtransform", "FastMathTransform"),
                        ("FoldConstnt", "FoldConstant")]:
        with pytest.raises(PipelineError, match=f"did you mean {meant}"):
            CompileConfig(pipeline=f"{typo},zero").validate()
