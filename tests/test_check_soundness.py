"""The static range check's intervals are sound: every value a binding takes on
sampled inputs in range lies in its interval, on generated models (36 operator
kinds), real ONNX models, and modules after FastMath and mixed precision."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.testing.generate import generate
from tvm_numguard.judge.rangecheck.analysis import analyse
from tvm_numguard.judge.rangecheck.check import pipeline_module
from tvm_numguard.judge.rangecheck.interval import Interval
from tvm_numguard.testing import tiny_cnn_onnx, tiny_mlp_onnx
from tvm_numguard.testing.sampled import corner_samples, escapes, sampled_values


def _assert_sound(mod, ranges: dict, count: int = 8, seed: int = 0) -> int:
    analysis = analyse(mod["main"], ranges)
    sampled = sampled_values(mod, corner_samples(mod, ranges, count, np.random.default_rng(seed)))
    bad = escapes(analysis.values, sampled)
    assert not bad, f"values outside their interval: {bad[:3]}"
    return len(sampled)


@pytest.mark.parametrize("index", range(12))
def test_intervals_hold_every_sampled_value_of_generated_models(index):
    graph = generate(seed=5, index=index)
    mod = graph.to_irmodule()
    ranges = {name: Interval(lo, hi) for name, (lo, hi) in graph.ranges().items()}
    assert _assert_sound(mod, ranges) > 0


@pytest.mark.slow  # the onnx wheel's models; the fast tier keeps the generated and hand-written cases
def test_intervals_hold_on_onnx_models_and_after_rewriting_pipelines(tmp_path):
    cnn = ng.load_model(tiny_cnn_onnx(os.path.join(tmp_path, "cnn.onnx"), seed=0))
    mlp = ng.load_model(tiny_mlp_onnx(os.path.join(tmp_path, "mlp.onnx"), seed=0))
    checked = 0
    for model, low, high in ((cnn, -3.0, 3.0), (mlp, -2.0, 2.0), (cnn, -300.0, 300.0)):
        ranges = {spec.name: Interval(low, high) for spec in model.inputs}
        checked += _assert_sound(model.mod, ranges)
        for pipeline in ("ToMixedPrecision,zero", "FastMathTransform,zero"):
            later = pipeline_module(model.mod, ng.CompileConfig(pipeline=pipeline))
            checked += _assert_sound(later, ranges, seed=1)
    assert checked > 30


def test_the_soundness_check_can_fail():
    """An interval narrower than what the model computes is caught."""
    graph = generate(seed=5, index=0)
    mod = graph.to_irmodule()
    ranges = {name: Interval(lo, hi) for name, (lo, hi) in graph.ranges().items()}
    narrow = {name: Interval(r.lo, r.lo + (r.hi - r.lo) * 0.01) for name, r in ranges.items()}
    analysis = analyse(mod["main"], narrow)
    sampled = sampled_values(mod, corner_samples(mod, ranges, 4, np.random.default_rng(0)))
    assert escapes(analysis.values, sampled)


@pytest.mark.slow  # torch.export of each block: about 5 s apiece
@pytest.mark.parametrize("name", ["bert-layer", "vit-layer", "variance-norm"])
def test_intervals_hold_on_transformer_blocks(name, tmp_path):
    """transformers blocks exported with torch.export (softmax attention, layer norm,
    GELU), before and after ToMixedPrecision."""
    from tvm_numguard.testing.zoo import blocks as zoo

    if zoo.ENTRIES[name].needs_transformers and zoo.missing_requirements():
        pytest.skip(zoo.missing_requirements())
    model = ng.load_model(zoo.export(name, str(tmp_path)))
    ranges = {spec.name: Interval(lo, hi) for spec, (_, lo, hi) in zip(model.inputs, zoo.ENTRIES[name].ranges)}
    assert _assert_sound(model.mod, ranges, count=6) > 5
    later = pipeline_module(model.mod, ng.CompileConfig(pipeline="ToMixedPrecision,zero"))
    _assert_sound(later, ranges, count=6, seed=1)


def test_a_transposed_convolution_holds_its_mixed_corner():
    """conv2d_transpose (IOHW weights): an output that gets every product reaches the sum
    of the weights' magnitudes at the corner of their signs; the bound must hold it."""
    from tvm import relax

    rng = np.random.default_rng(0)
    w = (rng.uniform(0.5, 1.0, (6, 2, 1, 1)) * np.where(rng.random((6, 2, 1, 1)) < 0.5, -1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 6, 1, 1), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.nn.conv2d_transpose(x, relax.const(w)))
        bb.emit_func_output(y)
    mod = bb.get()
    corner = np.sign(w[:, 0, 0, 0]).reshape(1, 6, 1, 1).astype("float32")
    analysis = analyse(mod["main"], {"x": Interval(-1.0, 1.0)})
    sampled = sampled_values(mod, [{"x": corner}, {"x": -corner}])
    assert not escapes(analysis.values, sampled)
    assert analysis.values[0].interval.hi >= float(np.abs(w[:, 0]).sum())
