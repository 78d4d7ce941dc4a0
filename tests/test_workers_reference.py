"""The reference build in a worker of its own: its gate tells optional events
as they come, so it builds while the numguard process builds the pipeline as
written; its runs go on beside the optimized build's; a crash in it is an
error, not the end of the process."""

import os

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.base.errors import BuildError
from tvm_numguard.build import memo as memo_module
from tvm_numguard.build.compile import BuildRequest, compile_model
from tvm_numguard.build.session import RunContext, BuildSession
from tvm_numguard.build.workers import Workers
from tvm_numguard.build import tasks as service
from tvm_numguard.build.workers import can_fork

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes are forked (Linux)")


@pytest.fixture(scope="module")
def mlp():
    return ng.load_model(MLP)


@pytest.mark.parametrize("config", [
    ng.CompileConfig(),
    ng.CompileConfig(pipeline="zero"),
    ng.CompileConfig(pipeline="patches.fold_fp16:make_pass,default", tir_pipeline="default,patches.tir_tf32:make_pass"),
    ng.CompileConfig(pipeline="[patches.fold_fp16:make_pass],default"),  # a pass under test: only its events
    ng.CompileConfig(disable=("FuseOps#0",)),
], ids=["default", "zero", "patched", "under-test", "disabled"])
def test_the_reference_decided_as_events_come_is_the_reference_by_event_ids(mlp, config):
    session = BuildSession(mlp, config, context=RunContext(workers=Workers(jobs=0)))
    session.prepare_optimized()
    by_ids = compile_model(mlp.mod, config, BuildRequest(skip=session.reference_skip, fingerprint=True))
    as_they_come = compile_model(mlp.mod, config, BuildRequest(reference=True, fingerprint=True))
    assert by_ids.ok and as_they_come.ok
    assert as_they_come.trace == by_ids.trace  # the same BISECT decision for every event
    assert as_they_come.fingerprint == by_ids.fingerprint
    assert set(session.reference_skip) <= as_they_come.skip


def test_only_the_events_between_the_markers_are_skipped_for_a_pass_under_test(mlp):
    config = ng.CompileConfig(pipeline="[patches.fold_fp16:make_pass],default")
    assert compile_model(mlp.mod, config, BuildRequest(reference=True)).skip == {"FoldConstantFP16#0"}
    # without the markers, every optional event of the same pipeline
    config = ng.CompileConfig(pipeline="patches.fold_fp16:make_pass,default")
    assert len(compile_model(mlp.mod, config, BuildRequest(reference=True)).skip) > 10


@needs_fork
def test_a_session_builds_the_reference_in_its_own_worker_while_it_builds_the_pipeline(mlp, monkeypatch):
    order = []
    compile_here, fork = memo_module.compile_model, service.BuildService.__init__
    monkeypatch.setattr(memo_module, "compile_model",
                        lambda *a, **k: (order.append("reference" if k.get("reference") else "build here"),
                                         compile_here(*a, **k))[1])
    monkeypatch.setattr(service.BuildService, "__init__",
                        lambda self, *a, **k: (order.append(f"fork {k.get('jobs')}"), fork(self, *a, **k))[1])
    held = BuildSession(mlp, ng.CompileConfig(), context=RunContext(workers=Workers(jobs=1)))
    with held:
        held.prepare()
        x = {spec.name: np.full(spec.shape, 0.25, dtype=spec.dtype) for spec in mlp.inputs}
        outputs = held.runs.reference_outputs(x)
        assert held.runs.deterministic(x)
        info = held.workers_info()
    # forked first (one worker), then this process built the pipeline as written and nothing else
    assert order == ["fork 1", "build here"]
    assert info.reference == "worker" and held.build_count == 2
    here = BuildSession(mlp, ng.CompileConfig(), context=RunContext(workers=Workers(jobs=0)))
    here.prepare()
    assert here.workers_info().reference == "in-process"
    assert all(np.array_equal(a, b) for a, b in zip(outputs, here.runs.reference_outputs(x)))


@needs_fork
def test_a_reference_that_crashes_is_an_error_and_the_process_goes_on():
    from crash_passes import make_model

    config = ng.CompileConfig(pipeline=f"{ROOT}/tests/crash_passes.py:vendor_pipeline,zero")
    with pytest.raises(BuildError, match="reference build .* killed by SIGSEGV"):
        ng.search(make_model(), config, ng.Options(low=-1, high=1, search="random", budget="2"),
                  workers=Workers(jobs=1))


def test_the_best_input_is_remembered_past_the_last_few(mlp, monkeypatch):
    session = BuildSession(mlp, ng.CompileConfig(pipeline="patches.fold_fp16:make_pass,default"),
                            context=RunContext(workers=Workers(jobs=0)))
    session.prepare()
    rng = np.random.default_rng(0)
    inputs = [{s.name: rng.uniform(0, 1, s.shape).astype(s.dtype) for s in mlp.inputs} for _ in range(6)]
    scores = [session.runs.observe(x).score for x in inputs]
    best = inputs[int(np.argmax(scores))]
    assert scores.index(max(scores)) < 2  # older than the last four: only the pin keeps it
    runs = []
    run = session.runs.run
    monkeypatch.setattr(session.runs, "run", lambda build, x: (runs.append(build), run(build, x))[1])
    assert session.runs.compare(session.optimized, best).score == max(scores)
    assert runs == []


@needs_fork
def test_a_guarded_compile_the_cache_will_likely_answer_forks_no_reference_worker(mlp, tmp_path, monkeypatch):
    import tvm

    forks = []
    fork = service.BuildService.__init__
    monkeypatch.setattr(service.BuildService, "__init__",
                        lambda self, *a, **k: (forks.append(k.get("jobs")), fork(self, *a, **k))[1])
    for _ in range(2):
        with ng.guard(0.0, 1.0, budget="3", jobs=1, cache=str(tmp_path), time_limit=None) as g:
            tvm.compile(mlp.mod, "llvm", relax_pipeline="default")
    assert g.report[0].data["guard"]["cached"]
    assert forks == [1]  # the first compile's reference worker; the cached one forked none


@needs_fork
@pytest.mark.parametrize("crashing", ["vendor_pipeline", "late_crash_pipeline"])
def test_a_guard_whose_reference_crashes_warns_and_returns_the_users_build(crashing):
    import crash_passes
    import tvm
    from crash_passes import make_model

    from tvm_numguard.api.guard.guard import GuardWarning

    vendor_pipeline = getattr(crash_passes, crashing)  # late: the crash comes once the search has started

    mod, default = make_model(), tvm.relax.get_pipeline("default")
    with pytest.warns(GuardWarning, match="reference build .* killed by SIGSEGV"):
        with ng.guard(-1.0, 1.0, budget="2", jobs=1, time_limit=None):
            executable = tvm.compile(mod, "llvm", relax_pipeline=lambda m: default(vendor_pipeline(m)))
    assert executable is not None  # the user's own compile, not judged; this process lives on


@needs_fork
def test_the_search_starts_while_the_held_worker_still_builds_the_reference():
    from crash_passes import make_model

    model = ng.load_model(make_model())
    config = ng.CompileConfig(pipeline=f"{ROOT}/tests/crash_passes.py:unhurried_pipeline,zero")
    with BuildSession(model, config, context=RunContext(workers=Workers(jobs=1))) as session:
        session.prepare()
        assert session.reference_site.building()  # prepared without waiting for it
        x = {spec.name: np.full(spec.shape, 0.5, dtype=spec.dtype) for spec in model.inputs}
        assert session.runs.observe(x).score is not None  # its first run waited for it
        assert session.build_count == 2
