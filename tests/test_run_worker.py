"""Runs in workers (``Workers.runs_in_workers``, what a GPU target sets): numguard's
own process compiles and runs no build, so it never initializes a device and a
worker forked at any moment can use it. Tested on LLVM, where a run made in
this process is seen (``Build.vm`` called here); a GPU target's flow is tested
as far as this machine (no GPU) lets it go."""

import os
import signal

import numpy as np
import pytest
import tvm

import tvm_numguard as ng
from tvm_numguard.build.session import RunContext, BuildSession
from tvm_numguard.ir.narrow import FixPlan
from tvm_numguard.engine import engine
from tvm_numguard.base.errors import BuildError
from tvm_numguard.build import compile as build_module
from tvm_numguard.build.run_worker import RunWorker
from tvm_numguard.build.tasks import RunFailure
from tvm_numguard.ir.targets import local_target
from tvm_numguard.build.workers import IN_PROCESS, Workers, can_fork

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes are forked (Linux)")


@pytest.fixture
def vms_made_here(monkeypatch):
    """The builds whose VM numguard's own process made (a worker's are not counted)."""
    here, made = os.getpid(), []
    real = build_module.Build.vm

    def watched(self):
        if os.getpid() == here and self._vm is None:
            made.append(self.skip)
        return real(self)

    monkeypatch.setattr(build_module.Build, "vm", watched)
    return made


@needs_fork
@pytest.mark.parametrize("jobs", [0, 2])
def test_the_demo_bisects_alike_with_every_run_in_a_worker_and_no_vm_here(vms_made_here, jobs):
    options = ng.Options(low=0.0, high=1.0, budget="30")
    config = ng.CompileConfig(pipeline="ToMixedPrecision,default")
    report = ng.bisect(MLP, config, options, workers=Workers(jobs=jobs, runs_in_workers=True))
    assert report.culprit == "ToMixedPrecision#0"
    assert vms_made_here == []  # the optimized build, the reference and every probe ran in a worker


@needs_fork
def test_the_run_worker_forks_again_only_for_a_build_made_after_it_forked(vms_made_here):
    model = ng.load_model(MLP)
    context = RunContext(workers=Workers(jobs=0, runs_in_workers=True))
    inputs = {model.input_names()[0]: np.full(model.inputs[0].shape, 0.5, "float32")}
    with BuildSession(model, ng.CompileConfig(), context=context) as session:
        session.prepare()
        worker = session.runs.elsewhere
        assert isinstance(worker, RunWorker)
        first = session.run(session.optimized, inputs)
        again = session.run(session.optimized, inputs)
        assert worker.forks == 1  # the same worker, its VM kept
        other = session.run(session.build(["FuseOps#0"]), inputs)
        assert worker.forks == 2  # made after the fork: a new worker has it
        here = session.runs.run_here(session.optimized, inputs)[0]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert all(np.array_equal(a, b) for a, b in zip(first, here))
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(first, other))
    assert vms_made_here == [frozenset()]  # only the run_here asked of this process


@needs_fork
def test_a_run_that_crashes_its_worker_is_a_run_failure_and_the_next_run_works(monkeypatch):
    model = ng.load_model(MLP)
    context = RunContext(workers=Workers(jobs=0, runs_in_workers=True))
    inputs = {model.input_names()[0]: np.zeros(model.inputs[0].shape, "float32")}
    with BuildSession(model, ng.CompileConfig(), context=context) as session:
        session.prepare()
        real = session.runs.run_here
        # inherited by the fork
        monkeypatch.setattr(session.runs, "run_here", lambda build, x: os.kill(os.getpid(), signal.SIGKILL))
        with pytest.raises(RunFailure, match="killed by SIGKILL"):
            session.run(session.optimized, inputs)
        monkeypatch.setattr(session.runs, "run_here", real)
        session.runs.elsewhere.stop()  # the next worker forks with the real method
        assert len(session.run(session.optimized, inputs)) == 1


def test_a_gpu_targets_diagnostic_builds_are_made_for_the_cpu():
    assert local_target('{"kind": "cuda", "arch": "sm_90"}') == "llvm"
    assert local_target("cuda") == "llvm"
    assert local_target("llvm -mcpu=skylake") == "llvm -mcpu=skylake"


