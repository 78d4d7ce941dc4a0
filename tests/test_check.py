"""``numguard check``: the static range check names the operator of every
range-driven planted patch, FastMath's exp band and ToMixedPrecision's float16
overflow, with what drives each; it stays quiet where sampled runs show every
operator in domain; exit codes and JSON."""

from __future__ import annotations

import importlib
import json
import os

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.api import public as api
from tvm_numguard.ir.model import from_irmodule
from tvm_numguard.judge.rangecheck.check import check
from tvm_numguard.locate import resolve_ranges
from tvm_numguard.testing import tiny_cnn_onnx, tiny_mlp_onnx
from tvm_numguard.testing.sampled import sampled_values

from clirun import assert_one_line_error, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = {s["name"]: s for s in json.load(open(os.path.join(ROOT, "patches", "manifest.json")))}

# the operator each range-driven patch puts at risk, and the kind of warning
RANGE_DRIVEN = {
    "exp_range": ("piecewise", "relax.where"),  # exact below 10, a polynomial above: the range is split at 10
    "inplace_softmax": ("domain", "relax.exp"),  # exp(x) / sum(exp(x)) without the max: exp overflows
    "var_onepass": ("domain", "relax.rsqrt"),  # mean(x*x) - mean(x)**2 can be negative
}


def _patch(name):
    spec = MANIFEST[name]
    module, _, attr = spec["model"].partition(":")
    model = from_irmodule(getattr(importlib.import_module(module), attr)(), spec["model"], name)
    config = ng.CompileConfig(pipeline=spec["pipeline"], tir_pipeline=spec["tir_pipeline"])
    return model, config, resolve_ranges(model.inputs, spec["low"], spec["high"])


@pytest.mark.parametrize("name", sorted(RANGE_DRIVEN))
def test_check_names_the_operator_of_each_range_driven_patch(name):
    model, config, ranges = _patch(name)
    result = check(model, config, ranges)
    kind, op = RANGE_DRIVEN[name]
    new = [w for w in result.warnings if w.new]
    assert [(w.warning.kind, w.warning.op) for w in new] == [(kind, op)]
    assert not [w for w in result.warnings if w.module == "model"], "the model itself is in domain"
    assert set(new[0].drivers) == {"x"}


@pytest.mark.parametrize("name", sorted(set(MANIFEST) - set(RANGE_DRIVEN)))
def test_check_is_quiet_on_patches_whose_error_is_not_range_driven(name):
    model, config, ranges = _patch(name)
    assert check(model, config, ranges).warnings == ()


def test_the_driving_band_of_an_exp_overflow_is_where_the_model_overflows():
    """inplace_softmax: below the band's low end the naive softmax is finite, at its top it is not."""
    model, config, ranges = _patch("inplace_softmax")
    warning = check(model, config, ranges).warnings[0]
    band = warning.drivers["x"].band
    assert warning.drivers["x"].corner == "high"
    assert 0.0 < band.lo < band.hi == 100.0
    from tvm_numguard.judge.rangecheck.check import pipeline_module

    later = pipeline_module(model.mod, config)
    rng = np.random.default_rng(0)
    below = [{"x": rng.uniform(0.0, band.lo, size=(2, 8)).astype("float32")} for _ in range(20)]
    exp_values = sampled_values(later, below)[warning.warning.position]
    assert all(np.isfinite(v).all() for v in exp_values)
    top = sampled_values(later, [{"x": np.full((2, 8), 100.0, "float32")}])[warning.warning.position]
    assert not np.isfinite(top[0]).all()


def _exp_dense():
    from tvm import relax

    rng = np.random.default_rng(7)
    w = (rng.standard_normal((16, 8)) * 0.3).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            e = bb.emit(relax.op.exp(x))
            y = bb.emit_output(relax.op.matmul(e, relax.const(w)))
        bb.emit_func_output(y)
    return from_irmodule(bb.get(), "exp_dense", "exp_dense")


def test_fast_math_exp_band():
    """fast_exp clamps its argument at 88.376; exp is finite up to 88.72: the band between."""
    model = _exp_dense()
    config = ng.CompileConfig(pipeline="FastMathTransform,zero")
    risky = check(model, config, resolve_ranges(model.inputs, -80.0, 88.5))
    approx = [w for w in risky.warnings if w.warning.kind == "approximation"]
    assert len(approx) == 1 and approx[0].new and approx[0].warning.op == "call_tir fast_exp"
    band = approx[0].drivers["x"].band
    assert 88.0 < band.lo < 88.3763 and band.hi == 88.5
    assert check(model, config, resolve_ranges(model.inputs, -80.0, 80.0)).warnings == ()


