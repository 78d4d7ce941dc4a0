"""The model itself as the reference: TVM's import judged against ONNX Runtime
and PyTorch eager, with float64 truth, and the first differing source node."""

import os
import warnings

import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper, numpy_helper

import tvm_numguard as ng
from tvm_numguard.judge.finding import Finding
from tvm_numguard.judge.framework import open_framework
from tvm_numguard.judge.framework.onnx_truth import to_float64
from tvm_numguard.judge.framework.runtimes import FrameworkError
from tvm_numguard.ir.model import load_model
from tvm_numguard.judge.import_stage.agreement import agreement_score, compare_with_framework
from tvm_numguard.base.tolerance import Tolerance
from clirun import run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
QUICK = ng.Options(low=900.0, high=1100.0, budget="20")


def _onnx(path, nodes, inputs, outputs, initializers=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return str(path)


def mvn_model(path):
    """ONNX's own MeanVarianceNormalization: TVM's frontend computes its variance as
    E[x^2] - E[x]^2, which cancels in float32 on inputs around 1000."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="act0"),
             helper.make_node("MeanVarianceNormalization", ["h"], ["n"], axes=[0, 2, 3], name="mvn"),
             helper.make_node("Relu", ["n"], ["y"], name="act")]
    return _onnx(path, nodes, [x], [y])


def test_an_import_difference_fails_and_names_the_source_node(tmp_path):
    report = ng.bisect(mvn_model(tmp_path / "mvn.onnx"), options=QUICK)
    assert report.at_fault == ["import"] and report.exit_code == 1
    assert report.verdict == "clean"  # no pass is to blame
    imports = report.imports
    assert imports.verdict == "import" and imports.framework.startswith("onnxruntime")
    assert "MeanVarianceNormalization node 'mvn'" in imports.origin.node
    assert imports.outputs[0].tvm_worse > 0
    assert report.data["attribution"]["import"] == "import"
    summary = report.summary()
    assert summary.splitlines()[0].startswith("numguard bisect: IMPORT")
    assert "no pass to switch off" in summary
    assert "import: differs, TVM at fault" in summary and "import: import" not in summary  # said in words
    # the document reads back into the same import check
    again = Finding.from_json(report.to_json()).imports
    assert again.verdict == "import" and again.origin.node == imports.origin.node


def test_the_cli_exits_1_and_says_import(tmp_path, capsys):
    path = mvn_model(tmp_path / "mvn.onnx")
    code, out, _ = run_cli(capsys, "bisect", path, "--low", "900", "--high", "1100", "--budget", "20",
                           "--json", str(tmp_path / "r.json"))
    assert code == 1
    assert "IMPORT" in out.splitlines()[0] and "MeanVarianceNormalization" in out
    assert os.path.exists(tmp_path / "r.witness.npz")  # the witness of an import difference is kept


def test_no_framework_leaves_the_import_unanswered(tmp_path, capsys):
    path = mvn_model(tmp_path / "mvn.onnx")
    code, out, _ = run_cli(capsys, "bisect", path, "--low", "900", "--high", "1100", "--budget", "20",
                           "--no-framework", "--json", str(tmp_path / "r.json"))
    assert code == 0 and "IMPORT" not in out


def test_a_model_both_compute_alike_raises_no_import_alarm():
    report = ng.bisect(MLP, options=ng.Options(low=-1.0, high=1.0, budget="10"))
    assert report.imports.verdict == "agrees" and report.at_fault == [] and report.exit_code == 0


def test_onnx_node_test_models_agree_with_their_framework():
    base = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "pytorch-converted")
    for name in ("test_Conv2d", "test_MaxPool2d", "test_Softmax", "test_ELU"):
        path = os.path.join(base, name, "model.onnx")
        report = ng.bisect(path, options=ng.Options(low=-1.0, high=1.0, budget="5"))
        assert report.imports.verdict == "agrees", (name, report.imports.to_json())


def test_torch_group_norm_import_difference_names_the_module(tmp_path):
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.proj = torch.nn.GroupNorm(2, 4), torch.nn.Conv2d(4, 4, 1)

        def forward(self, x):
            return self.proj(self.norm(x))

    torch.manual_seed(0)
    path = str(tmp_path / "gn.pt2")
    torch.export.save(torch.export.export(Block().eval(), (torch.randn(1, 4, 8, 8),)), path)
    report = ng.bisect(path, options=QUICK)
    assert report.at_fault == ["import"]
    assert report.imports.framework.startswith("PyTorch")
    assert "module norm (GroupNorm)" in report.imports.origin.node
    assert report.imports.truth.startswith("PyTorch")  # torch has float64 kernels: its own truth


def test_a_tvmscript_model_has_no_framework_and_says_so():
    from relax_modules import unary_module

    from tvm import relax

    report = ng.bisect(unary_module(relax.op.exp), options=ng.Options(low=0.0, high=1.0, budget="5"))
    assert report.imports.verdict == "unanswered"
    assert "no framework of its own" in report.imports.reason


def test_the_framework_side_at_fault_is_not_tvms():
    tol = Tolerance()
    truth = np.array([1.0, 2.0, 3.0])
    exact = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    off = np.array([1.0, 2.5, 3.0], dtype=np.float32)
    assert not compare_with_framework(0, off, exact, tol, truth).tvm_at_fault
    assert compare_with_framework(0, exact, off, tol, truth).tvm_at_fault
    # TVM within the tolerance of the exact answer is right, however much closer the framework is
    # (rtol 1e-5 at 2.0: 2e-5; TVM 1.99e-5 off, the framework 4e-7 on the other side)
    near = np.array([1.0, 2.0 + 1.99e-5, 3.0], dtype=np.float32)
    closer = np.array([1.0, 2.0 - 4e-7, 3.0], dtype=np.float32)
    agreement = compare_with_framework(0, closer, near, Tolerance(rtol=1e-5, atol=1e-6), truth)
    assert agreement.differs and not agreement.tvm_at_fault
    assert compare_with_framework(0, closer, near, Tolerance(rtol=5e-6, atol=1e-7), truth).tvm_at_fault
    # two float32 sums in another order: TVM's error within each element's conditioning is not at fault,
    # however lucky the framework was at that element; past it, it is
    rng = np.random.default_rng(0)
    exact64 = rng.random(1000)
    framework = (exact64 + rng.normal(0, 1e-6, 1000)).astype(np.float32)
    mine = (exact64 + rng.normal(0, 8e-6, 1000)).astype(np.float32)
    bound = np.full(1000, 4e-5)  # the truth moves this much when the inputs move by 32 roundings
    agreement = compare_with_framework(0, framework, mine, Tolerance(rtol=1e-6, atol=1e-7), exact64, bound)
    assert agreement.differs and not agreement.tvm_at_fault
    assert compare_with_framework(0, framework, mine, Tolerance(rtol=1e-6, atol=1e-7), exact64,
                                  np.full(1000, 1e-6)).tvm_at_fault
    # no truth: a difference is not judged (never excused, never blamed); another shape is TVM's fault
    unjudged = compare_with_framework(0, off, exact, tol)
    assert not unjudged.tvm_at_fault and unjudged.not_judged and unjudged.unjudged == 1
    assert compare_with_framework(0, off, exact[:2], tol, truth).tvm_at_fault
    # where the framework itself is not finite, the input says nothing of TVM's import
    assert agreement_score([np.array([np.nan, 1.0], np.float32)], [np.array([0.0, 2.0], np.float32)], tol) == 0.0
    assert agreement_score([np.ones(2, np.float32)], [np.ones(2, np.float32)] * 2, tol) == float("inf")


def test_the_float64_copy_runs_in_onnxruntime(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    weights = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    w = numpy_helper.from_array(weights, "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Cast", ["m"], ["c"], to=1),
             helper.make_node("Tanh", ["c"], ["y"])]
    path = _onnx(tmp_path / "mm.onnx", nodes, [x], [y], [w])
    double = to_float64(onnx.load(path))
    assert double.graph.initializer[0].data_type == TensorProto.DOUBLE
    framework = open_framework(path, ["x"])
    inputs = {"x": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)}
    (truth,) = framework.truth(inputs)
    (single,) = framework.run(inputs)
    assert truth.dtype == np.float64 and single.dtype == np.float32
    # the float32 weights and inputs, computed in float64 all the way (the Cast to float included)
    expected = np.tanh(inputs["x"].astype(np.float64) @ weights.astype(np.float64))
    np.testing.assert_allclose(truth, expected, rtol=1e-12)


def test_a_model_without_a_float64_copy_is_judged_node_by_node_without_tvm(tmp_path):
    # ONNX Runtime has no float64 MeanVarianceNormalization: the truth is the model node by node, that
    # node computed by its own ONNX function body in float64; never TVM's float64 build
    report = ng.bisect(mvn_model(tmp_path / "mvn.onnx"), options=QUICK)
    assert "node by node" in report.imports.truth and "function body" in report.imports.truth
    assert "MeanVarianceNormalization 'mvn'" in report.imports.truth
    assert "TVM" not in report.imports.truth and "float64" in report.imports.truth_note


def test_a_framework_that_cannot_run_the_model_is_one_line(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    path = _onnx(tmp_path / "custom.onnx", [helper.make_node("Relu", ["x"], ["y"], domain="my.domain")], [x], [y])
    framework = open_framework(path, ["x"])  # it opens: the model's node-by-node truth may still stand in for it
    with pytest.raises(FrameworkError) as refused:
        framework.run({"x": np.zeros(2, np.float32)})
    assert "\n" not in str(refused.value)
    with pytest.raises(FrameworkError):
        open_framework(MLP, ["x"]).run({"x": np.zeros((3, 3), np.float32)})


def dynamic_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    return _onnx(path, [helper.make_node("Relu", ["x"], ["y"])], [x], [y])


def test_dynamic_dims_stay_symbolic_at_import_unless_fixed(tmp_path):
    path = dynamic_model(tmp_path / "dyn.onnx")
    symbolic = load_model(path, {"x": [3, 4]})
    fixed = load_model(path, {"x": [3, 4]}, import_at_shapes=True)
    assert symbolic.dims == "symbolic" and fixed.dims == "fixed"
    assert symbolic.inputs[0].shape == fixed.inputs[0].shape == (3, 4)
    assert "--fix-shapes" in fixed.to_args() and "--fix-shapes" not in symbolic.to_args()
    assert load_model(MLP).dims == "static"
    with pytest.warns(DeprecationWarning, match="import_at_shapes"):  # its name before 0.2
        assert load_model(path, {"x": [3, 4]}, fix_at_import=True).dims == "fixed"


def test_a_model_that_imports_only_at_fixed_shapes_says_how(tmp_path, capsys):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")
    path = _onnx(tmp_path / "same.onnx", [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER",
                                                           strides=[2, 2])], [x], [y], [w])
    code, _, err = run_cli(capsys, "bisect", path, "--shape", "x=1,1,5,5", "--low", "0", "--high", "1")
    assert code == 2 and "--fix-shapes" in err
    code, out, _ = run_cli(capsys, "bisect", path, "--shape", "x=1,1,5,5", "--fix-shapes", "--low", "0",
                           "--high", "1", "--budget", "5", "--json", str(tmp_path / "r.json"))
    assert code == 0 and "fixed at import" in out


def test_the_guard_refuses_an_import_difference_when_given_the_model(tmp_path):
    from tvm.relax.frontend.onnx import from_onnx

    source = onnx.load(mvn_model(tmp_path / "mvn.onnx"))
    mod = from_onnx(source, keep_params_in_input=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ng.guard(900, 1100, model=source, progress=None, budget="20", time_limit=None) as guard:
            tvm.compile(mod, "llvm")
    messages = [str(w.message) for w in caught if issubclass(w.category, ng.NumericalRiskWarning)]
    assert any("cannot change the frontend" in m and "MeanVarianceNormalization" in m for m in messages), messages
    assert guard.report[0].at_fault == ["import"]
    # without the model, the guard has nothing to compare the import with
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ng.guard(900, 1100, progress=None, budget="5", time_limit=None) as guard:
            tvm.compile(mod, "llvm")
    assert guard.report[0].imports is None
    assert not any("frontend" in str(w.message) for w in caught)


def test_an_import_difference_has_its_own_trace_page(tmp_path, capsys):
    page = str(tmp_path / "t.html")
    code, out, _ = run_cli(capsys, "trace", mvn_model(tmp_path / "mvn.onnx"), "--low", "900", "--high", "1100",
                           "--budget", "20", "--html", page, "--json", str(tmp_path / "r.json"))
    assert code == 1 and "TVM's import is at fault, not a pass" in out
    text = open(page).read()
    assert "at fault: <span class='bad'>import</span>" in text
    assert "id='import-origin'>ONNX MeanVarianceNormalization node &#x27;mvn&#x27;" in text


def test_replay_of_an_import_difference_says_how_to_rerun_it(tmp_path, capsys):
    path = mvn_model(tmp_path / "mvn.onnx")
    report = str(tmp_path / "r.json")
    code, _, _ = run_cli(capsys, "bisect", path, "--low", "900", "--high", "1100", "--budget", "20", "--json", report)
    assert code == 1
    code, _, err = run_cli(capsys, "replay", report)
    assert code == 2 and "blames TVM's import" in err and "--inputs" in err


def test_a_wrong_shape_from_tvms_import_is_an_import_difference():
    # the onnx wheel's own node test: Expand with its shape an input; TVM broadcasts one way only
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "simple",
                        "test_expand_shape_model3", "model.onnx")
    report = ng.bisect(path, options=ng.Options(ranges={"X": (0.0, 1.0), "shape": (1.0, 3.0)}, budget="10"))
    assert report.at_fault == ["import"] and report.exit_code == 1
    origin = report.imports.origin
    assert "Expand node 'test'" in origin.node and origin.shape_tvm != origin.shape_framework
    assert "TVM computes shape" in report.summary()


def test_a_shape_output_is_one_integer_tensor(tmp_path):
    # TVM's VM returns a shape value as a tuple of its dims: read as separate scalars, the model's one
    # output became three, and the import was blamed for returning another number of outputs
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Shape", ["r"], ["s"])]
    path = _onnx(tmp_path / "shape.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                 [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3, 4]),
                  helper.make_tensor_value_info("s", TensorProto.INT64, [3])], opset=17)
    report = ng.bisect(path, ng.CompileConfig(pipeline="zero"), ng.Options(low=-1.0, high=1.0, budget="5"))
    assert report.imports.verdict == "agrees" and len(report.data["metrics"]) == 2
    assert report.data["metrics"][1]["shape"] == [3]


def conv_chain(path, depth=6):
    """Convs in a chain: ONNX Runtime has no float64 Conv, so the truth runs node by node."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.normal(0, 0.5, (2, 2, 3, 3)).astype(np.float32), f"w{k}")
               for k in range(depth)]
    names = ["x"] + [f"h{k}" for k in range(depth - 1)] + ["y"]
    nodes = [helper.make_node("Conv", [names[k], f"w{k}"], [names[k + 1]], pads=[1, 1, 1, 1]) for k in range(depth)]
    return _onnx(path, nodes, [x], [y], weights)


