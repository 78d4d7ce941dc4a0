"""Work a build shares with builds made before it: a skip set of TIR-phase
events starts from the Relax phase of the pipeline as written, and a bisection's
first round is built while the oracle judges the witness."""

import os

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.judge import oracle as oracles
from tvm_numguard.locate.bisect import Bisection
from tvm_numguard.build.session import RunContext, BuildSession
from tvm_numguard.build.compile import BuildRequest, compile_model, optional_events
from tvm_numguard.build.workers import Workers
from tvm_numguard.build.workers import can_fork

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")


@pytest.fixture(scope="module")
def mlp():
    return ng.load_model(MLP)


def tir_events(build):
    return [e.id for e in optional_events(build.events) if e.level == "tir"]


def test_a_build_resumed_from_the_relax_phase_is_the_full_build(mlp):
    config = ng.CompileConfig()
    written = compile_model(mlp.mod, config, BuildRequest(record=True))
    skip = frozenset(tir_events(written)[::2])
    assert skip and written.relax_phase.covers(skip)
    full = compile_model(mlp.mod, config, BuildRequest(skip=skip, fingerprint=True))
    resumed = compile_model(mlp.mod, config, BuildRequest(skip=skip, fingerprint=True), resume=written.relax_phase)
    assert resumed.ok and resumed.fingerprint == full.fingerprint
    assert [(e.id, e.index, e.ran, e.level) for e in resumed.events] == [(e.id, e.index, e.ran, e.level)
                                                                         for e in full.events]
    assert resumed.trace == full.trace and any(line.startswith("BISECT: NOT running") for line in resumed.trace)
    # the phase it started from is left as it was: a second build from it is the same
    again = compile_model(mlp.mod, config, BuildRequest(skip=skip, fingerprint=True), resume=written.relax_phase)
    assert again.fingerprint == full.fingerprint and again.events[-1].index == full.events[-1].index


def _same_build(a, b) -> bool:
    return (a.ok and b.ok and a.fingerprint == b.fingerprint and a.trace == b.trace
            and [(e.id, e.index, e.ran, e.level) for e in a.events]
            == [(e.id, e.index, e.ran, e.level) for e in b.events])


@pytest.mark.parametrize("pipeline", ["default", "ToMixedPrecision,default"])
def test_a_build_that_skips_a_relax_event_starts_at_that_event_and_is_the_full_build(mlp, pipeline):
    """Issue 54, item 3: from the module the first skipped event received in
    the build as written (its snapshot), the pipeline fast-forwarded to it."""
    config = ng.CompileConfig(pipeline=pipeline)
    written = compile_model(mlp.mod, config, BuildRequest(record=True))
    relax_events = [e for e in optional_events(written.events) if e.level == "relax"]
    started = [e for e in relax_events if written.relax_phase.start_of(BuildRequest(frozenset([e.id])), config)]
    assert len(started) >= len(relax_events) - 1  # all but one with nothing before it
    for event in started:
        for skip in (frozenset([event.id]), frozenset(e.id for e in optional_events(written.events)
                                                      if e.index >= event.index)):
            request = BuildRequest(skip=skip, fingerprint=True)
            full = compile_model(mlp.mod, config, request)
            resumed = compile_model(mlp.mod, config, request, resume=written.relax_phase)
            assert _same_build(resumed, full), (event.id, sorted(skip))
            # what ran before the event was not run again: its events are the build as written's (the
            # wrappers around the event were open there: they end in this build)
            before = [(e.id, e.duration_s) for e in written.events if e.index < event.index and not e.wrapper]
            assert [(e.id, e.duration_s) for e in resumed.events if e.index < event.index and not e.wrapper] == before


def test_a_build_starts_inside_the_relax_phase_only_unrecorded_uninstrumented_without_a_fix(mlp):
    config = ng.CompileConfig()
    written = compile_model(mlp.mod, config, BuildRequest(record=True))
    relax_event = [e.id for e in optional_events(written.events) if e.level == "relax"][-1]
    assert not written.relax_phase.covers(frozenset([relax_event]))
    assert written.relax_phase.start_of(BuildRequest(skip=frozenset([relax_event])), config) is not None
    with pytest.raises(ValueError):  # a recorded build keeps Relax snapshots: it runs the phase
        compile_model(mlp.mod, config, BuildRequest(skip=frozenset([relax_event]), record=True),
                      resume=written.relax_phase)
    with pytest.raises(ValueError):
        compile_model(mlp.mod, config, BuildRequest(skip=frozenset(tir_events(written)[:1]), record=True),
                      resume=written.relax_phase)
    unrecorded = compile_model(mlp.mod, config, BuildRequest())
    assert unrecorded.relax_phase.start_of(BuildRequest(skip=frozenset([relax_event])), config) is None


def test_the_session_starts_tir_only_skip_sets_from_the_recorded_relax_phase(mlp):
    session = BuildSession(mlp, ng.CompileConfig(), context=RunContext(workers=Workers(jobs=0)))
    session.prepare()

    def relax_durations(build):
        return [e.duration_s for e in build.events if e.level == "relax" and e.ran]

    tir_only = session.build(frozenset(tir_events(session.optimized)[:2]))
    assert tir_only.ok
    # copied from the pipeline as written, not timed anew: the phase did not run again
    assert relax_durations(tir_only) == relax_durations(session.optimized)
    # the reference skips Relax events: its Relax phase ran
    assert relax_durations(session.reference) != relax_durations(session.optimized)


