"""Runs shared by fingerprint (build/workers/share.py): configurations that compile
to the same executable are run once per input, across workers; a claimant
that dies leaves the run to the next; plain builds carry a fingerprint."""

import os
import signal
import time

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_numguard as ng
from tvm_numguard.engine import engine
from tvm_numguard.build.session import RunContext
from tvm_numguard.build.runs import Runs
from tvm_numguard.build.compile import compile_plain, run_build
from tvm_numguard.api.trace.passes import PassTable
from tvm_numguard.build.workers import Workers
from tvm_numguard.build.workers import can_fork
from tvm_numguard.build.workers.share import PIPELINE, PLAIN, RunShare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes are forked (Linux)")
X = {"x": np.linspace(0, 1, 32, dtype="float32").reshape(1, 32)}


@pytest.fixture
def share():
    made = RunShare.create()
    yield made
    made.remove()


def _counted_run(log: str, seconds: float = 0.0):
    def run():
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(seconds)
        return [np.arange(3.0)]
    return run


def _forked(action) -> int:
    pid = os.fork()
    if pid == 0:  # the child does file work only, then leaves without Python's exit handlers
        try:
            action()
        finally:
            os._exit(0)
    return pid


def test_keys_tell_apart_how_it_was_built_the_fingerprint_and_the_inputs():
    key = RunShare.key(PIPELINE, "f1", X)
    assert key == RunShare.key(PIPELINE, "f1", {"x": X["x"].copy()})
    assert len({key, RunShare.key(PLAIN, "f1", X), RunShare.key(PIPELINE, "f2", X),
                RunShare.key(PIPELINE, "f1", {"x": X["x"] + 1}),
                RunShare.key(PIPELINE, "f1", {"x": X["x"].astype("float64")}),
                RunShare.key(PIPELINE, "f1", {"y": X["x"]})}) == 6
    assert RunShare.key(PIPELINE, None, X) is None  # a build without a fingerprint is never shared


@needs_fork
def test_a_run_two_processes_need_at_once_is_made_once(share, tmp_path):
    log = str(tmp_path / "runs")
    key = RunShare.key(PLAIN, "f", X)
    child = _forked(lambda: share.outputs(key, _counted_run(log, 0.5)))
    time.sleep(0.1)  # the child claims the key first
    outputs, shared = share.outputs(key, _counted_run(log))
    os.waitpid(child, 0)
    assert shared and np.array_equal(outputs[0], np.arange(3.0))
    assert open(log).read().split() == [str(child)]


@needs_fork
def test_a_claimant_that_died_leaves_the_run_to_the_next(share, tmp_path):
    key = RunShare.key(PLAIN, "f", X)

    def die():
        share.outputs(key, lambda: os._exit(9))  # killed mid-run: its claim stays behind

    child = _forked(die)
    deadline = time.time() + 10
    while not _zombie(child) and time.time() < deadline:  # dead, not yet reaped
        time.sleep(0.01)
    assert os.path.exists(os.path.join(share.directory, f"{key}.claim"))
    def waited_too_long(signum, frame):
        raise TimeoutError("still waiting for a dead claimant's run")

    previous = signal.signal(signal.SIGALRM, waited_too_long)
    signal.alarm(10)
    try:
        outputs, shared = share.outputs(key, _counted_run(str(tmp_path / "runs")))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.waitpid(child, 0)
    assert not shared and np.array_equal(outputs[0], np.arange(3.0))


def _zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "Z"


@needs_fork
def test_only_the_process_that_made_a_share_removes_it():
    share = RunShare.create()
    os.waitpid(_forked(share.remove), 0)  # a forked worker's copy
    assert os.path.isdir(share.directory)
    share.remove()
    assert not os.path.exists(share.directory)


def test_a_new_share_removes_those_whose_process_was_killed(tmp_path, monkeypatch):
    """A process killed with SIGKILL runs no cleanup: its share stays in the
    temporary folder until the next share finds its process gone."""
    import subprocess
    import sys
    import tempfile

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    orphan = tmp_path / f"numguard-runs-{gone.pid}-abc"
    orphan.mkdir()
    (orphan / "run.npz").write_bytes(b"outputs")
    alive = tmp_path / f"numguard-runs-{os.getpid()}-def"  # this process's own: kept
    alive.mkdir()
    share = RunShare.create()
    try:
        assert not orphan.exists() and alive.exists()
        assert os.path.basename(share.directory).startswith(f"numguard-runs-{os.getpid()}-")
    finally:
        share.remove()


