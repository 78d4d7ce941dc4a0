"""The float64 oracle: to_float64 on real models, and the benign rule."""

import math
import os

import numpy as np
import pytest
from tvm import relax

from tvm_numguard.ir.model import load_model
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.build.compile import compile_model, run_build
from tvm_numguard.base.tolerance import Tolerance
from tvm_numguard.judge.float64 import oracle_inputs, to_float64
from tvm_numguard.judge.oracle import classify, has_real_violation
from relax_modules import run_module, unary_module
from tvm_numguard.testing import tiny_cnn_onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
ZERO = CompileConfig(pipeline="zero")


def _run(mod, names, inputs):
    build = compile_model(mod, ZERO)
    assert build.ok, build.error
    return run_build(build, names, inputs)


def _check_oracle(model, inputs):
    """float64 build: dtype float64, close to the float32 reference within float32 error."""
    mod64, kept = to_float64(model.mod)
    assert kept == []
    for param in mod64["main"].params:
        assert str(param.ty.dtype) == "float64"
    ref = _run(model.mod, model.input_names(), inputs)
    out = _run(mod64, model.input_names(), oracle_inputs(inputs))
    for r, o in zip(ref, out):
        assert r.dtype == np.float32 and o.dtype == np.float64
        np.testing.assert_allclose(r, o, rtol=1e-5, atol=1e-6)
    return out


def _onnx_log_sqrt_div_exp(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Log", ["x"], ["l"]),
        helper.make_node("Sqrt", ["x"], ["s"]),
        helper.make_node("Add", ["x", "one"], ["x1"]),
        helper.make_node("Div", ["s", "x1"], ["d"]),
        helper.make_node("Exp", ["d"], ["e"]),
        helper.make_node("Add", ["e", "l"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "lsde",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        initializer=[numpy_helper.from_array(np.array(1.0, np.float32), "one")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_mlp_float64_matches_numpy():
    import onnx
    from onnx import numpy_helper

    model = load_model(MLP)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 32)).astype(np.float32)
    (out,) = _check_oracle(model, {"x": x})
    w = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in onnx.load(MLP).graph.initializer}
    logits = np.tanh(x.astype(np.float64) @ w["W1"]) @ w["W2"]
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-15)


def test_cnn_float64(tmp_path):
    model = load_model(tiny_cnn_onnx(tmp_path / "cnn.onnx"))
    x = np.random.default_rng(1).uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    _check_oracle(model, {"x": x})


def test_log_sqrt_div_exp_float64_matches_numpy(tmp_path):
    model = load_model(_onnx_log_sqrt_div_exp(str(tmp_path / "lsde.onnx")))
    x = np.random.default_rng(2).uniform(0.1, 3.0, (4, 8)).astype(np.float32)
    (out,) = _check_oracle(model, {"x": x})
    xd = x.astype(np.float64)
    np.testing.assert_allclose(out, np.exp(np.sqrt(xd) / (xd + 1.0)) + np.log(xd), rtol=1e-13)






def test_kept_op_stays_float32():
    """An op named in keep runs float32 between casts; the rest is float64."""
    model = load_model(MLP)
    mod64, kept = to_float64(model.mod, keep=["relax.tanh"])
    assert kept == ["relax.tanh"]
    x = np.random.default_rng(3).uniform(-1, 1, (1, 32)).astype(np.float32)
    out = _run(mod64, ["x"], {"x": x.astype(np.float64)})[0]
    ref = _run(model.mod, ["x"], {"x": x})[0]
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("norm", ["layer_norm", "group_norm", "instance_norm"])
def test_norms_without_float64_kernel_are_decomposed(norm):
    """layer/group/instance norm legalize only for float32/16: the oracle decomposes them."""
    rng = np.random.default_rng(4)
    op = relax.op.nn
    c = lambda n: relax.const(rng.normal(size=n).astype(np.float32))  # noqa: E731
    fn = {
        "layer_norm": lambda x: op.layer_norm(x, c((3, 3)), c((3, 3)), axes=[-2, -1]),
        "group_norm": lambda x: op.group_norm(x, c(4), c(4), num_groups=2, channel_axis=1, axes=[2, 3]),
        "instance_norm": lambda x: op.instance_norm(x, c(4), c(4), channel_axis=1, axes=[2, 3]),
    }[norm]
    mod = unary_module(fn, shape=(2, 4, 3, 3))
    mod64, kept = to_float64(mod)
    assert kept == []
    x = rng.normal(size=(2, 4, 3, 3)).astype(np.float32)
    out = run_module(mod64, x.astype(np.float64))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, run_module(mod, x), rtol=1e-5, atol=1e-5)


