"""The CPU build as a second reference: a target's build against the same pipeline built for llvm."""

import json
import os
import types

import numpy as np
import pytest

from tvm_numguard.ir.model import load_model
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.build.compile import compile_model, run_build
from tvm_numguard.judge.cpu_reference import judge_against_cpu, wants_cpu_reference
from tvm_numguard.base.tolerance import Tolerance

from clirun import run_cli  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
AVX2 = '{"kind": "llvm", "mcpu": "core-avx2"}'


def test_every_target_but_plain_llvm_gets_the_cpu_reference():
    assert not wants_cpu_reference("llvm")
    assert wants_cpu_reference(AVX2) and wants_cpu_reference('{"kind": "cuda", "arch": "sm_90"}')


def _fake_session(model, outputs):
    """What judge_against_cpu asks of a session, with the target's outputs given."""
    return types.SimpleNamespace(model=model, config=CompileConfig(target=AVX2), tol=Tolerance(),
                                 memo=types.SimpleNamespace(note=lambda build: None),
                                 runs=types.SimpleNamespace(optimized_outputs=lambda witness: outputs))


def test_the_target_is_at_fault_only_where_it_is_worse_against_the_truth():
    model = load_model(DEMO)
    witness = {"x": np.random.default_rng(0).uniform(0, 1, (1, 32)).astype("float32")}
    cpu = run_build(compile_model(model.mod, CompileConfig()), model.input_names(), witness)
    truth = [o.astype(np.float64) for o in cpu]
    said = judge_against_cpu(_fake_session(model, cpu), witness, lambda w: (truth, "the test's truth", None))
    assert said.verdict == "agrees" and not said.differs
    wrong = [o + np.float32(0.1) for o in cpu]
    said = judge_against_cpu(_fake_session(model, wrong), witness, lambda w: (truth, "the test's truth", None))
    assert said.verdict == "target" and said.differs and said.truth == "the test's truth"
    # the same difference, where the truth is the target's side: another rounding, not the target's fault
    said = judge_against_cpu(_fake_session(model, wrong), witness,
                             lambda w: ([o.astype(np.float64) for o in wrong], "the test's truth", None))
    assert said.verdict == "benign"


@pytest.mark.slow  # end to end (~15 s): the fast tier keeps judge_against_cpu's clauses above
def test_bisect_on_another_cpu_target_reports_the_cpu_stage(capsys, tmp_path):
    document = tmp_path / "r.json"
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--budget", "8",
                             "--target", AVX2, "--json", str(document))
    data = json.loads(document.read_text())  # validated against the schema when written
    assert code == 0, err
    assert data["cpu_reference"]["verdict"] in ("agrees", "benign") and data["cpu_reference"]["reference"] == "llvm"
    assert data["attribution"]["target"] == data["cpu_reference"]["verdict"] and "target" not in data["at_fault"]
    assert "build agrees with the same pipeline built for llvm" in out or "not by the target's fault" in out