def test_mixed_precision_overflow_on_large_activations(tmp_path):
    model = ng.load_model(tiny_cnn_onnx(os.path.join(tmp_path, "cnn.onnx"), seed=0))
    config = ng.CompileConfig(pipeline="ToMixedPrecision,zero")
    result = check(model, config, resolve_ranges(model.inputs, -32768.0, 32767.0))
    overflow = [w for w in result.warnings if w.warning.kind == "overflow"]
    assert overflow and all(w.new and w.warning.dtype == "float16" for w in overflow)
    assert overflow[0].warning.op == "relax.astype"
    assert "Conv node 'conv1'" in overflow[0].provenance  # the value it casts, in the user's model
    assert overflow[0].drivers["x"].corner in ("low", "high", "both")
    assert check(model, config, resolve_ranges(model.inputs, -1.0, 1.0)).warnings == ()
    # --disable ToMixedPrecision#0: the pipeline's module is the model's again
    without = ng.CompileConfig(pipeline="ToMixedPrecision,zero", disable=("ToMixedPrecision#0",))
    assert check(model, without, resolve_ranges(model.inputs, -32768.0, 32767.0)).warnings == ()


def test_no_warning_where_sampled_runs_stay_in_domain(tmp_path):
    """The tiny MLP ends in exp(x W1 ... W2): on [-2, 2] every run is finite and the
    check counts no warning; the exp's bound passed through two weighted sums, so
    it is told as loose (it is about 10x too wide there), not counted."""
    model = ng.load_model(tiny_mlp_onnx(os.path.join(tmp_path, "mlp.onnx"), seed=0))
    ranges = resolve_ranges(model.inputs, -2.0, 2.0)
    result = check(model, ng.CompileConfig(), ranges)
    assert result.warnings == () and result.exit_code == 0
    assert [(w.warning.op, w.warning.depth) for w in result.loose] == [("relax.exp", 2)] * 2  # model, pipeline
    rng = np.random.default_rng(1)
    samples = [{"x": rng.uniform(-2, 2, size=(1, 32)).astype("float32")} for _ in range(30)]
    samples += [{"x": np.where(rng.random((1, 32)) < 0.5, -2.0, 2.0).astype("float32")} for _ in range(30)]
    assert all(np.isfinite(v).all() for values in sampled_values(model.mod, samples).values() for v in values)


def test_resnet50_and_squeezenet_are_clean_on_standardized_images(tmp_path):
    """Real models from the onnx wheel (weights randomized) on [-3, 3]: no warning, no unknown
    operator (its time is benchmarks/check_cost.py's)."""
    from tvm_numguard.testing import light_model

    for name in ("resnet50", "squeezenet"):
        model = ng.load_model(light_model(name, seed=0, directory=tmp_path))
        result = check(model, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                       resolve_ranges(model.inputs, -3.0, 3.0))
        assert result.warnings == () and not result.unknown, name


def test_cli_check_exit_codes_and_json(tmp_path, capsys):
    path = tiny_cnn_onnx(os.path.join(tmp_path, "cnn.onnx"), seed=0)
    out = os.path.join(tmp_path, "check.json")
    code, stdout, err = run_cli(capsys, "check", path, "--low", "-32768", "--high", "32767", "--pipeline",
                                "ToMixedPrecision,zero", "--json", out)
    assert code == 1, err
    assert "relax.astype can overflow" in stdout and "Conv node 'conv1'" in stdout
    data = json.load(open(out))
    assert data["command"] == "check" and data["possible_defect"] and data["warnings"][0]["module"] == "pipeline"
    code, stdout, err = run_cli(capsys, "check", path, "--low", "-1", "--high", "1", "--pipeline",
                                "ToMixedPrecision,zero")
    assert code == 0 and stdout.startswith("ROUNDING RISK")  # no range warning; float16 rounding passes rtol
    assert_one_line_error(*run_cli(capsys, "check", path, "--low", "1")[::2], "give both --low and --high")


def test_api_check_takes_options():
    model = _exp_dense()
    result = api.range_check(model, ng.CompileConfig(pipeline="FastMathTransform,zero"),
                             api.Options(low=0.0, high=88.5))
    assert result.exit_code == 1


def test_a_warning_the_model_has_too_is_not_new():
    """exp(x W) on [0, 100] overflows in the model itself: after ToMixedPrecision (which
    inserts casts and moves the exp's binding) the same warning is the model's, not new."""
    from tvm import relax

    w = (np.random.default_rng(7).standard_normal((16, 8)) * 0.3).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            e = bb.emit(relax.op.exp(bb.emit(relax.op.matmul(x, relax.const(w)))))
            y = bb.emit_output(relax.op.sum(e, axis=[1]))
        bb.emit_func_output(y)
    model = from_irmodule(bb.get(), "exp_of_dense", "exp_of_dense")
    result = check(model, ng.CompileConfig(pipeline="ToMixedPrecision,zero"), resolve_ranges(model.inputs, 0.0, 100.0))
    exps = {w.module: w for w in result.warnings if w.warning.op == "relax.exp"}
    assert set(exps) == {"model", "pipeline"} and not exps["pipeline"].new
    assert exps["pipeline"].warning.position != exps["model"].warning.position


