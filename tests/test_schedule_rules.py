"""dlight's schedule rules as events of their own (ir/instrument/schedule_rules.py):
one per rule and kernel, on CUDA (compiled here, never run) and on a CPU
pipeline with a rule of a user's own (``dlight_rules.HalfAccumulator``, which
accumulates sums in float16), bisected, advised and fixed end to end."""

import json
import os

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.s_tir import dlight

import tvm_numguard as ng
from tvm_numguard.ir.instrument import schedule_rules
from tvm_numguard.ir.instrument.catalog import EVERY_RULE_EVENT, close_skip_set, is_optional
from tvm_numguard.ir.instrument.events import PassEvent
from tvm_numguard.ir.model import load_model
from tvm_numguard.ir.pipeline import relax_pipeline
from tvm_numguard.ir.targets import parse_target
from tvm_numguard.build.compile import call_main, compile_model
from clirun import run_cli
from dlight_rules import HalfAccumulator
from test_advice import code_blocks, fresh_process_scores

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
CUDA = '{"kind": "cuda", "arch": "sm_90"}'
PLANTED = "zero,dlight_rules:half_accumulator"
# the sums HalfAccumulator rounds to float16: both matmuls and the softmax's denominator
HALF_SUMS = ["dlight.HalfAccumulator@fused_matmul_tir_tanh#0", "dlight.HalfAccumulator@matmul1#0",
             "dlight.HalfAccumulator@softmax#0"]


def test_a_rule_is_named_for_its_kind_and_class_and_an_event_for_its_kernel():
    assert schedule_rules.rule_name(dlight.gpu.Reduction()) == "dlight.gpu.Reduction"
    assert schedule_rules.rule_name(dlight.gpu.Fallback()) == "dlight.gpu.Fallback"
    assert schedule_rules.rule_name(HalfAccumulator()) == "dlight.HalfAccumulator"  # a user's own
    assert schedule_rules.is_rule_event("dlight.gpu.Reduction@fused_mean")
    assert not schedule_rules.is_rule_event("ApplyDefaultSchedule")


def _event(index, name, changed=True):
    return PassEvent(index, f"{name}#0", name, "relax", 0, 0, False, changed=changed)


def test_a_skip_set_with_every_changed_rule_event_skips_the_rule_events_no_set_can_name():
    events = [_event(0, "FuseOps"), _event(1, "FuseTIR"), _event(2, "dlight.gpu.Reduction@fused_matmul"),
              _event(3, "dlight.gpu.Fallback@relu", changed=False), _event(4, "dlight.gpu.Reduction@mean")]
    rules = {"dlight.gpu.Reduction@fused_matmul#0", "dlight.gpu.Reduction@mean#0"}
    assert EVERY_RULE_EVENT in close_skip_set({"FuseTIR#0"} | rules, events)  # a prefix before the fusion
    assert EVERY_RULE_EVENT in close_skip_set(rules, events)  # unchanged rule events need not be named
    assert EVERY_RULE_EVENT not in close_skip_set({"dlight.gpu.Reduction@mean#0"}, events)  # one rule, one kernel
    assert EVERY_RULE_EVENT not in close_skip_set({"FuseTIR#0"}, events[:2])  # no rule events at all


def test_without_a_numguard_instrument_dlight_runs_as_tvm_wrote_it():
    schedule_rules.install()
    assert schedule_rules.installed()  # this TVM tries its rules in _apply_rules: the hook is in place
    names = []

    @tvm.instrument.pass_instrument
    class Names:
        def run_before_pass(self, mod, info):
            names.append(info.name)

    with tvm.transform.PassContext(opt_level=3, instruments=[Names()]):
        tvm.compile(load_model(MLP).mod, parse_target(CUDA).make())
    assert "ApplyDefaultSchedule" in names and not [n for n in names if n.startswith("dlight.")]


def test_cuda_builds_make_one_event_per_rule_and_kernel_and_skipping_one_leaves_the_kernel_to_the_next_rule():
    mod = load_model(MLP).mod
    as_written = compile_model(mod, ng.CompileConfig(pipeline="default", target=CUDA))
    assert as_written.ok, as_written.error
    rules = [e for e in as_written.events if schedule_rules.is_rule_event(e.name)]
    assert {e.id for e in rules} >= {"dlight.gpu.Reduction@matmul1#0", "dlight.gpu.GeneralReduction@softmax#0"}
    assert all(is_optional(e) for e in rules)  # bisection candidates, places a fix can name
    gated = compile_model(mod, ng.CompileConfig(pipeline="default", target=CUDA,
                                                disable=("dlight.gpu.Reduction@matmul1#0",)))
    assert gated.ok, gated.error
    assert "BISECT: NOT running pass" in "".join(ln for ln in gated.trace if "Reduction@matmul1#0" in ln)
    ran = [ln for ln in gated.trace if ln.startswith("BISECT: running") and "@matmul1#" in ln]
    assert ran and "dlight.gpu.Fallback@matmul1#0" in ran[0]  # the next rule that schedules it