def test_the_node_by_node_truth_keeps_only_what_is_still_read(tmp_path):
    # a DenseNet's every feature map in float64, and an ONNX Runtime arena per node, took 20 GB
    from tvm_numguard.judge.framework.onnx_truth import NodeByNode, _ort_session

    model = onnx.load(conv_chain(tmp_path / "chain.onnx"))
    truth = NodeByNode(model)
    inputs = {"x": np.random.default_rng(1).random((1, 2, 8, 8)).astype(np.float32)}
    everything = truth.values(inputs)
    kept = truth.values(inputs, keep={"y"})
    assert {"h0", "h4"} <= set(everything) and not {"h0", "h1", "h4"} & set(kept)
    np.testing.assert_array_equal(truth.outputs(inputs)[0], everything["y"])
    assert everything["y"].dtype == np.float64
    one = helper.make_model(helper.make_graph([helper.make_node("Relu", ["a"], ["b"])], "g",
                                              [helper.make_tensor_value_info("a", TensorProto.DOUBLE, [2])],
                                              [helper.make_tensor_value_info("b", TensorProto.DOUBLE, [2])]))
    assert not _ort_session(one).get_session_options().enable_cpu_mem_arena


def test_the_conditioning_spread_is_measured_only_where_something_is_at_fault_without_it():
    # the conditioning bound only excuses; on a big model each of its eight runs is the whole truth again
    import types

    from tvm_numguard.judge.import_stage.framework_watch import FrameworkWatch

    exact = np.array([1.0, 2.0, 3.0])
    measured = []

    def bound(inputs, truth, wide=None):
        measured.append(wide)
        return [np.full(3, wide)]

    def watch(wide):
        return types.SimpleNamespace(truth=lambda inputs: ([exact], "t", None), tol=Tolerance(), discontinuous=False,
                                     conditioning_bounds=lambda inputs, truth: bound(inputs, truth, wide))

    framework = [np.array([1.0, 2.5, 3.0], np.float32)]
    nearer = [np.array([1.0, 2.0, 3.0], np.float32)]
    assert not FrameworkWatch._differs(watch(1.0), {}, framework, nearer) and measured == []
    # TVM at fault without the conditioning bound: measured, and a bound that covers the error still excuses it
    assert FrameworkWatch._differs(watch(1e-3), {}, nearer, framework) and measured == [1e-3]
    assert not FrameworkWatch._differs(watch(1.0), {}, nearer, framework) and measured == [1e-3, 1.0]