def test_a_gpu_session_runs_nothing_on_the_device_in_this_process(monkeypatch):
    """On a GPU target (compiled here, no GPU to run on) numguard's process
    makes no VM and no tensor on the device: the first run goes to a worker,
    whose failure (no CUDA here) is the error."""
    made_here, here = [], os.getpid()
    real_tensor, real_vm = tvm.runtime.tensor, tvm.relax.VirtualMachine

    def on_device(device) -> bool:
        return os.getpid() == here and device is not None and device.dlpack_device_type() != 1  # 1: kDLCPU

    def watched_tensor(value, device=None, *args, **kwargs):
        made_here.extend(["tensor"] if on_device(device) else [])
        return real_tensor(value, device, *args, **kwargs)

    def watched_vm(executable, device, *args, **kwargs):
        made_here.extend(["vm"] if on_device(device) else [])
        return real_vm(executable, device, *args, **kwargs)

    monkeypatch.setattr(tvm.runtime, "tensor", watched_tensor)
    monkeypatch.setattr(tvm.relax, "VirtualMachine", watched_vm)
    model = ng.load_model(MLP)
    config = ng.CompileConfig(target='{"kind": "cuda", "arch": "sm_90"}')
    context = RunContext(workers=Workers(jobs=0, runs_in_workers=True))
    inputs = {model.input_names()[0]: np.zeros(model.inputs[0].shape, "float32")}
    with BuildSession(model, config, context=context) as session:
        session.prepare()
        if not can_fork():
            pytest.skip("worker processes are forked (Linux)")
        with pytest.raises(BuildError, match="fails to run"):
            session.runs.optimized_outputs(inputs)
    assert made_here == []


CUDA = '{"kind": "cuda", "arch": "sm_90"}'


@pytest.fixture
def cuda_started(monkeypatch):
    """As if a caller had used the GPU in this process before numguard ran; the
    forks made from this process meanwhile are counted."""
    import importlib

    from tvm_numguard.ir import targets

    forks, real_fork = [], os.fork
    monkeypatch.setattr(targets, "cuda_started_here", lambda: True)  # as Workers.for_target asks it
    monkeypatch.setattr(engine, "cuda_started_here", lambda: True)
    monkeypatch.setattr(importlib.import_module("tvm_numguard.api.guard.guard"), "cuda_started_here", lambda: True)
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    return forks


@needs_fork
def test_a_caller_whose_process_started_cuda_is_checked_in_this_process(cuda_started, monkeypatch):
    """The workers asked for cannot use the GPU: every build and run is made
    here (an LLVM build, its target taken for a GPU's), said once, and bisected."""
    from tvm_numguard.ir.targets import TargetSpec

    monkeypatch.setattr(TargetSpec, "is_gpu", property(lambda self: True))
    monkeypatch.setattr(engine, "require_device", lambda spec: None)  # as if a GPU were here
    said = []
    report = ng.bisect(MLP, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                       ng.Options(low=0.0, high=1.0, budget="20"), progress=said.append, workers=Workers(jobs=1))
    assert report.culprit == "ToMixedPrecision#0"
    assert [m for m in said if isinstance(m, str) and m.startswith("CUDA was initialized")]
    assert cuda_started == []  # no worker forked


@needs_fork
def test_the_guard_judges_a_gpu_compile_after_cuda_started_here(cuda_started, monkeypatch):
    """Not "compile not judged": it is judged in this process, which can use the device."""
    import importlib
    import warnings

    from tvm import relax

    from tvm_numguard.api.guard import GuardWarning

    monkeypatch.setattr(importlib.import_module("tvm_numguard.api.guard.guard"), "is_gpu", lambda target: True)
    mod = ng.load_model(MLP).mod
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ng.guard(0.0, 1.0, fix="off", jobs=1, budget="20", time_limit=None) as guarded:
            executable = tvm.compile(relax.transform.ToMixedPrecision()(mod), "llvm")
    assert not [w for w in caught if issubclass(w.category, GuardWarning) and "not judged" in str(w.message)]
    (entry,) = guarded.report
    assert entry.culprit == "ToMixedPrecision#0" and entry.data["guard"]["returned"] == "culprit disabled"
    assert entry.data["guard"]["builds"].startswith("in-process: CUDA was initialized in this process")
    assert cuda_started == [] and executable is not None


def test_one_rule_says_where_a_gpu_builds_runs_go():
    assert Workers(jobs=2).for_target(gpu=True).runs_in_workers is can_fork()
    assert not Workers(jobs=2).for_target(gpu=False).runs_in_workers
    assert not Workers(jobs=0).for_target(gpu=True).runs_in_workers  # --jobs 0: nothing forks, the device is used here
    assert Workers(jobs=0, runs_in_workers=True).for_target(gpu=False).runs_in_workers  # a caller's choice stands
    kept = Workers(jobs=3, build_timeout=7.0).for_target(gpu=True)
    assert (kept.jobs, kept.build_timeout) == (3, 7.0)


def test_after_cuda_started_here_a_gpu_targets_builds_all_stay_here(cuda_started):
    for asked in (Workers(jobs=2), Workers(jobs=0, runs_in_workers=True)):
        here = asked.for_target(gpu=True)
        assert here.mode == IN_PROCESS and not here.runs_elsewhere
    assert Workers(jobs=2).for_target(gpu=False) == Workers(jobs=2)  # a CPU target's workers can fork