@pytest.mark.skipif(not can_fork(), reason="worker processes are forked (Linux)")
def test_the_bisection_starts_building_before_the_oracle_judges(monkeypatch):
    from crash_passes import make_model

    order = []
    start, judge = Bisection.start, oracles.judge
    monkeypatch.setattr(Bisection, "start", lambda self: (order.append("bisection"), start(self))[1])
    monkeypatch.setattr(oracles, "judge", lambda *a, **k: (order.append("oracle"), judge(*a, **k))[1])
    config = ng.CompileConfig(pipeline=f"{ROOT}/tests/crash_passes.py:round_weights,zero")
    report = ng.bisect(make_model(), config, ng.Options(low=-1, high=1, search="random", budget="4"),
                       workers=Workers(jobs=1))
    assert report.culprit == "RoundWeightsFP16#0"
    assert order == ["bisection", "oracle"]


def test_a_determinism_check_reuses_the_run_the_search_made(mlp, monkeypatch):
    session = BuildSession(mlp, ng.CompileConfig(), context=RunContext(workers=Workers(jobs=0)))
    session.prepare()
    witness = {spec.name: np.full(spec.shape, 0.5, dtype=spec.dtype) for spec in mlp.inputs}
    session.runs.optimized_outputs(witness), session.runs.reference_outputs(witness)  # as the search leaves them
    runs = []
    run = session.runs.run
    monkeypatch.setattr(session.runs, "run", lambda build, inputs: (runs.append(build), run(build, inputs))[1])
    assert session.runs.deterministic(witness)
    assert runs == [session.optimized, session.reference]  # one new run each


def test_only_the_pipeline_as_written_keeps_its_relax_phase(mlp):
    config = ng.CompileConfig()
    written = compile_model(mlp.mod, config)
    skipping = compile_model(mlp.mod, config, BuildRequest(skip=frozenset(tir_events(written)[:1])),
                             resume=written.relax_phase)
    # one lowered module held, not one per build
    assert written.relax_phase is not None and skipping.relax_phase is None


def test_a_witness_is_run_twice_for_determinism_once_whoever_asks():
    """Issue 54, item 4: the judge asks whether the builds run alike on a
    witness they differ on, and the bisection asks again before its first
    probe; the second asking runs nothing (the reference ran twice where the
    builds differ, then again for the bisection: about 0.6 plain compiles at
    --jobs 2 on SqueezeNet)."""
    from tvm_numguard.build.runs import Runs

    second_runs = []
    reference_run = Runs._reference_run

    def counted(self, inputs, again=False):
        if again:
            second_runs.append(inputs)
        return reference_run(self, inputs, again)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Runs, "_reference_run", counted)
        report = ng.bisect(MLP, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                           ng.Options(low=0.0, high=1.0, search="random", budget="3"), workers=Workers(jobs=0))
    assert report.culprit == "ToMixedPrecision#0"
    assert len(second_runs) == 1  # one determinism check of the witness, the judge's


def test_a_build_as_written_recorded_again_is_the_build_made_first_with_its_record(mlp):
    """A guard's first build keeps no record; before bisecting the pipeline is
    built again recording its events. The same executable (equal fingerprints)
    is not linked again: the first build stays, with its VM, its runs on the
    witness and its determinism, and takes the record (on a float16 ViT the
    second build's VM and two runs were 30 s of a guard's 120 s)."""
    session = BuildSession(mlp, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                            context=RunContext(workers=Workers(jobs=0)))
    with session:
        session.prepare_optimized(record=False)
        session.prepare_reference()
        first = session.optimized
        witness = {spec.name: np.full(spec.shape, 0.5, dtype=spec.dtype) for spec in mlp.inputs}
        assert session.runs.nondeterministic_builds(witness) == ()
        assert all(e.changed is None for e in first.events)
        session.ensure_recorded()
        assert session.optimized is first and session.runs.determinism_known(witness)
        assert any(e.changed for e in session.optional) and first.relax_phase is not None
        assert session.known_build(frozenset()) is first
        assert Bisection(session, witness).run().culprit == "ToMixedPrecision#0"


def test_the_witness_a_search_froze_is_the_run_it_made(mlp, monkeypatch):
    """The witness a search reports is a frozen copy of the inputs it ran
    (SearchResult freezes them): judging it runs neither build again (each
    judge ran both once more: a model run and the reference's, per witness)."""
    from tvm_numguard.base.frozen import freeze

    session = BuildSession(mlp, ng.CompileConfig(), context=RunContext(workers=Workers(jobs=0)))
    session.prepare()
    ran = {spec.name: np.full(spec.shape, 0.5, dtype=spec.dtype) for spec in mlp.inputs}
    session.runs.observe(ran)  # as the search leaves it
    witness = freeze(ran)
    assert witness is not ran and all(witness[n] is not ran[n] for n in ran)
    runs = []
    run = session.runs.run
    monkeypatch.setattr(session.runs, "run", lambda build, inputs: (runs.append(build), run(build, inputs))[1])
    session.runs.compare(session.optimized, witness)
    assert runs == []
    flipped = {n: -np.zeros_like(v) if i == 0 else v for i, (n, v) in enumerate(ran.items())}
    session.runs.compare(session.optimized, {**ran, **flipped})  # -0.0 is other bytes: run anew
    assert runs == [session.optimized, session.reference]