def test_a_planted_rule_is_blamed_on_its_kernels_and_its_advice_clears_it(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.abspath(__file__)))  # dlight_rules is a module of tests/
    witness = str(tmp_path / "w.npz")
    code, out, err = run_cli(capsys, "bisect", MLP, "--low", "0", "--high", "1", "--pipeline", PLANTED,
                             "--save-inputs", witness, "--budget", "20", "--json", str(tmp_path / "r.json"))
    assert code == 1, err
    bisection = json.load(open(tmp_path / "r.json"))["bisection"]
    # the fusion before the rule renames its kernels: it is not blamed for what the rule does to unfused ones
    assert sorted(e["id"] for e in bisection["minimal_set"]) == HALF_SUMS, bisection
    (block,) = [b for b in code_blocks(out) if "switch_off" in b]
    assert all(repr(i) in block for i in HALF_SUMS) and "disabled_pass" not in block
    # the snippet, run in the user's own compile (no numguard session), gives the reference's numbers
    fixed = ng.fixes.switch_off(*HALF_SUMS)
    model = load_model(MLP)
    target = tvm.target.Target("llvm")
    pipeline = relax_pipeline(PLANTED, target)
    x = {"x": np.random.default_rng(0).uniform(0, 1, (1, 32)).astype("float32")}

    def outputs(context):
        with context:
            executable = tvm.compile(load_model(MLP).mod, target, relax_pipeline=pipeline)
        return call_main(relax.VirtualMachine(executable, tvm.cpu()), tvm.cpu(), model.input_names(), x)[0]

    plain = outputs(tvm.transform.PassContext(opt_level=3))
    reference = tvm.compile(model.mod, target)
    exact = call_main(relax.VirtualMachine(reference, tvm.cpu()), tvm.cpu(), model.input_names(), x)[0]
    assert np.abs(plain - exact).max() > 1e-5  # the planted rule rounds the sums
    np.testing.assert_allclose(outputs(fixed.pass_context(opt_level=3)), exact, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # a fresh Python process; the fast tier runs the same fix in this one
def test_the_rule_advice_snippet_clears_the_violation_in_a_fresh_process(capsys, tmp_path, monkeypatch):
    here = os.path.dirname(os.path.abspath(__file__))
    monkeypatch.chdir(here)
    witness = str(tmp_path / "w.npz")
    code, out, _ = run_cli(capsys, "bisect", MLP, "--low", "0", "--high", "1", "--pipeline", PLANTED,
                           "--save-inputs", witness, "--budget", "20")
    assert code == 1
    (block,) = [b for b in code_blocks(out) if "switch_off" in b]
    setup = "\n".join(line for line in block.splitlines() if "switch_off" not in line and not line.startswith(" "))
    as_written = setup + "\nexecutable = tvm.compile(mod, target, relax_pipeline=pipeline)"
    scores = fresh_process_scores(tmp_path, witness, [as_written, block], cwd=here)
    assert scores[0] > 1.0 and scores[1] <= 1.0, scores


def test_a_rule_that_raises_on_one_kernel_is_the_build_failure_and_switching_it_off_builds(capsys, monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.abspath(__file__)))
    code, out, err = run_cli(capsys, "bisect", MLP, "--low", "0", "--high", "1", "--pipeline",
                             "zero,dlight_rules:raises_on_max")
    assert code == 1 and "BUILD FAILURE: pass dlight.RaisesOnMax@softmax#0 breaks the build" in out, out + err
    assert "switch_off('dlight.RaisesOnMax@softmax#0')" in out  # the fix printed, not "delete the call"
    target = tvm.target.Target("llvm")
    pipeline = relax_pipeline("zero,dlight_rules:raises_on_max", target)
    with pytest.raises(Exception, match="cannot schedule a max"):
        with tvm.transform.PassContext(opt_level=3):
            tvm.compile(load_model(MLP).mod, target, relax_pipeline=pipeline)
    with ng.fixes.switch_off("dlight.RaisesOnMax@softmax#0").pass_context(opt_level=3):
        assert tvm.compile(load_model(MLP).mod, target, relax_pipeline=pipeline) is not None


def test_the_guard_switches_the_planted_rule_off_and_says_why_it_is_not_narrower(monkeypatch):
    import warnings

    monkeypatch.chdir(os.path.dirname(os.path.abspath(__file__)))
    target = tvm.target.Target("llvm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ng.guard(0, 1, progress=None, fix="narrow", budget="40", time_limit=None) as g:
            tvm.compile(load_model(MLP).mod, target, relax_pipeline=relax_pipeline(PLANTED, target))
    section = g.report[0].data["guard"]
    assert section["returned"] == "culprit disabled" and section["disabled"] == HALF_SUMS  # the marker is not said
    message = " ".join(str(w.message) for w in caught)
    assert "(no narrow fix: dlight.HalfAccumulator@" in message and section["not_narrowed"] in message