def test_with_jobs_0_the_cost_of_safety_on_a_gpu_target_is_timed_here_like_the_search(vms_made_here, monkeypatch):
    from tvm_numguard.fixes import cost

    monkeypatch.setattr(cost, "is_gpu", lambda target: True)
    model = ng.load_model(MLP)
    inputs = {model.input_names()[0]: np.full(model.inputs[0].shape, 0.5, "float32")}
    rows = cost.cost_table(model.mod, ng.CompileConfig(), FixPlan(()), [], inputs, model.input_names(),
                           Workers(jobs=0))
    assert all(r.median_ms > 0 and not r.error for r in rows)
    assert len(vms_made_here) == 3  # a worker forked after this process used the device could not use it


@needs_fork
def test_the_cost_of_safety_on_a_gpu_target_is_timed_in_a_worker(vms_made_here, monkeypatch):
    from tvm_numguard.fixes import cost

    monkeypatch.setattr(cost, "is_gpu", lambda target: True)  # LLVM builds, measured as a GPU's would be
    model = ng.load_model(MLP)
    inputs = {model.input_names()[0]: np.full(model.inputs[0].shape, 0.5, "float32")}
    plan = FixPlan(())
    rows = cost.cost_table(model.mod, ng.CompileConfig(), plan, [], inputs, model.input_names(), Workers(jobs=1))
    assert [r.label for r in rows] == ["unsafe", "narrow", "pass off"]
    assert all(r.median_ms > 0 and not r.error for r in rows)
    assert vms_made_here == []  # every build was made and timed in the worker


@needs_fork
def test_a_trace_with_every_run_in_a_worker_localizes_a_relax_culprit_and_says_why_not_a_tir_one(vms_made_here):
    from tvm_numguard.api.trace.tracer import TIR_NOT_LOCALIZED

    options = ng.Options(low=0.0, high=1.0, budget="30")
    workers = Workers(jobs=0, runs_in_workers=True)
    relax_level = ng.trace(MLP, ng.CompileConfig(pipeline="ToMixedPrecision,default"), options, workers=workers)
    assert relax_level.culprit == "ToMixedPrecision#0"
    assert relax_level.data["trace"]["origin"] is not None, relax_level.data["trace"]["reason"]
    tir_level = ng.trace(MLP, ng.CompileConfig(tir_pipeline="default,patches.tir_tf32:make_pass"), options,
                         workers=workers)
    assert tir_level.culprit and tir_level.data["trace"]["reason"] == TIR_NOT_LOCALIZED
    assert vms_made_here == []


@needs_fork
def test_a_guard_that_runs_nothing_here_checks_and_returns_a_safe_build(vms_made_here, monkeypatch):
    """The guard of a GPU target's compile (is_gpu patched: LLVM builds) runs
    every build in a worker, the user's prelude pass (not recreatable in a
    worker) included, and still finds, switches off and verifies."""
    import importlib

    from tvm import relax

    guard_module = importlib.import_module("tvm_numguard.api.guard.guard")
    monkeypatch.setattr(guard_module, "is_gpu", lambda target: True)
    mod = ng.load_model(MLP).mod
    with pytest.warns(Warning):
        with ng.guard(0.0, 1.0, fix="off", jobs=1, budget="20", time_limit=None) as guarded:
            executable = tvm.compile(relax.transform.ToMixedPrecision()(mod), "llvm")
    (entry,) = guarded.report
    assert entry.culprit == "ToMixedPrecision#0" and entry.data["guard"]["returned"] == "culprit disabled"
    assert "every run in a worker" in entry.data["guard"]["builds"]
    assert vms_made_here == []
    assert executable is not None


@pytest.mark.parametrize("target, kind, own", [(CUDA, "llvm", False), ("llvm", "llvm", True)])
def test_a_relax_localization_is_built_for_the_local_target_however_builds_run(monkeypatch, target, kind, own):
    """As the oracle is (``local_target``), with ``--jobs 0`` too: a GPU target's snapshots are built for
    plain LLVM (not by the session, which builds for the GPU); a CPU target's by the session."""
    from types import SimpleNamespace

    from tvm_numguard.api.trace import tracer

    seen = {}
    monkeypatch.setattr(tracer, "localize_relax",
                        lambda before, after, names, witness, tgt, tol, build: seen.update(kind=tgt.kind.name,
                                                                                           build=build))
    session = SimpleNamespace(config=SimpleNamespace(target=target), build_module=object(), events=[],
                              model=SimpleNamespace(mod="input", input_names=lambda: ["x"]),
                              optimized=SimpleNamespace(snapshots={"P#0": "after"}),
                              runs=SimpleNamespace(elsewhere=None))  # --jobs 0: builds run here
    tracer._localize_relax(session, SimpleNamespace(id="P#0", index=0), {}, None)
    assert seen["kind"] == kind and (seen["build"] is session.build_module) == own
