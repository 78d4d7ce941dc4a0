"""The kernel cache (build/kernel_cache.py) and the build in two steps
(build/vm_link.py): a build that links kernels compiled for earlier builds
computes, bit for bit, what the same build made whole by ``relax.build``
computes, on every model of the tests; lowering in steps runs the events
``relax.build`` runs; a build whose run is shared is never linked."""

import os
import tempfile

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_numguard as ng
from tvm_numguard.build.compile import BuildRequest, call_main, compile_model, compile_plain, optional_events
from tvm_numguard.build.session import RunContext, BuildSession
from tvm_numguard.build.kernel_cache import KernelCache
from tvm_numguard.build.tasks import SkipRun
from tvm_numguard.build.vm_link import Linking, tirx_build
from tvm_numguard.build.workers import Workers
from test_catalog import _load as catalog_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
TARGET = tvm.target.Target("llvm")


def _adds(c: float):
    @I.ir_module
    class Adds:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                y = R.multiply(R.add(x, R.const(c, "float32")), R.const(2.0, "float32"))
                R.output(y)
            return y

    return Adds


def _host(mod):
    """(ExecBuilder, finalized host module) of ``mod`` lowered by TVM's default pipelines."""
    from tvm_numguard.build.vm_link import lower_for_vm

    with TARGET:
        lowered = relax.get_pipeline("default")(mod)
    vm_lowered = lower_for_vm(lowered, TARGET, "default", {})
    return vm_lowered.builder, vm_lowered.host


def test_the_vm_looks_a_kernel_up_in_the_first_library_that_has_it():
    """What the cache's link order rests on (TVM 0.27's VirtualMachine): the
    executable's libraries are searched in order, the first with the name wins."""
    one, five = _host(_adds(1.0))[1], _host(_adds(5.0))[1]
    assert [g.name_hint for g in one.get_global_vars()] == [g.name_hint for g in five.get_global_vars()]
    lib_one, lib_five = (tirx_build().codegen_build(h, TARGET) for h in (one, five))
    x = tvm.runtime.tensor(np.arange(4, dtype="float32"))

    def run(libraries):
        builder = _host(_adds(5.0))[0]
        executable = relax.vm_build.VMExecutable(relax._ffi_api.VMLink(builder, TARGET, libraries[0],
                                                                       libraries[1:], {}))
        return relax.VirtualMachine(executable, tvm.cpu())["main"](x).numpy()

    assert run([lib_five, lib_one]).tolist() == [10.0, 12.0, 14.0, 16.0]
    assert run([lib_one, lib_five]).tolist() == [2.0, 4.0, 6.0, 8.0]


def _models():
    """(name, module, input names, inputs) of the fast tier's models."""
    tmp = tempfile.mkdtemp()
    mlp = ng.load_model(MLP)
    rng = np.random.default_rng(0)
    yield "mlp", mlp.mod, mlp.input_names(), {"x": rng.uniform(0, 1, (1, 32)).astype("float32")}
    for key in ("cnn", "symbolic", "bf16", "sampling", "sortscan"):
        yield (key, *catalog_model(key, tmp))


def _float16_model():
    @I.ir_module
    class Half:
        @R.function
        def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32")):
            with R.dataflow():
                h = R.matmul(R.astype(x, "float16"), R.astype(w, "float16"))
                y = R.nn.softmax(R.astype(R.exp(h), "float32"), axis=-1)
                R.output(y)
            return y

    rng = np.random.default_rng(1)
    return Half, ["x", "w"], {"x": rng.uniform(0, 1, (8, 16)).astype("float32"),
                              "w": rng.uniform(-1, 1, (16, 4)).astype("float32")}


