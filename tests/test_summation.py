"""The summation bound (tvm_numguard/judge/summation.py): a long sum that TVM adds one term after the other is no
fault of TVM's where the framework's blocked kernel is closer by luck; a sum that drops a term still is."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tvm_numguard as ng
from tvm_numguard.build.workers import Workers
from tvm_numguard.judge.summation import aten_terms, onnx_terms, relax_terms, summation_bound
from onnxfile import save_onnx

N = 3072  # a ViT-Base MLP's second Linear sums this many terms


def _halves_weight() -> np.ndarray:
    """[N, 96] weights positive in their first half and negative in the second: the partial sums of a
    positive input rise for N/2 terms and cancel after, so a plain loop rounds large partial sums."""
    rng = np.random.default_rng(0)
    return (np.concatenate([np.abs(rng.normal(size=(N // 2, 96))), -np.abs(rng.normal(size=(N // 2, 96)))])
            * 0.02).astype(np.float32)


def _onnx_model(tmp_path) -> str:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc2")]
    return save_onnx(tmp_path / "halves.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, N])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 96])],
                     [numpy_helper.from_array(_halves_weight(), "w")])


def _torch_model(tmp_path) -> str:
    import torch

    linear = torch.nn.Linear(N, 96, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(_halves_weight().T.copy()))
    path = str(tmp_path / "halves.pt2")
    torch.export.save(torch.export.export(linear.eval(), (torch.rand(16, N),)), path)
    return path


@pytest.mark.parametrize("make", [_onnx_model, _torch_model], ids=["onnx", "pt2"])
def test_a_plain_loop_over_a_long_dot_product_is_no_import_fault(tmp_path, make):
    """Without the summation bound this was LEGALIZATION of relax.matmul (TVM's stock kernel, clean)."""
    report = ng.bisect(make(tmp_path), ng.CompileConfig(pipeline="zero"),
                       ng.Options(low=0.0, high=1.0, budget="20", seed=0), workers=Workers(jobs=0))
    imports = report.imports
    assert imports.verdict in ("agrees", "benign") and not report.violation, imports.reason
    assert imports.placement is None or not imports.placement.at_fault, imports.placement


def test_what_sums_and_over_how_many_terms():
    a, b = np.zeros((4, 300)), np.zeros((300, 7))
    assert aten_terms("aten.mm.default", [a, b], None) == 300
    assert aten_terms("aten.addmm.default", [np.zeros(7), a, b], None) == 301  # the bias is one more term
    assert aten_terms("aten.convolution.default", [np.zeros((1, 3, 8, 8)), np.zeros((5, 3, 3, 3)), None], None) == 27
    assert aten_terms("aten.mean.dim", [np.zeros((2, 10, 4))], np.zeros((2, 4))) == 10
    assert aten_terms("aten.relu.default", [a], a) is None
    gemm = helper.make_node("Gemm", ["a", "b"], ["c"], transA=1)
    assert onnx_terms(gemm, [np.zeros((300, 4)), np.zeros((300, 7))], None) == 300
    assert onnx_terms(helper.make_node("ReduceSum", ["a"], ["c"]), [a], np.zeros(4)) == 300
    assert onnx_terms(helper.make_node("Add", ["a", "b"], ["c"]), [a, a], a) is None
    assert relax_terms("relax.nn.conv2d", [np.zeros((1, 4, 8, 8)), np.zeros((6, 2, 3, 3))], None) == 18  # groups 2
    assert relax_terms("relax.exp", [a], a) is None


def test_a_float16_sum_is_allowed_float32s_bound_and_float64_its_own():
    """Honest frameworks accumulate float16 in float32: a float16 accumulator stays the precision stage's
    question. A float64 model's sums are held to float64's roundoff (a float32 one there is a narrowing)."""
    ones = np.ones(3)
    assert np.array_equal(summation_bound(ones, 100, "float16"), summation_bound(ones, 100, "float32"))
    assert summation_bound(ones, 100, "float64")[0] < summation_bound(ones, 100, "float32")[0] * 1e-8


def test_a_plain_loops_one_way_roundings_over_near_equal_terms_are_allowed():
    """262144 values in [0.9, 1] added one after the other in float32 (a mean over a 512x512 map): the partial
    sums grow and the terms are too alike for the roundings to take random signs, so they add up past the
    random-sign part (1.9 times); the terms' spread there is 1.95 n*u, under ONE_WAY_SPREAD's 4. Terms that
    cancel get no such allowance."""
    rng = np.random.default_rng(0)
    n = 262144
    x = rng.uniform(0.9, 1.0, (32, n)).astype(np.float32)
    plain_loop = np.zeros(32, np.float32)
    for k in range(n):
        plain_loop = (plain_loop + x[:, k]).astype(np.float32)
    wide = x.astype(np.float64)
    exact, squares = wide.sum(axis=1), (wide ** 2).sum(axis=1)
    err = np.abs(plain_loop.astype(np.float64) - exact)
    assert np.any(err > summation_bound(exact, n, "float32"))  # the random-sign part alone
    assert np.all(err <= summation_bound(exact, n, "float32", exact, squares))
    means = summation_bound(exact / n, n, "float32", exact / n, squares / n, mean=True)
    assert np.allclose(means, summation_bound(exact, n, "float32", exact, squares) / n)
    cancelling = (wide * rng.choice([-1.0, 1.0], wide.shape)).sum(axis=1)
    random_signs = summation_bound(exact, n, "float32")
    assert np.array_equal(summation_bound(exact, n, "float32", cancelling, squares), random_signs)


def test_a_full_reduction_and_an_integer_sum_in_the_moved_truth():
    """A sum to a scalar (x.sum()) moves like any other (a 0-d value stays an array); an integer sum is exact
    and never moves: an all-ones mask summed over 8192 positions is 8192 in every run."""
    import torch

    from tvm_numguard.judge.framework.fx_truth import float64_interpreter

    class Sums(torch.nn.Module):
        def forward(self, x, mask):
            return x.sum(), mask.sum(dim=1)

    program = torch.export.export(Sums(), (torch.rand(64, 8192), torch.ones(2, 8192, dtype=torch.int64)))
    x, mask = torch.rand(64, 8192, dtype=torch.float64), torch.ones(2, 8192, dtype=torch.int64)
    total, count = float64_interpreter(program.module(), rng=np.random.default_rng(0)).run(x, mask)
    assert total.dim() == 0 and total.dtype == torch.float64
    assert 0 < abs(float(total) - float(x.sum())) <= 2 * np.sqrt(x.numel()) * 2.0 ** -24 * float(x.sum())
    assert count.dtype == torch.int64 and count.tolist() == [8192, 8192]


def test_an_onnx_integer_sum_stays_exact_and_a_sum_of_unknown_float_is_not_moved():
    from tvm_numguard.judge.framework.onnx_truth import NodeByNode

    nodes = [helper.make_node("ReduceSum", ["mask", "axes"], ["n"], keepdims=0),
             helper.make_node("Sub", ["n", "one"], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("mask", TensorProto.INT64, [2, 64])],
                              [helper.make_tensor_value_info("out", TensorProto.INT64, [2])],
                              [numpy_helper.from_array(np.array([1], np.int64), "axes"),
                               numpy_helper.from_array(np.array(1, np.int64), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    out, = NodeByNode(model).outputs({"mask": np.ones((2, 64), np.int64)}, sums=(rng, {"n": "float32"}))
    assert out.tolist() == [63, 63]
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [numpy_helper.from_array(np.array([1], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(1).uniform(0, 1, (2, 64))
    unknown, = NodeByNode(model).outputs({"x": x}, sums=(rng, {}))
    known, = NodeByNode(model).outputs({"x": x}, sums=(rng, {"y": "float32"}))
    exact = x.sum(axis=1)
    assert np.allclose(unknown, exact, rtol=1e-13, atol=0) and not np.allclose(known, exact, rtol=1e-13, atol=0)


def test_a_grouped_transposed_convolution_reads_its_own_groups_channels():
    depthwise = [np.zeros((1, 8, 5, 5)), np.zeros((8, 1, 3, 3)), None, [1, 1], [0, 0], [1, 1], True, [0, 0], 8]
    assert aten_terms("aten.convolution.default", depthwise, None) == 9
    plain = [np.zeros((1, 8, 5, 5)), np.zeros((8, 4, 3, 3)), None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1]
    assert aten_terms("aten.convolution.default", plain, None) == 72


def test_a_transposed_convolution_sums_the_taps_that_land_on_an_element():
    """A stride-2 upsampling with a 4x4 kernel puts 2x2 of its taps on each output element (TOPI's kernel adds
    the other 12 as exact zeros); a dilation sharing no factor with the stride lands them all in turn."""
    x, w = np.zeros((1, 1024, 8, 8)), np.zeros((1024, 64, 4, 4))
    aten = [x, w, None, [2, 2], [1, 1], [1, 1], True, [0, 0], 1]
    assert aten_terms("aten.convolution.default", aten, None) == 1024 * 4
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1], group=2)
    assert onnx_terms(node, [x, w, np.zeros(128)], None) == 512 * 4 + 1  # the bias is one more term
    attrs = SimpleNamespace(strides=[3], dilation=[2], groups=1, kernel_layout="IOW")
    assert relax_terms("relax.nn.conv1d_transpose", [np.zeros((1, 16, 9)), np.zeros((16, 8, 6))], None, attrs) == 32
    dilated = SimpleNamespace(strides=[2], dilation=[3], groups=1, kernel_layout="IOW")
    assert relax_terms("relax.nn.conv1d_transpose", [np.zeros((1, 16, 9)), np.zeros((16, 8, 6))], None, dilated) == 48
    other = SimpleNamespace(strides=[2], dilation=[1], groups=1, kernel_layout="OIW")  # a layout not told
    assert relax_terms("relax.nn.conv1d_transpose", [np.zeros((1, 16, 9)), np.zeros((16, 8, 6))], None, other) is None


def _upsampling_weight(channels: int) -> np.ndarray:
    """[channels, 4, 4, 4] ConvTranspose weights, positive for the first half of the input channels and
    negative for the second: a plain loop over the channels rounds large partial sums that cancel."""
    rng = np.random.default_rng(0)
    half = (channels // 2, 4, 4, 4)
    return (np.concatenate([np.abs(rng.normal(size=half)), -np.abs(rng.normal(size=half))]) * 0.02).astype(np.float32)


@pytest.mark.parametrize("kind", ["onnx", "pt2"])
def test_a_plain_loop_over_a_wide_transposed_convolution_is_no_import_fault(tmp_path, kind):
    """A decoder's upsampling from 2048 channels sums 8192 terms per element. Without counting transposed
    convolutions as sums this was LEGALIZATION of relax.nn.conv2d_transpose (TOPI's stock kernel, honest) in
    both frontends: ONNX's moved truth did not move ConvTranspose, and no kernel was allowed its sum's bound."""
    import torch

    up = torch.nn.ConvTranspose2d(2048, 4, 4, stride=2, padding=1, bias=False)
    with torch.no_grad():
        up.weight.copy_(torch.from_numpy(_upsampling_weight(2048)))
    x, path = torch.rand(1, 2048, 4, 4), str(tmp_path / f"up.{kind}")
    if kind == "onnx":
        torch.onnx.export(up.eval(), (x,), path, input_names=["x"], opset_version=17, dynamo=False)
    else:
        torch.export.save(torch.export.export(up.eval(), (x,)), path)
    report = ng.bisect(path, ng.CompileConfig(pipeline="zero"), ng.Options(low=0.0, high=1.0, budget="20", seed=0),
                       workers=Workers(jobs=0))
    imports = report.imports
    assert imports.verdict in ("agrees", "benign") and not report.violation, imports.reason
    assert imports.placement is None or not imports.placement.at_fault, imports.placement


_TRANSPOSED = [((1, 8, 5, 5), (8, 3, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
               ((2, 8, 5, 6), (8, 2, 3, 2), dict(strides=[2, 3], pads=[1, 0, 0, 1], group=2, output_padding=[1, 1])),
               ((1, 4, 7), (4, 3, 4), dict(strides=[3], dilations=[2], pads=[2, 1])),
               ((1, 6, 3, 3, 3), (6, 2, 2, 2, 2), dict(strides=[2, 1, 2], group=3)),
               ((1, 4, 5, 5), (4, 4, 3, 3), dict(dilations=[2, 2], pads=[0, 1, 2, 0]))]


@pytest.mark.parametrize("x_shape, w_shape, attrs", _TRANSPOSED)
def test_the_truths_conv_transpose_is_the_operators_definition(x_shape, w_shape, attrs):
    """numpy's ConvTranspose in the ONNX truth (onnx.reference's is slow, and fails on groups) against
    PyTorch's, its pads cropped from the full output and its output_padding zeros added at the end."""
    import torch
    import torch.nn.functional as F

    from tvm_numguard.judge.framework.onnx_truth import conv_transpose

    axes, groups = len(x_shape) - 2, attrs.get("group", 1)
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[1] * groups)
    got = conv_transpose(helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs), [x, w, b])
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[axes - 1]
    full = fn(torch.from_numpy(x), torch.from_numpy(w), None, stride=attrs.get("strides", 1),
              dilation=attrs.get("dilations", 1), groups=groups).numpy()
    full = np.pad(full, [(0, 0), (0, 0)] + [(0, e) for e in attrs.get("output_padding", [0] * axes)])
    pads = attrs.get("pads", [0] * 2 * axes)
    want = full[(slice(None), slice(None), *(slice(pads[i], full.shape[2 + i] - pads[axes + i]) for i in range(axes)))]
    want = want + b.reshape(1, -1, *[1] * axes)
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make, key", [(_onnx_model, "y"), (_torch_model, "mm")], ids=["onnx", "pt2"])
def test_a_node_judged_alone_is_allowed_its_sums_bound(tmp_path, make, key):
    """What the local node judge adds to a matmul's conditioning: the bound of its 3072 terms on the node's own
    arguments (from its float64 value, as the judge already has it); an elementwise node has none."""
    from tvm_numguard.judge.framework import open_framework

    framework = open_framework(make(tmp_path), ["x"])
    x = np.random.default_rng(0).uniform(0, 1, (16, N)).astype(np.float32)
    # the input, and the weight as the node reads it ([N, 96]: the torch program's mm reads its transpose)
    first, second = framework.node_arguments(key)
    args = {first: x, second: _halves_weight()}
    value = framework.run_node(key, args, {"x": x}, double=True)
    bound = framework.node_summation_bound(key, args, {"x": x}, value)
    magnitudes = np.abs(x.astype(np.float64)) @ np.abs(_halves_weight().astype(np.float64))
    assert bound.shape == value.shape == (16, 96)
    assert np.allclose(bound, summation_bound(magnitudes, N, "float32", value, (x.astype(np.float64) ** 2)
                                              @ (_halves_weight().astype(np.float64) ** 2)))


def _layer_norm_model(tmp_path, kind: str) -> str:
    import torch

    norm, x, path = torch.nn.LayerNorm(4096).eval(), torch.rand(8, 4096), str(tmp_path / f"norm.{kind}")
    if kind == "onnx":
        torch.onnx.export(norm, (x,), path, input_names=["x"], opset_version=18, dynamo=False)
    else:
        torch.export.save(torch.export.export(norm, (x,)), path)
    return path


@pytest.mark.parametrize("kind", ["onnx", "pt2"])
def test_a_normalizations_plain_loop_over_two_valued_inputs_is_no_fault(tmp_path, kind):
    """TVM 0.27's layer_norm is two-pass, a plain loop for each sum. The search's inputs at the range's ends
    (0 and 1) make every partial sum round the same way: TVM was off by 1.8e-5 on 1.14, 1.4 times the
    random-sign bound of both sums, and LEGALIZATION of relax.nn.layer_norm in both frontends. The plain
    loop's own error on the terms (PLAIN_LOOP_MARGIN) now counts; at a margin of 0.5 it is at fault again."""
    report = ng.bisect(_layer_norm_model(tmp_path, kind), ng.CompileConfig(pipeline="zero"),
                       ng.Options(low=0.0, high=1.0, budget="10", seed=0), workers=Workers(jobs=0))
    imports = report.imports
    assert imports.verdict in ("agrees", "benign") and not report.violation, imports.reason
    assert imports.placement is None or not imports.placement.at_fault, imports.placement


def _layer_norm_meaning():
    from tvm_numguard.judge.components.meaning import MEANINGS, OpMeaning

    attrs = SimpleNamespace(axes=[-1], epsilon=1e-5, center=True, scale=True)
    return OpMeaning("relax.nn.layer_norm", MEANINGS["relax.nn.layer_norm"], attrs)


def _layer_norm32(x: np.ndarray, one_pass: bool = False) -> np.ndarray:
    """A layer_norm kernel in float32, each sum a plain loop in index order (np.cumsum adds one term after
    the other): two passes as TVM 0.27's, or the one-pass E[x^2] - E[x]^2."""
    n = np.float32(x.shape[-1])
    mean = np.cumsum(x, axis=-1, dtype=np.float32)[:, -1:] / n
    if one_pass:
        var = np.cumsum(x * x, axis=-1, dtype=np.float32)[:, -1:] / n - mean * mean
    else:
        var = np.cumsum((x - mean) ** 2, axis=-1, dtype=np.float32)[:, -1:] / n
    return (x - mean) / np.sqrt(var + np.float32(1e-5))


@pytest.mark.parametrize("low, one_pass, at_fault", [(0.0, False, False), (100.0, False, False), (100.0, True, True)],
                         ids=["two-pass", "two-pass-offset", "one-pass-offset"])
def test_a_normalization_is_allowed_its_sums_rounding_not_a_cancelling_formula(low, one_pass, at_fault):
    """The normalization bound allows an honest two-pass kernel on inputs at the ends of their range, and
    still blames the one-pass variance (docs: TVM's group_norm) where the mean is large: its cancellation is no
    rounding of a sum."""
    from tvm_numguard.base.tolerance import Tolerance
    from tvm_numguard.judge.components.rule import fault_of, honest_bound

    x = (low + np.random.default_rng(0).integers(0, 2, (8, 4096))).astype(np.float32)
    gamma, beta = np.ones(4096), np.zeros(4096)
    meaning = _layer_norm_meaning()
    truth = meaning.evaluate([x.astype(np.float64), gamma, beta])
    honest = meaning.evaluate([x, gamma.astype(np.float32), beta.astype(np.float32)])
    bound = honest_bound(meaning, [x.astype(np.float64), gamma, beta], truth, "float32")
    fault = fault_of(honest, _layer_norm32(x, one_pass), truth, Tolerance(), bound)
    assert (fault.elements > 0) == at_fault, fault


def test_a_variance_kernels_two_pass_loop_with_its_own_float32_mean_is_no_fault():
    """TVM's relax.variance is a plain loop over (x - mean)^2 with the mean its float32 loop gave. Over 131072
    inputs of 24 distinct values (powers of two, as a search's inputs at its range's ends are) the same loop with
    the float64 mean's deviations rounds otherwise: TVM was 5 times past twice that loop's error, LEGALIZATION of a
    stock kernel (a red-team trial's GroupNorm(32, 256) at 128x128 in ONNX). The loop is now emulated as TVM runs
    it (summation.plain_two_pass_error)."""
    import tvm
    from tvm import relax
    from tvm.script import ir as I, relax as R

    from tvm_numguard.base.tolerance import Tolerance
    from tvm_numguard.judge.components.meaning import MEANINGS, OpMeaning
    from tvm_numguard.judge.components.rule import fault_of, honest_bound

    @I.ir_module
    class Variance:
        @R.function
        def main(x: R.Tensor((4, 131072), dtype="float32")) -> R.Tensor((4, 1), dtype="float32"):
            with R.dataflow():
                gv: R.Tensor((4, 1), dtype="float32") = R.variance(x, axis=[1], keepdims=True)
                R.output(gv)
            return gv

    x = (2.0 ** -np.random.default_rng(3).integers(0, 24, (4, 131072))).astype(np.float32)
    mine = relax.VirtualMachine(tvm.compile(Variance, "llvm"), tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()
    meaning = OpMeaning("relax.variance", MEANINGS["relax.variance"], SimpleNamespace(axis=[1], keepdims=True))
    truth, honest = meaning.evaluate([x.astype(np.float64)]), meaning.evaluate([x])
    bound = honest_bound(meaning, [x.astype(np.float64)], truth, "float32")
    assert np.abs(mine - truth).max() > 1e-6 * np.abs(truth).max()  # a plain loop's error, far from the truth's
    assert fault_of(honest, mine, truth, Tolerance(), bound).elements == 0


def test_a_layer_norm_kernel_with_another_epsilon_is_at_fault_over_offset_inputs():
    """A layer_norm kernel whose epsilon is 1e-3 for the model's 1e-5, over 65536 inputs in [20, 21] (a red-team
    trial's). The mean's sum was allowed its one-way part, u * n/2 of the sum: near-equal terms, and divided by
    the deviation it was 0.14 per element, 350 times what a two-pass kernel is off by, and excused this. A
    normalization's sums get a plain loop's measured error instead; the honest kernel stays within."""
    from tvm_numguard.base.tolerance import Tolerance
    from tvm_numguard.judge.components.rule import fault_of, honest_bound

    x = np.random.default_rng(0).uniform(20, 21, (4, 65536)).astype(np.float32)
    gamma, beta = np.ones(65536), np.zeros(65536)
    meaning = _layer_norm_meaning()
    truth = meaning.evaluate([x.astype(np.float64), gamma, beta])
    honest = meaning.evaluate([x, gamma.astype(np.float32), beta.astype(np.float32)])
    bound = honest_bound(meaning, [x.astype(np.float64), gamma, beta], truth, "float32")
    mean = np.cumsum(x, axis=-1, dtype=np.float32)[:, -1:] / np.float32(65536)
    var = np.cumsum((x - mean) ** 2, axis=-1, dtype=np.float32)[:, -1:] / np.float32(65536)
    wrong_epsilon = (x - mean) / np.sqrt(var + np.float32(1e-3))
    assert fault_of(honest, wrong_epsilon, truth, Tolerance(), bound).elements > 0
    assert fault_of(honest, _layer_norm32(x), truth, Tolerance(), bound).elements == 0


def test_a_mean_kernel_that_drops_its_last_128_of_65536_terms_is_at_fault():
    """Over 65536 inputs in [20, 21] the one-way part of the mean's bound (u * n/2 of the mean: 0.04) excused a
    kernel 0.2% off (a red-team trial's). A Relax reduction over its inputs is held to a plain loop's measured
    error and the random-sign part; TVM's own plain loop stays within."""
    from tvm_numguard.base.tolerance import Tolerance
    from tvm_numguard.judge.components.meaning import MEANINGS, OpMeaning
    from tvm_numguard.judge.components.rule import fault_of, honest_bound

    x = np.random.default_rng(0).uniform(20, 21, (4, 65536)).astype(np.float32)
    meaning = OpMeaning("relax.mean", MEANINGS["relax.mean"], SimpleNamespace(axis=[1], keepdims=False))
    truth, honest = meaning.evaluate([x.astype(np.float64)]), meaning.evaluate([x])
    bound = honest_bound(meaning, [x.astype(np.float64)], truth, "float32")
    plain = np.cumsum(x, axis=1, dtype=np.float32)[:, -1] / np.float32(65536)
    dropped = np.cumsum(x[:, :-128], axis=1, dtype=np.float32)[:, -1] / np.float32(65536)
    assert fault_of(honest, dropped, truth, Tolerance(), bound).elements == 4
    assert fault_of(honest, plain, truth, Tolerance(), bound).elements == 0
