"""Cases an outside review found the import judge getting wrong (models, defects
and ranges the judge table does not hold): a clean float16 MatMul chain blamed
on TVM, an unstable float16 formula that must not pass as precision, and a
defect one branch's conditioning hides on another (a known limit, xfail)."""

from __future__ import annotations

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.build.workers import Workers
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.locate.options import Options
from patches.imports._graph import OnnxGraph
from patches.imports._plant import onnx_converter


def _import_verdict(path, low, high):
    report = ng.bisect(str(path), CompileConfig(pipeline="zero"),
                       Options(low=low, high=high, budget="20", seed=0), workers=Workers(jobs=0))
    return report.imports.verdict, report.violation


def _save(graph, shape, outputs, path):
    import onnx
    onnx.save(graph.model(shape, outputs), str(path))
    return path


def _scaled_output(factor, dtype):
    """An ONNX wrap: the stock converter's result times ``factor`` (a wrong constant)."""
    from tvm import relax

    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            return relax.op.multiply(original(bb, inputs, attr, params), relax.const(factor, dtype))
        return converter
    return wrap


def test_clean_float16_matmul_add_chain_is_not_an_import_defect(tmp_path):
    """Two float16 MatMul + Add layers, TVM unpatched: TVM accumulates in float16, ONNX
    Runtime's float16 MatMul has its own error (39 float16 ulps at one element against
    the exact product of its own inputs), yet the verdict today is `import` (exit 1): the
    per-element rule meets an element where ONNX Runtime is lucky, and the precision stage
    stops at precision.py's `following.key == origin.key` (the widened MatMul still differs
    from ONNX Runtime's, whose error is its own)."""
    g, rng = OnnxGraph(np.float16), np.random.default_rng(5)
    y = "x"
    for _ in range(2):
        w = g.const(rng.uniform(-1, 1, (32, 32)) / np.sqrt(32))
        y = g.node("Add", [g.node("MatMul", [y, w]), g.const(rng.uniform(-.1, .1, (32,)))])
    verdict, failed = _import_verdict(_save(g, (6, 32), [y], tmp_path / "mm.onnx"), -3, 3)
    assert verdict not in ("import", "unjudged") and not failed, verdict


def test_conditioning_of_one_branch_does_not_hide_a_defect_on_another(tmp_path):
    """LayerNorm(x) * 1000 (near-constant rows: its truth moves by ~1 when x moves by 32
    roundings) + Gelu(x), with TVM's Gelu planted 10% low: the Gelu branch is well
    conditioned and 0.08 off, but the element's spread (taken at the output, where the
    LayerNorm dominates) excused it as `benign`; each differing node judged on its own
    inputs (local_node.py) finds the Gelu."""
    g = OnnxGraph(np.float32, opset=20)
    y = g.node("LayerNormalization", ["x", g.const(np.full(16, 1000.0)), g.const(np.zeros(16))], axis=-1,
               epsilon=1e-5)
    y = g.node("Add", [y, g.node("Gelu", ["x"])])
    path = _save(g, (4, 16), [y], tmp_path / "ln_gelu.onnx")
    assert _import_verdict(path, 1.0, 1.0001)[0] == "agrees"  # the stock import: nothing to excuse
    with onnx_converter("Gelu", _scaled_output(0.9, "float32")):
        report = ng.bisect(str(path), CompileConfig(pipeline="zero"),
                           Options(low=1.0, high=1.0001, budget="20", seed=0), workers=Workers(jobs=0))
    assert report.imports.verdict == "import" and report.violation, report.imports.verdict
    assert "Gelu" in report.imports.origin.node and "its own inputs" in report.imports.origin_note


def test_a_layer_norm_of_near_constant_rows_scaled_up_stays_excused_node_by_node(tmp_path):
    """The other way: the same LayerNorm branch with nothing planted, where the spread is what
    excuses its outputs (ill-conditioned rows), is not blamed when its nodes are judged alone."""
    from tvm_numguard.judge.import_stage.first_node import Located
    from tvm_numguard.judge.import_stage.local_node import local_fault
    from tvm_numguard.judge.framework import open_framework
    from tvm_numguard.base.tolerance import Tolerance

    g = OnnxGraph(np.float32, opset=20)
    y = g.node("LayerNormalization", ["x", g.const(np.full(16, 1000.0)), g.const(np.zeros(16))], axis=-1,
               epsilon=1e-12)
    path = _save(g, (4, 16), [g.node("Add", [y, g.node("Gelu", ["x"])])], tmp_path / "ln.onnx")
    model = ng.load_model(str(path))
    rows = 1.0 + np.random.default_rng(0).integers(0, 3, (4, 16)) * np.float32(2 ** -23)
    witness = {"x": rows.astype(np.float32)}
    located = Located(model, open_framework(str(path), ["x"]), witness, "llvm")
    differing = [k for k in located.expected if located.tvm_value(k) is not None
                 and not np.allclose(located.tvm_value(k), located.expected[k], rtol=1e-5, atol=1e-6)]
    assert differing, "the rows are ill-conditioned enough that TVM and ONNX Runtime differ somewhere"
    origin, judged = local_fault(located, Tolerance())
    assert origin is None and judged >= 1