def test_a_plain_build_is_tvm_compile_fingerprinted_under_the_callers_context():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            folded = bb.emit(relax.op.add(relax.const(np.ones((1, 4), "float32")),
                                          relax.const(np.ones((1, 4), "float32"))))
            out = bb.emit_output(relax.op.multiply(x, folded))
        bb.emit_func_output(out)
    mod, target = bb.get(), tvm.target.Target("llvm")
    build = compile_plain(mod, target)
    inputs = {"x": np.arange(4, dtype="float32").reshape(1, 4)}
    expected = tvm.relax.VirtualMachine(tvm.compile(mod, target), tvm.cpu())["main"](
        tvm.runtime.tensor(inputs["x"])).numpy()
    assert np.array_equal(run_build(build, ["x"], inputs)[0], expected)
    assert build.fingerprint == compile_plain(mod, target).fingerprint
    with tvm.transform.PassContext(disabled_pass=["KillAfterLastUse"]):
        unkilled = compile_plain(mod, target)
    assert unkilled.fingerprint not in (None, build.fingerprint)  # the caller's context is the build's

    @tvm.instrument.pass_instrument
    class Watch:
        def run_before_pass(self, mod, info):
            pass

    with tvm.transform.PassContext(instruments=[Watch()]):
        watched = compile_plain(mod, target)
    assert watched.ok and watched.fingerprint is None  # a context of ours would enter the caller's instrument again


def _table(monkeypatch, tmp_path, jobs: int, share: bool) -> tuple:
    """(rows, snapshot builds, runs) of trace's per-pass table on the MLP's ToMixedPrecision snapshots."""
    log = tmp_path / f"runs-{jobs}-{share}"
    plain_run = Runs.run

    def counted(self, build, inputs):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return plain_run(self, build, inputs)

    monkeypatch.setattr(Runs, "run", counted)  # before the workers are forked
    if not share:
        monkeypatch.setattr(RunShare, "key", staticmethod(lambda kind, fingerprint, inputs: None))
    session, _ = engine.open_session(MLP, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                                     ng.Options(low=0.0, high=1.0), RunContext(workers=Workers(jobs=jobs)))
    with session:
        log.write_text("")
        table = PassTable(session, X, session.tol)
        table.tir_events = []  # the Relax rows only: their snapshots are what compiles alike here
        table.start()
        rows = table.rows()
    monkeypatch.undo()
    return [r.to_json() for r in rows], table.snapshot_builds, len(log.read_text().split())


# the claim protocol across processes is tested above; across a pool's workers, in the slow tier
@pytest.mark.parametrize("jobs", [0, pytest.param(2, marks=[needs_fork, pytest.mark.slow])])
def test_snapshots_that_compile_alike_are_run_once(monkeypatch, tmp_path, jobs):
    rows, builds, runs = _table(monkeypatch, tmp_path, jobs, share=True)
    unshared_rows, unshared_builds, unshared_runs = _table(monkeypatch, tmp_path, jobs, share=False)
    assert rows == unshared_rows and builds == unshared_builds
    assert unshared_runs == builds  # one run per snapshot built
    assert runs < builds, (runs, builds)  # the MLP's snapshots after ToNonDataflow compile alike


def test_a_gated_tir_build_that_compiles_as_the_pipeline_shares_its_run(monkeypatch):
    runs = []
    plain_run = Runs.run
    monkeypatch.setattr(Runs, "run",
                        lambda self, build, inputs: runs.append(build) or plain_run(self, build, inputs))
    session, _ = engine.open_session(MLP, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                                     ng.Options(low=0.0, high=1.0), RunContext(workers=Workers(jobs=0)))
    with session:
        table = PassTable(session, X, session.tol)
        table.relax_events = []
        table.start()
        rows = table.rows()
        gated = [session.known_build([e.id]) for e in table.tir_events]
    alike = {id(b) for b in gated if b.fingerprint == session.optimized.fingerprint}
    assert session.optimized.fingerprint and alike, "the MLP has TIR events whose skipping changes nothing"
    ran = {id(b) for b in runs}
    assert not alike & ran  # their outputs are the pipeline's run, shared
    assert {id(b) for b in gated} - alike <= ran
    assert all(row.local["score"] == 0.0 for build, row in zip(gated, rows) if id(build) in alike)