def _skip_sets(events, singles: int) -> list:
    """Skip sets a bisection, a trace and a fix ask for: the TIR-only and the
    Relax events of each half, and ``singles`` events alone, spread over the pipeline."""
    optional = optional_events(events)
    tir = [e.id for e in optional if e.level == "tir"]
    relax_ids = [e.id for e in optional if e.level == "relax"]
    sets = [tir[len(tir) // 2:], relax_ids[len(relax_ids) // 2:], [e.id for e in optional[: len(optional) // 3]]]
    changed = [e.id for e in optional if e.changed]
    sets += [[event] for event in changed[:: max(1, len(changed) // singles)][:singles]]
    return [frozenset(s) for s in sets if s]


def _same_outputs(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def _outputs(build, names, inputs) -> list:
    return call_main(build.vm(), build.device, names, inputs)


def _compare_through_the_cache(mod, names, inputs, config, singles: int = 2) -> KernelCache:
    """Every skip set built through one cache, and on its own by relax.build: the same outputs, bit for bit."""
    cache = KernelCache()
    written = compile_model(mod, config, BuildRequest(record=True), linking=Linking(cache, alone=True))
    assert written.ok, written.error
    reference = compile_model(mod, config, BuildRequest(reference=True), linking=Linking(cache, alone=True))
    builds = [written, reference]
    for skip in _skip_sets(written.events, singles):
        cached = compile_model(mod, config, BuildRequest(skip), linking=Linking(cache))
        whole = compile_model(mod, config, BuildRequest(skip))  # relax.build, as before the cache
        assert cached.ok == whole.ok, (skip, cached.error, whole.error)
        if whole.ok:
            assert cached.lowered is not None and whole.lowered is None
            assert _same_outputs(_outputs(cached, names, inputs), _outputs(whole, names, inputs)), sorted(skip)
            builds.append(cached)
    for build in builds:  # built first, each still computes what it computed
        assert build.ok
    return cache


@pytest.mark.parametrize("case, pipeline", [("mlp", "default"), ("mlp", "ToMixedPrecision,default"), ("cnn", "default"),
                                            ("symbolic", "default"), ("bf16", "default"), ("sampling", "default"),
                                            ("sortscan", "default"), ("float16", "default")])
def test_builds_through_a_kernel_cache_compute_what_relax_build_computes(case, pipeline):
    if case == "float16":
        mod, names, inputs = _float16_model()
    else:
        mod, names, inputs = next((m, n, x) for key, m, n, x in _models() if key == case)
    cache = _compare_through_the_cache(mod, names, inputs, ng.CompileConfig(pipeline=pipeline))
    assert cache.reused > 0, "no kernel came from an earlier build: the comparison proves nothing"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_real_models_through_a_kernel_cache_compute_what_relax_build_computes(name):
    from tvm_numguard.testing import light_model

    with tempfile.TemporaryDirectory() as tmp:
        model = ng.load_model(light_model(name, seed=0, directory=tmp))
    inputs = {s.name: np.random.default_rng(0).uniform(0, 1, s.shape).astype(s.dtype) for s in model.inputs}
    config = ng.CompileConfig(tir_pipeline="default,patches.tir_tf32:make_pass")
    cache = _compare_through_the_cache(model.mod, model.input_names(), inputs, config, singles=6)
    assert cache.reused > 0, "no kernel came from an earlier build: the comparison proves nothing"


def test_lowering_in_steps_runs_the_events_relax_build_runs():
    for key, mod, names, inputs in _models():
        for request in (BuildRequest(record=True), BuildRequest(reference=True)):
            whole = compile_model(mod, ng.CompileConfig(), request)
            steps = compile_model(mod, ng.CompileConfig(), request, linking=Linking(KernelCache()))
            assert steps.lowered is not None, key
            assert [(e.id, e.index, e.ran, e.level, e.changed) for e in steps.events] == \
                   [(e.id, e.index, e.ran, e.level, e.changed) for e in whole.events], key
            assert steps.trace == whole.trace and steps.fingerprint == whole.fingerprint, key


def test_a_changed_kernel_is_compiled_again_and_the_others_come_from_earlier_builds():
    mlp = ng.load_model(MLP)
    cache = KernelCache()
    written = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(record=True), linking=Linking(cache, alone=True))
    kernels = len(written.lowered.host.functions)
    again = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(), linking=Linking(cache))
    assert again.ok and (cache.compiled, cache.reused) == (0, kernels)
    # unfused, two of the MLP's kernels are others, two are as fused (a lone matmul, the tanh)
    unfused = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(frozenset(["FuseOps#0"])),
                            linking=Linking(cache))
    assert unfused.ok and (cache.compiled, cache.reused) == (2, kernels + 2)


def test_a_snapshot_built_plainly_through_the_cache_computes_what_tvm_compile_computes():
    mlp = ng.load_model(MLP)
    x = {"x": np.random.default_rng(2).uniform(0, 1, (1, 32)).astype("float32")}
    cache = KernelCache()
    first = compile_plain(mlp.mod, TARGET, cache)
    second = compile_plain(mlp.mod, TARGET, cache)
    whole = compile_plain(mlp.mod, TARGET)
    assert first.lowered is not None and whole.lowered is None and cache.reused > 0
    assert _same_outputs(_outputs(second, ["x"], x), _outputs(whole, ["x"], x))


def test_a_build_given_to_a_user_is_linked_as_relax_build_links_it(tmp_path):
    """``Build.standalone``: one library, so ``export_library`` sees each kernel once."""
    mlp = ng.load_model(MLP)
    cache = KernelCache()
    written = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(record=True), linking=Linking(cache, alone=True))
    probe = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(frozenset(["FuseOps#0"])), linking=Linking(cache))
    assert len(probe.executable.mod.imports) > 1  # linked from two libraries
    executable = probe.standalone()
    assert len(executable.mod.imports) == 1 and written.standalone() is written.executable
    executable.export_library(str(tmp_path / "probe.so"))
    loaded = relax.VirtualMachine(tvm.runtime.load_module(str(tmp_path / "probe.so")), tvm.cpu())
    x = {"x": np.random.default_rng(3).uniform(0, 1, (1, 32)).astype("float32")}
    assert _same_outputs(call_main(loaded, tvm.cpu(), ["x"], x), _outputs(probe, ["x"], x))


def test_a_probe_whose_run_is_shared_is_never_linked():
    """Issue 54, item 1: a probe whose module after the TIR pipeline is one
    already run (its fingerprint) takes that run's outputs: no machine code."""
    mlp = ng.load_model(MLP)
    session = BuildSession(mlp, ng.CompileConfig(), context=RunContext(workers=Workers(jobs=0)))
    with session:
        session.prepare()
        x = {"x": np.random.default_rng(4).uniform(0, 1, (1, 32)).astype("float32")}
        unchanged = next(e.id for e in session.optional if e.changed is False)
        session.runs.optimized_outputs(x)  # the pipeline's run on x, which the share starts with
        attempt = session.take(session.attempt(SkipRun(frozenset([unchanged]), (x,))))
        probe = session.known_build([unchanged])
        assert probe.fingerprint == session.optimized.fingerprint
        assert attempt.ok and probe.linked is None  # never linked
        assert _same_outputs(attempt.outputs[0], session.runs.optimized_outputs(x))
        # s_tir.StmtSimplify#0 changed the module, yet the TIR pipeline ends in the same kernels: never linked
        again = session.take(session.attempt(SkipRun(frozenset(["s_tir.StmtSimplify#0"]), (x,))))
        assert again.ok and session.known_build(["s_tir.StmtSimplify#0"]).linked is None
        other = session.take(session.attempt(SkipRun(frozenset(["tirx.NarrowDataType#0"]), (x,))))
        assert other.ok and session.known_build(["tirx.NarrowDataType#0"]).linked is not None  # new kernels


def test_a_forked_worker_builds_with_the_kernels_its_parent_compiled():
    """Workers start with a copy of the session's cache, machine code included."""
    from tvm_numguard.build.workers import can_fork

    if not can_fork():
        pytest.skip("worker processes are forked (Linux)")
    mlp = ng.load_model(MLP)
    session = BuildSession(mlp, ng.CompileConfig(), context=RunContext(workers=Workers(jobs=1)))
    with session:
        session.prepare()
        x = {"x": np.random.default_rng(5).uniform(0, 1, (1, 32)).astype("float32")}
        tir = [e.id for e in session.optional if e.level == "tir" and e.changed]
        attempt = session.take(session.attempt(SkipRun(frozenset(tir[:1]), (x,))))
        here = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(session.close(tir[:1])))
        assert attempt.ok and _same_outputs(attempt.outputs[0], _outputs(here, ["x"], x))