# -- the benign rule ---------------------------------------------------------
def _sums():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, (16, 10000)).astype(np.float32)
    sequential = np.array([np.cumsum(row, dtype=np.float32)[-1] for row in x], dtype=np.float32)
    pairwise = x.sum(axis=1, dtype=np.float32)  # numpy sums float32 pairwise
    exact = np.array([math.fsum(row.astype(np.float64)) for row in x])
    return sequential, pairwise, exact


TIGHT = Tolerance(rtol=1e-7, atol=1e-6)  # tight enough that the two float32 sums differ


def test_reassociated_sum_is_benign():
    ref32, opt32, oracle = _sums()
    (verdict,) = classify(ref32, opt32, oracle, TIGHT)
    assert verdict.violations > 0
    assert verdict.benign == verdict.violations and verdict.real == 0
    assert not verdict.real_violation and verdict.all_benign
    assert verdict.max_err_opt < verdict.max_err_ref


def test_float16_rounding_is_a_real_violation():
    ref32, _, oracle = _sums()
    opt32 = ref32.astype(np.float16).astype(np.float32)
    verdicts = classify([ref32], [opt32], [oracle], Tolerance())
    assert verdicts[0].violations > 0 and verdicts[0].real > 0
    assert has_real_violation(verdicts)


def test_planted_float16_rounding_on_elementwise_output():
    x = np.random.default_rng(5).uniform(-3, 3, 1000)
    oracle = np.tanh(x)
    ref32 = np.tanh(x.astype(np.float32))
    opt32 = ref32.astype(np.float16).astype(np.float32)
    (verdict,) = classify(ref32, opt32, oracle)
    assert verdict.real > 0 and verdict.real == verdict.violations - verdict.benign


def test_nan_in_optimized_is_never_benign():
    ref = np.array([1.0, 2.0], np.float32)
    opt = np.array([np.nan, 2.0], np.float32)
    (verdict,) = classify(ref, opt, ref.astype(np.float64))
    assert verdict.violations == 1 and verdict.real == 1
    assert verdict.to_json()["real_violation"] is True


def test_identical_builds_have_no_violation():
    ref32, _, oracle = _sums()
    (verdict,) = classify(ref32, ref32.copy(), oracle)
    assert verdict.violations == 0 and verdict.real == 0 and not verdict.all_benign


def test_op_without_float64_kernel_stays_float32(monkeypatch):
    """Without its decomposition layer_norm fails in float64: found by probing, kept float32."""
    from tvm_numguard.judge import float64

    monkeypatch.delitem(float64._DECOMPOSE, "relax.nn.layer_norm")
    rng = np.random.default_rng(6)
    c = relax.const(rng.normal(size=(3,)).astype(np.float32))
    mod = unary_module(lambda x: relax.op.tanh(relax.op.nn.layer_norm(x, c, c, axes=[-1])), shape=(2, 4, 3, 3))
    mod64, kept = to_float64(mod)
    assert kept == ["relax.nn.layer_norm"]
    x = rng.normal(size=(2, 4, 3, 3)).astype(np.float32)
    out = run_module(mod64, x.astype(np.float64))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, run_module(mod, x), rtol=1e-5, atol=1e-6)


def test_legalized_module_keeps_call_tir_float32():
    """A module already lowered to call_tir: the kernels stay float32, the rest float64."""
    model = load_model(MLP)
    legal = relax.transform.LegalizeOps()(model.mod)
    mod64, kept = to_float64(legal)
    assert kept == ["relax.call_tir"]
    x = np.random.default_rng(7).uniform(-1, 1, (1, 32)).astype(np.float32)
    out = _run(mod64, ["x"], {"x": x.astype(np.float64)})[0]
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, _run(model.mod, ["x"], {"x": x})[0], rtol=1e-6, atol=1e-7)