def _one_pass_layernorm(original):
    """LayerNorm with the one-pass variance mean(x^2) - mean(x)^2, in the model's dtype:
    it cancels catastrophically on rows whose mean is large against their spread."""
    from tvm import relax

    def converter(cls, bb, inputs, attr, params):
        x, scale, bias = inputs[0], inputs[1], inputs[2]
        dtype, axis = x.ty.dtype, [attr.get("axis", -1)]
        mean = relax.op.mean(x, axis=axis, keepdims=True)
        var = relax.op.subtract(relax.op.mean(relax.op.multiply(x, x), axis=axis, keepdims=True),
                                relax.op.multiply(mean, mean))
        var = relax.op.maximum(var, relax.const(0.0, dtype))
        eps = relax.const(attr.get("epsilon", 1e-5), dtype)
        norm = relax.op.divide(relax.op.subtract(x, mean), relax.op.sqrt(relax.op.add(var, eps)))
        return relax.op.add(relax.op.multiply(norm, scale), bias)
    return converter


def test_precision_does_not_excuse_an_unstable_float16_formula(tmp_path):
    """A float16 LayerNorm whose converter uses the one-pass variance: TVM is far off where the
    stock converter is within a float16 ulp. Keeping the LayerNorm in float32 makes the wrong
    formula agree, so precision can excuse it: here (this witness) it does not; the outside
    review's sweep has the same formula `precision` on another (a known limit, docs/judging.md)."""
    g, rng = OnnxGraph(np.float16), np.random.default_rng(3)
    y = g.node("LayerNormalization", ["x", g.const(rng.uniform(0.5, 1.5, 16)), g.const(rng.uniform(-.1, .1, 16))],
               axis=-1, epsilon=1e-5)
    path = _save(g, (4, 16), [y], tmp_path / "ln16.onnx")
    assert _import_verdict(path, -3, 3)[0] == "agrees"  # the stock import
    with onnx_converter("LayerNormalization", _one_pass_layernorm):
        verdict, failed = _import_verdict(path, -3, 3)
    assert verdict == "import" and failed, verdict


def _layernorm_eps(eps):
    def wrap(original):
        def converter(cls, bb, inputs, attr, params):
            return original(bb, inputs, {**attr, "epsilon": eps}, params)
        return converter
    return wrap


def test_a_float16_defect_before_a_matmul_chain_is_named_where_it_is(tmp_path):
    """The precision stage asks past the values it widened; the node it names is the one its
    own widening left differing (the planted LayerNorm), not the MatMul after it."""
    g, rng = OnnxGraph(np.float16, opset=17), np.random.default_rng(7)
    y = g.node("LayerNormalization", ["x", g.const(rng.uniform(0.5, 1.5, 32)), g.const(rng.uniform(-.1, .1, 32))],
               name="ln", axis=-1, epsilon=1e-5)
    for _ in range(2):
        y = g.node("Add", [g.node("MatMul", [y, g.const(rng.uniform(-1, 1, (32, 32)) / np.sqrt(32))]),
                          g.const(rng.uniform(-.1, .1, (32,)))])
    path = _save(g, (6, 32), [y], tmp_path / "ln_mm.onnx")
    with onnx_converter("LayerNormalization", _layernorm_eps(1e-1)):
        report = ng.bisect(str(path), CompileConfig(pipeline="zero"), Options(low=-3, high=3, budget="20", seed=0),
                           workers=Workers(jobs=0))
    assert report.imports.verdict == "import" and report.imports.origin.key == "ln", report.imports.origin


@pytest.mark.slow  # a float16 transformers block: 20 s to a minute, most of it the precision stage's builds
@pytest.mark.parametrize("block, low, high", [("gpt2", 0, 1), ("bert", -3, 3)])
def test_a_clean_float16_transformer_block_is_no_import_defect(tmp_path, block, low, high):
    """Clean float16 blocks (transformers, exported to ONNX). GPT2 differs from ONNX Runtime at many
    float16 operators in a row, each explained by its own chain kept in float32 (more than the four
    rounds the precision stage used to allow). BERT's outputs are within their conditioning, and its
    float16 MatMuls, judged alone on their own inputs, are precision's question, not a defect."""
    pytest.importorskip("transformers")
    from patches.unseen.models import torch_block

    path = torch_block(str(tmp_path), name=block, fmt="onnx", half=True)
    verdict, failed = _import_verdict(path, low, high)
    assert verdict not in ("import", "unjudged") and not failed, verdict


def _erf_as_tanh(original):
    from tvm import relax

    def converter(cls, bb, inputs, attr, params):
        x = inputs[0]
        return relax.op.tanh(relax.op.multiply(x, relax.const(1.128, x.ty.dtype)))
    return converter


def test_a_wrong_formula_after_float16_matmuls_is_named_and_not_widened_past(tmp_path):
    """Float16 MatMuls differ from ONNX Runtime by precision, each still differing once kept in
    float32 (ONNX Runtime's float16 MatMul has its own error); a planted Erf after them does too,
    but it alone is off its own float64 truth when kept in float32: it is named, and the precision
    stage stops there instead of widening the rest."""
    g, rng = OnnxGraph(np.float16), np.random.default_rng(5)
    y = "x"
    for _ in range(2):
        w = g.const(rng.uniform(-1, 1, (32, 32)) / np.sqrt(32))
        y = g.node("Add", [g.node("MatMul", [y, w]), g.const(rng.uniform(-.1, .1, (32,)))])
    y = g.node("Erf", [y], name="erf")
    w = g.const(rng.uniform(-1, 1, (32, 32)) / np.sqrt(32))
    path = _save(g, (6, 32), [g.node("MatMul", [y, w])], tmp_path / "mm_erf.onnx")
    with onnx_converter("Erf", _erf_as_tanh):
        report = ng.bisect(str(path), CompileConfig(pipeline="zero"), Options(low=-3, high=3, budget="20", seed=0),
                           workers=Workers(jobs=0))
    assert report.imports.verdict == "import" and report.imports.origin.key == "erf", report.imports.origin