def test_a_pipeline_that_fails_names_the_pass_and_exits_1(tmp_path, capsys):
    """A pass that raises is a compiler defect found (issue 25), not bad input."""
    passes = tmp_path / "broken.py"
    passes.write_text("import tvm\n\n@tvm.transform.module_pass(opt_level=0, name='Broken')\n"
                      "def broken(mod, ctx):\n    raise RuntimeError('this pass is broken')\n")
    path = tiny_cnn_onnx(os.path.join(tmp_path, "cnn.onnx"), seed=0)
    code, out, err = run_cli(capsys, "check", path, "--low", "0", "--high", "1", "--pipeline", f"{passes}:broken,zero")
    assert code == 1, err
    assert "BUILD FAILURE: pass Broken#0 breaks the build" in out and "this pass is broken" in out
    assert "Traceback" not in err


def test_a_split_the_model_itself_makes_is_no_warning():
    """ONNX Shrink and clamps are piecewise by definition: only a split a pass brings counts."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((8,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            below = bb.emit(relax.op.less(x, relax.const(np.float32(0.5))))
            y = bb.emit_output(relax.op.where(below, relax.op.zeros((8,), "float32"), x))
        bb.emit_func_output(y)
    model = from_irmodule(bb.get(), "shrink", "shrink")
    assert check(model, ng.CompileConfig(), resolve_ranges(model.inputs, -2.0, 2.0)).warnings == ()


def test_prelu_bounds_hold():
    from tvm import relax

    from tvm_numguard.judge.rangecheck.analysis import analyse
    from tvm_numguard.judge.rangecheck.interval import Interval

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 3, 4), "float32"))
    alpha = np.array([0.1, 0.5, 2.0], "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.nn.prelu(x, relax.const(alpha), axis=1))
        bb.emit_func_output(y)
    mod = bb.get()
    analysis = analyse(mod["main"], {"x": Interval(-3.0, 1.0)})
    assert analysis.unknown == {}
    values = sampled_values(mod, [{"x": np.full((1, 3, 4), v, "float32")} for v in (-3.0, -1.0, 0.0, 1.0)])
    every = np.concatenate([a.ravel() for arrays in values.values() for a in arrays])
    bound = analysis.values[0].interval
    assert bound.lo <= every.min() and every.max() <= bound.hi and bound.lo <= -6.0


def test_the_check_document_is_validated_against_its_schema(tmp_path):
    import dataclasses

    import jsonschema

    from tvm_numguard.report.range_check import check_document

    model = ng.load_model(tiny_cnn_onnx(os.path.join(tmp_path, "cnn.onnx"), seed=0))
    config = ng.CompileConfig(pipeline="ToMixedPrecision,zero")
    ranges = resolve_ranges(model.inputs, -32768.0, 32767.0)
    result = check(model, config, ranges)
    assert check_document(result, model, config)["warnings"][0]["kind"] == "overflow"
    first = result.warnings[0]
    broken = dataclasses.replace(first, warning=dataclasses.replace(first.warning, kind="unheard-of"))
    result = dataclasses.replace(result, warnings=(broken,) + result.warnings[1:])
    with pytest.raises(jsonschema.ValidationError):
        check_document(result, model, config)


def test_check_says_it_bounds_ranges_and_estimates_float16_rounding_against_rtol(tmp_path, capsys):
    """Clean of range warnings is not clean of rounding: the check says what it
    does not measure, and where the pipeline narrows floats, what one rounding
    costs against the tolerance (issue 25)."""
    path = tiny_mlp_onnx(os.path.join(tmp_path, "mlp.onnx"), seed=0)
    args = ["check", path, "--low", "0", "--high", "1", "--pipeline", "ToMixedPrecision,default"]
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "not rounding" in out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("rounding"))
    assert "float16" in line and "0.000488 relative" in line and "expect a violation" in line, line
    # issue 55.5: no range warning, but a violation expected: the headline does not say CLEAN above it
    assert out.startswith("ROUNDING RISK: 0 warning(s)"), out
    code, out, _ = run_cli(capsys, *args, "--rtol", "1e-2")
    assert "within the tolerance" in out and out.startswith("CLEAN: 0 warning(s)"), out
    code, out, _ = run_cli(capsys, *args[:-2], "--pipeline", "default")
    assert "not rounding" in out and "  rounding" not in out


def test_a_llama_block_under_mixed_precision_is_no_clean_check(tmp_path, capsys):
    """Issue 55.5: 'CLEAN' and then 'expect a violation on ordinary inputs'. The Llama block's
    ranges are fine in float16, its rounding is not: the headline says which."""
    from torch_blocks import llama_block

    code, out, _ = run_cli(capsys, "check", llama_block(tmp_path / "llama.pt2"), "--low", "-2", "--high", "2",
                           "--pipeline", "ToMixedPrecision,default")
    assert code == 0 and out.startswith("ROUNDING RISK: 0 warning(s)"), out
    assert "CLEAN" not in out and "expect a violation on ordinary inputs" in out