def test_oracle_object_and_classify_on_a_real_difference(tmp_path):
    """Float64Build runs the CNN in float64; the float32 reference is benign against itself,
    and a float16-rounded 'optimized' output is a real violation."""
    from tvm_numguard.judge.float64 import Float64Build

    model = load_model(tiny_cnn_onnx(tmp_path / "cnn.onnx"))
    oracle = Float64Build(model.mod, model.input_names())
    assert oracle.kept == []
    x = {"x": np.random.default_rng(8).uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)}
    (g,) = oracle.run(x)
    (ref,) = _run(model.mod, ["x"], x)
    assert g.dtype == np.float64 and g.shape == ref.shape
    bad = ref.astype(np.float16).astype(np.float32)
    (v,) = classify([ref], [bad], [g])
    assert v.real > 0 and v.max_err_opt > v.max_err_ref


# -- the oracle in a worker, beside the bisection ------------------------------
def _parent_float64_builds(monkeypatch) -> list:
    """The Float64Builds made in numguard's own process (a worker's append is its own)."""
    from tvm_numguard.judge import float64

    here, made, real = os.getpid(), [], float64.Float64Build.__init__

    def watched(self, *args, **kwargs):
        made.extend([1] if os.getpid() == here else [])
        real(self, *args, **kwargs)

    monkeypatch.setattr(float64.Float64Build, "__init__", watched)
    return made


def _bisect_mlp(lines: list, monkeypatch, cores: int = 4):
    import tvm_numguard as ng
    from tvm_numguard.judge import oracle
    from tvm_numguard.build.workers import Workers, can_fork

    monkeypatch.setattr(oracle, "available_cores", lambda: cores)  # the worker is for machines with cores to spare
    if not can_fork():
        pytest.skip("worker processes are forked (Linux)")
    return ng.bisect(MLP, CompileConfig(pipeline="ToMixedPrecision,default"),
                     ng.Options(low=0.0, high=1.0, budget="30"),
                     progress=lambda line: lines.append(str(line)), workers=Workers(jobs=2))


def test_the_culprit_comes_before_the_oracle_whose_build_is_made_in_a_worker(monkeypatch):
    made_here, lines = _parent_float64_builds(monkeypatch), []
    report = _bisect_mlp(lines, monkeypatch)
    assert report.culprit == "ToMixedPrecision#0" and report.data["oracle"]["available"]
    assert report.data["oracle"]["real_violation"] and report.violation
    assert made_here == []  # built and run in its worker
    probes = [i for i, line in enumerate(lines) if "bisection probe" in line]
    answer = [i for i, line in enumerate(lines) if "float64 oracle's answer from its worker" in line]
    assert probes and answer and probes[-1] < answer[0]  # the bisection ran while the oracle was in its worker


def test_on_two_cores_the_oracle_is_built_here_before_the_bisection(monkeypatch):
    made_here, lines = _parent_float64_builds(monkeypatch), []
    report = _bisect_mlp(lines, monkeypatch, cores=2)
    assert report.culprit == "ToMixedPrecision#0" and made_here == [1]  # its own worker would only share the cores
    assert not any("from its worker" in line for line in lines)


def test_a_difference_the_oracle_finds_benign_is_bisected_but_names_no_culprit(monkeypatch):
    import dataclasses

    from tvm_numguard.judge import oracle as oracles

    real = oracles.judge
    monkeypatch.setattr(oracles, "judge",
                        lambda *a, **k: dataclasses.replace(real(*a, **k), real_violation=False))
    lines: list = []
    report = _bisect_mlp(lines, monkeypatch)
    assert report.data["verdict"] == "benign" and report.culprit is None and report.data["bisection"] is None
    # stopped at the first probe after the oracle answered, or (an oracle slower than the bisection) dropped
    assert any("benign: the bisection stops" in line or "benign: the bisection's culprit is not reported" in line
               for line in lines)