def test_the_spread_is_three_root_mean_squares_of_the_movement_and_no_less_than_the_worst():
    from tvm_numguard.judge.import_stage.agreement import conditioning_bound

    truth = [np.zeros(3)]
    runs = [[np.array([1.0, 0.0, 0.0])], [np.array([-1.0, 0.0, 4.0])], [np.array([1.0, np.nan, 0.0])],
            [np.array([-1.0, 0.0, 0.0])]]
    (bound,) = conditioning_bound(truth, runs)
    # element 0: rms 1 -> 3; element 1: nothing moved (the NaN run measures nothing); element 2: rms 2 -> 6 >= 4
    np.testing.assert_allclose(bound, [3.0, 0.0, 6.0])
    assert conditioning_bound([None], runs) == [None]


def test_the_moved_truth_moves_what_the_model_stores_in_float16_not_only_its_inputs(tmp_path):
    # y = x * 0 + c in float16: moving x moves nothing; any float16 implementation rounds the product and
    # the sum, and the truth moved by their roundings moves
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])
    zero = numpy_helper.from_array(np.zeros(4, np.float16), "zero")
    c = numpy_helper.from_array(np.full(4, 3.0, np.float16), "c")
    nodes = [helper.make_node("Mul", ["x", "zero"], ["p"]), helper.make_node("Add", ["p", "c"], ["y"])]
    framework = open_framework(_onnx(tmp_path / "h.onnx", nodes, [x], [y], [zero, c]), ["x"])
    inputs = {"x": np.ones(4, np.float16)}
    (exact,) = framework.truth(inputs)
    (moved,) = framework.moved_truth(inputs, 0, 1e-3)
    assert np.all(exact == 3.0) and np.all(moved != 3.0) and np.all(np.abs(moved - 3.0) <= 3.0 * 1e-3)
    # a float32 model stores nothing narrow: only its inputs move
    x32 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y32 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    plain = open_framework(_onnx(tmp_path / "f.onnx", nodes, [x32], [y32],
                                 [numpy_helper.from_array(np.zeros(4, np.float32), "zero"),
                                  numpy_helper.from_array(np.full(4, 3.0, np.float32), "c")]), ["x"])
    (still,) = plain.moved_truth({"x": np.ones(4, np.float32)}, 0, 1e-3)
    assert np.all(still == 3.0)


def test_a_witness_where_the_framework_is_not_finite_answers_no_import_question(tmp_path):
    """relu(log(x)) on x < 0: PyTorch gives NaN, TVM's relu 0. The search counts such an input invalid
    (agreement_score 0); judged on it, the import said 'agrees' beside an import score of inf (a
    red-team trial). It is not answered there, and says why."""
    import torch

    from tvm_numguard.judge.import_stage.framework_watch import NOT_FINITE_REASON

    class ReluLog(torch.nn.Module):
        def forward(self, x):
            return torch.relu(torch.log(x))

    path = str(tmp_path / "relu_log.pt2")
    torch.export.save(torch.export.export(ReluLog(), (torch.rand(1, 4) + 0.5,)), path)
    x = np.array([[-0.5, 1.0, 2.0, 3.0]], dtype=np.float32)
    report = ng.bisect(path, ng.CompileConfig(), ng.Options(low=-1.0, high=5.0), inputs={"x": x})
    imports = report.finding.imports
    assert imports.verdict == "unanswered" and imports.reason == NOT_FINITE_REASON
    assert report.exit_code == 0 and "not answered: the framework's outputs are not finite" in report.summary()