def test_a_fixs_trials_take_the_kernels_their_places_leave_from_earlier_builds():
    """The guard's and ``numguard fix``'s narrowing builds the pipeline with
    the culprit undone at some places, again and again: each trial compiles
    only the kernels those places change."""
    from tvm_numguard.fixes.narrowing import CleanWith, culprit_modules
    from tvm_numguard.ir.narrow import rewrites

    mlp = ng.load_model(MLP)
    config = ng.CompileConfig(pipeline="ToMixedPrecision,default")
    session = BuildSession(mlp, config, context=RunContext(workers=Workers(jobs=0)))
    with session:
        session.prepare()
        x = {"x": np.random.default_rng(6).uniform(0, 1, (1, 32)).astype("float32")}
        before, after = culprit_modules(session, config, "ToMixedPrecision#0")
        places = [place for place, ok in rewrites(before, after) if ok]
        clean = CleanWith(session, config, "ToMixedPrecision#0", [x])
        reused = session.kernels.reused
        clean(places[:1]), clean(places[1:2])
        assert clean.tests == 2 and session.kernels.reused > reused


def test_a_build_in_steps_takes_its_fingerprint_from_its_lowering_without_an_instrument(monkeypatch):
    """The TIR pipeline's output is at hand between the two steps: no
    instrument follows every pass event to catch it (a guard's cached compile
    pays for each instrument)."""
    from tvm_numguard.build import compile as compile_module

    made = []
    real = compile_module.TirPipelineOutput
    monkeypatch.setattr(compile_module, "TirPipelineOutput", lambda: made.append(1) or real())
    mlp = ng.load_model(MLP)
    steps = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(fingerprint=True),
                          linking=Linking(KernelCache(), alone=True))
    assert made == [] and steps.fingerprint
    whole = compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(fingerprint=True))
    assert made == [1] and whole.fingerprint == steps.fingerprint


def test_a_library_kept_for_later_builds_is_hashed_only_when_one_looks(monkeypatch):
    from tvm_numguard.build import kernel_cache

    hashed = []
    real = kernel_cache._kernels
    monkeypatch.setattr(kernel_cache, "_kernels", lambda host: hashed.append(host) or real(host))
    mlp = ng.load_model(MLP)
    cache = KernelCache()
    compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(), linking=Linking(cache, alone=True))
    assert hashed == []  # a guard's cached compile builds this one only
    compile_model(mlp.mod, ng.CompileConfig(), BuildRequest(frozenset(["FuseOps#0"])), linking=Linking(cache))
    assert len(hashed) == 2 and cache.reused > 0