def test_a_bisection_told_to_stop_gives_up_before_its_next_probe():
    from tvm_numguard.locate.bisect import Bisection, BisectionStopped
    from tvm_numguard.build.session import RunContext
    from tvm_numguard.build.session import BuildSession
    from tvm_numguard.build.workers import Workers

    model = load_model(MLP)
    asked: list = []
    witness = {model.input_names()[0]: np.full(model.inputs[0].shape, 1.0, "float32")}
    with BuildSession(model, CompileConfig(pipeline="ToMixedPrecision,default"),
                       context=RunContext(workers=Workers(jobs=0))) as session:
        session.prepare()
        bisection = Bisection(session, witness, stop=lambda: asked.append(1) or len(asked) > 1)
        with pytest.raises(BisectionStopped):
            bisection.run()
    assert len(asked) == 2  # one probe asked, then given up before the second


def test_a_float64_build_that_fails_in_its_worker_leaves_every_violation_real(monkeypatch):
    from tvm_numguard.judge import float64

    def fails(self, *args, **kwargs):
        raise RuntimeError("no float64 kernel in this test")

    monkeypatch.setattr(float64.Float64Build, "__init__", fails)
    report = _bisect_mlp([], monkeypatch)
    assert not report.data["oracle"]["available"]
    assert "no float64 kernel in this test" in report.data["oracle"]["reason"]
    assert report.violation and report.culprit == "ToMixedPrecision#0"


# -- float16 models: the oracle is float64 too --------------------------------
def _float16_sum_model():
    """A float16 row sum of 512 values: accumulated in float16, it errs by many float16 ulps."""
    from tvm.script import ir as I
    from tvm.script import relax as R

    @I.ir_module
    class RowSum:
        @R.function
        def main(x: R.Tensor((4, 512), "float16")):
            with R.dataflow():
                y = R.sum(x, axis=[1])
                R.output(y)
            return y

    return RowSum


def _widen_sums_pass():
    """A pass in users' style that computes every float16 sum in float32 (cast up, sum, cast back)."""
    import tvm
    from tvm.relax.expr_functor import PyExprMutator, mutator

    @mutator
    class _Widen(PyExprMutator):
        def visit_call_(self, call):
            call = super().visit_call_(call)
            if isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.sum" and str(call.ty.dtype) == "float16":
                wide = relax.op.sum(relax.op.astype(call.args[0], "float32"), call.attrs.axis, call.attrs.keepdims)
                return relax.op.astype(wide, "float16")
            return call

    @tvm.transform.module_pass(opt_level=0, name="WidenFloat16Sums")
    def widen(mod, ctx):
        out = mod.clone()
        out["main"] = _Widen(mod).visit_expr(mod["main"])
        return out

    return widen


def test_a_float16_models_oracle_computes_in_float64():
    from tvm_numguard.judge.float64 import Float64Build

    x = np.random.default_rng(1).uniform(0.5, 1.0, (4, 512)).astype(np.float16)
    (out,) = Float64Build(_float16_sum_model(), ["x"]).run({"x": x})
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-12)


def test_a_pass_that_makes_a_float16_model_more_accurate_is_benign(tmp_path):
    # the reference accumulates in float16, the pass in float32: they differ by many float16 ulps, and the
    # pass is the closer to float64. An oracle that kept float16 would match the reference exactly and
    # blame the pass for being right
    import sys
    import types

    import tvm_numguard as ng
    from tvm_numguard.ir.model import from_irmodule

    module = types.ModuleType("widen_sums_for_test")
    module.make_pass = _widen_sums_pass
    sys.modules[module.__name__] = module
    try:
        report = ng.bisect(from_irmodule(_float16_sum_model(), "<row sum>", "row-sum"),
                           CompileConfig(pipeline="widen_sums_for_test:make_pass,zero"),
                           ng.Options(low=0.5, high=1.0, budget="10"))
    finally:
        del sys.modules[module.__name__]
    assert report.data["metrics"][0]["violations"] > 0  # the builds do differ beyond float16's tolerance
    oracle = report.data["oracle"]
    assert oracle["available"] and not oracle["real_violation"], oracle
    assert report.verdict == "benign" and report.exit_code == 0
