"""The import judge measured the other way: every rule that excuses a
difference, with a real defect planted behind it (a converter of TVM's own
frontends patched in the test, or a real TVM 0.27 defect), still caught.

Each test names the excuse it attacks; the rule's own benign case is tested
beside it where it lives (test_precision.py, test_framework.py)."""

import contextlib
import os

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from tvm import relax
from tvm.relax.frontend.onnx import onnx_frontend
from tvm.relax.frontend.torch import base_fx_graph_translator

import tvm_numguard as ng
from tvm_numguard.ir.pipeline import CompileConfig

ZERO = CompileConfig(pipeline="zero")
F16 = TensorProto.FLOAT16


def _onnx(path, nodes, inputs, outputs, initializers=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return str(path)


@contextlib.contextmanager
def converter(cls, name, impl):
    """TVM's converter method ``cls.name`` replaced by ``impl`` inside the block."""
    old = cls.__dict__[name]
    setattr(cls, name, impl)
    try:
        yield
    finally:
        setattr(cls, name, old)


def bisect(path, low, high, budget="20", **ranges):
    return ng.bisect(path, ZERO, ng.Options(low=low, high=high, ranges=ranges, budget=budget))


# -- 1. a truth that does not share TVM's import ------------------------------
def test_a_converter_defect_beside_an_operator_without_a_float64_kernel_is_an_import(tmp_path):
    # TVM 0.27 inserts at position -1 one place too far back (docs/findings.md); an unrelated
    # MeanVarianceNormalization has no float64 kernel in ONNX Runtime, so the whole float64 copy is
    # refused. TVM's own float64 build, as truth, shares the defect and called it benign
    vector = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "b", "t")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("SequenceInsert", ["s", "t", "minus_one"], ["s2"]),
             helper.make_node("SequenceAt", ["s2", "one"], ["y"], name="take"),
             helper.make_node("MeanVarianceNormalization", ["x"], ["n"], name="mvn")]
    constants = [numpy_helper.from_array(np.array(-1, np.int64), "minus_one"),
                 numpy_helper.from_array(np.array(1, np.int64), "one")]
    path = _onnx(tmp_path / "insert.onnx", nodes, vector + [x],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
                  helper.make_tensor_value_info("n", TensorProto.FLOAT, [1, 2, 4, 4])], constants, opset=13)
    rng = np.random.default_rng(0)
    witness = {"a": np.full(2, 1.0, np.float32), "b": np.full(2, 2.0, np.float32), "t": np.full(2, 3.0, np.float32),
               "x": rng.uniform(0, 1, (1, 2, 4, 4)).astype(np.float32)}  # a well-conditioned MVN: no difference
    report = ng.bisect(path, ZERO, ng.Options(low=0.0, high=1.0), inputs=witness)
    assert report.imports.verdict == "import" and report.exit_code == 1, report.imports.reason
    assert "TVM" not in report.imports.truth and "SequenceInsert" in report.imports.truth
    first, norm = report.imports.outputs
    assert first.tvm_at_fault and first.worst["tvm"] == 2.0 and first.worst["truth"] == 3.0
    assert not norm.differs


class MixedDtypes(torch.nn.Module):
    """A float32 block with a float16 side output: ``.double()`` of the program keeps the float16."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x)), (x.half() * 3).float()


def sigmoid_gelu(self, node):
    """The planted defect: GELU as x * sigmoid(1.702 x), an approximation off by up to 0.02."""
    x = self.env[node.args[0]]
    scaled = relax.op.multiply(x, relax.const(1.702, "float32"))
    return self.block_builder.emit(relax.op.multiply(x, relax.op.sigmoid(scaled)))


def test_a_torch_program_mixing_dtypes_is_judged_by_its_own_graph_in_float64(tmp_path):
    torch.manual_seed(0)
    path = str(tmp_path / "mixed.pt2")
    torch.export.save(torch.export.export(MixedDtypes(), (torch.randn(4, 8),)), path)
    with converter(base_fx_graph_translator.BaseFXGraphImporter, "_gelu", sigmoid_gelu):
        report = bisect(path, -3.0, 3.0)
    assert report.imports.verdict == "import" and report.exit_code == 1, report.imports.reason
    assert "node by node in float64" in report.imports.truth
    assert "gelu" in report.imports.origin.key


# -- 3. per-element bounds ----------------------------------------------------
def two_scales(path):
    """Boxes in the hundreds beside scores in the thousandths, in one output (Concat)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(4, 4)).astype(np.float32), "W"),
             numpy_helper.from_array(np.array(400.0, np.float32), "pixels"),
             numpy_helper.from_array(np.array(2e-3, np.float32), "small")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Mul", ["h", "pixels"], ["boxes"]),
             helper.make_node("Sigmoid", ["h"], ["p"], name="score"),
             helper.make_node("Mul", ["p", "small"], ["scores"]),
             helper.make_node("Concat", ["boxes", "scores"], ["y"], axis=1)]
    return _onnx(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])], inits)


@classmethod
def fast_sigmoid(cls, bb, inputs, attr, params):
    """The planted defect: sigmoid(x) as 0.5 + x/4, clipped: off by up to 0.12 (its tangent at 0)."""
    x = inputs[0]
    return relax.op.clip(relax.op.add(relax.op.multiply(x, relax.const(0.25, "float32")),
                                      relax.const(0.5, "float32")), 0.0, 1.0)


def test_a_wrong_value_in_the_small_part_of_a_two_scale_output_is_caught(tmp_path):
    # one bound for the whole output (32 x the framework's worst error, the widest conditioning bound) is set by
    # the boxes' rounding and excused a 20-110% error in the scores
    path = two_scales(tmp_path / "scales.onnx")
    with converter(onnx_frontend.Sigmoid, "_impl_v13", fast_sigmoid):
        report = bisect(path, -1.0, 1.0)
    assert report.imports.verdict == "import" and report.exit_code == 1, report.imports.reason
    assert report.imports.origin.key == "p"
    (output,) = report.imports.outputs
    assert output.worst["index"][1] >= 4  # the element shown is a score


# -- 4. a flip excused only with proof ----------------------------------------
def threshold(path):
    nodes = [helper.make_node("Mul", ["x", "three"], ["t"]),
             helper.make_node("Ceil", ["t"], ["c"], name="steps"),
             helper.make_node("Add", ["x", "one"], ["y"])]
    inits = [numpy_helper.from_array(np.array(3.0, np.float32), "three"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    return _onnx(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
                 [helper.make_tensor_value_info("c", TensorProto.FLOAT, [8]),
                  helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])], inits)


@classmethod
def ceil_as_floor(cls, bb, inputs, attr, params):
    """The planted defect: Ceil converted as floor (the wrong rounding direction)."""
    return relax.op.floor(inputs[0])


def test_a_wrong_discontinuous_converter_on_identical_inputs_is_no_flip(tmp_path):
    # the first differing node is discontinuous, but its inputs are identical in TVM and ONNX Runtime:
    # nothing could flip, ONNX Runtime's Ceil on TVM's inputs does not give TVM's result
    path = threshold(tmp_path / "ceil.onnx")
    with converter(onnx_frontend.Ceil, "_impl_v1", ceil_as_floor):
        report = bisect(path, -2.0, 2.0)
    assert report.imports.verdict == "import" and report.exit_code == 1, report.imports.reason
    assert report.imports.origin.key == "c" and not report.imports.flips
    assert "nothing could flip" in report.imports.origin_note or "itself differs" in report.imports.origin_note


# -- 5. arithmetic, not storage -----------------------------------------------
def test_a_float16_bias_cast_up_keeps_float32s_tolerance():
    # patches/fold_fp16 rounds folded float32 constants through float16: a real pass defect. A bias stored
    # as float16 (exact in float32) and cast up must not loosen the output's tolerance to float16's
    from patches import fold_fp16
    from tvm_numguard.ir.model import from_irmodule

    rng = np.random.default_rng(11)
    w, s = rng.normal(0, 0.3, (16, 32)).astype("float32"), rng.uniform(0.5, 2.0, (1, 32)).astype("float32")
    bias = rng.normal(0, 0.1, (32,)).astype("float16")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            weight = bb.emit(relax.op.multiply(relax.const(w), relax.const(s)))
            y = bb.emit_output(relax.op.add(relax.op.matmul(x, weight),
                                            relax.op.astype(relax.const(bias), "float32")))
        bb.emit_func_output(y)
    model = from_irmodule(bb.get(), "<fp16 bias>", "fp16-bias")
    config = CompileConfig(pipeline="patches.fold_fp16:make_pass,zero")
    report = ng.bisect(model, config, ng.Options(low=-1.0, high=1.0, budget="10"))
    assert report.data["metrics"][0]["rtol"] == 1e-5
    assert report.violation and report.culprit == fold_fp16.PASS_NAME + "#0" and report.exit_code == 1


# -- 5b. the import's tolerance follows the model's dtypes, not TVM's import ----
@classmethod
def float16_softmax(cls, bb, inputs, attr, params):
    """The planted defect: a float32 Softmax computed in float16 (a dtype narrowed by the converter)."""
    x = inputs[0]
    narrow = relax.op.nn.softmax(relax.op.astype(x, "float16"), axis=attr.get("axis", -1))
    return relax.op.astype(narrow, x.ty.dtype)


def softmax_model(path):
    nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=-1, name="probs")]
    return _onnx(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])])


def test_a_converter_that_narrows_a_float32_operator_is_judged_at_float32s_tolerance(tmp_path):
    # the tolerance read off TVM's import followed the converter's own float16 and hid it
    path = softmax_model(tmp_path / "softmax.onnx")
    with converter(onnx_frontend.Softmax, "_impl_v13", float16_softmax):
        report = bisect(path, -0.5, 0.5)  # probabilities near 1/32: float16's rounding is within its tolerance
    assert report.imports.verdict == "import" and report.exit_code == 1, report.imports.reason
    assert report.imports.origin.key == "y"


# -- 8. precision bounded to the differing value's own chain -------------------
def mean_and_softmax(path):
    """A float16 model: a ReduceMean (precision: ONNX Runtime accumulates in float32, TVM in float16:
    60 then fifty 0.01s sums to 60 in float16) first; on another branch a float16 input cast up and a
    float32 Softmax (of values offset per position, so that no input makes it uniform)."""
    offsets = numpy_helper.from_array(np.linspace(-2, 2, 32, dtype=np.float32), "offsets")
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=0, name="mean"),
             helper.make_node("Cast", ["z"], ["z32"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["z32", "offsets"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="probs")]
    return _onnx(path, nodes, [helper.make_tensor_value_info("x", F16, [2, 51]),
                               helper.make_tensor_value_info("z", F16, [4, 32])],
                 [helper.make_tensor_value_info("m", F16, [2]), helper.make_tensor_value_info("p", TensorProto.FLOAT,
                                                                                              [4, 32])],
                 [offsets], opset=17)


def test_precision_never_widens_past_the_differing_values_own_chain(tmp_path):
    # the mean differs first, and keeping it in float32 is not enough: widening every float16 operator
    # then widened the converter's own float16 inside the float32 Softmax, and called the defect precision
    path = mean_and_softmax(tmp_path / "mean_softmax.onnx")
    row = np.r_[60.0, np.full(50, 0.01)].astype(np.float16)
    witness = {"x": np.stack([row, row[::-1]]),
               "z": np.random.default_rng(0).uniform(-4, 4, (4, 32)).astype(np.float16)}
    with converter(onnx_frontend.Softmax, "_impl_v13", float16_softmax):
        report = ng.bisect(path, ZERO, ng.Options(low=-4.0, high=64.0), inputs=witness)
    assert report.imports.verdict == "import" and report.exit_code == 1, report.imports.reason
    mean, probs = report.imports.outputs
    assert mean.differs and probs.tvm_at_fault  # the mean differs first (precision), the softmax by the defect
    assert report.imports.origin.key == "p"


def test_a_float16_model_with_two_precision_differences_is_precision(tmp_path):
    # the other way: two operators ONNX Runtime computes wider (a mean, then a softmax of it), each
    # explained by keeping its own chain in float32
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1, name="mean"),
             helper.make_node("Sub", ["x", "m"], ["c"]),
             helper.make_node("Softmax", ["c"], ["p"], axis=-1, name="probs")]
    path = _onnx(tmp_path / "two.onnx", nodes, [helper.make_tensor_value_info("x", F16, [2, 51])],
                 [helper.make_tensor_value_info("p", F16, [2, 51])], opset=17)
    report = bisect(path, -3.0, 3.0, budget="30")
    assert "import" not in report.at_fault and report.imports.verdict in ("agrees", "benign", "precision")


# -- naming the planted node ------------------------------------------------
def test_a_defect_in_an_operator_with_a_tuple_result_names_that_operator(tmp_path):
    # batch_norm's kernel returns (output, mean, variance): its output is an item of that tuple, which
    # the capture left without a value, so the Mul after it was named instead
    from patches.imports import onnx_batchnorm_eps

    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, (3,)).astype(np.float32), "s"),
             numpy_helper.from_array(rng.uniform(-0.1, 0.1, (3,)).astype(np.float32), "b"),
             numpy_helper.from_array(rng.uniform(-0.1, 0.1, (3,)).astype(np.float32), "m"),
             numpy_helper.from_array(rng.uniform(1e-3, 4e-3, (3,)).astype(np.float32), "v"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["normed"], epsilon=1e-2),
             helper.make_node("Mul", ["normed", "two"], ["y"])]
    path = _onnx(tmp_path / "bn.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 4])], inits, opset=17)
    with onnx_batchnorm_eps.planted():
        report = bisect(path, -1.0, 1.0, budget="10")
    assert report.imports.verdict == "import" and report.imports.origin.key == "normed"


# -- 7. one verdict, stated once --------------------------------------------------
def test_a_build_that_is_not_deterministic_is_one_finding_and_nothing_else(tmp_path, monkeypatch):
    # the builds differ on the witness, and the reference gives other outputs when run again: no pass is
    # judged, no culprit is named, no fix printed; the headline says it once and the report validates
    from tvm_numguard.build import runs
    from tvm_numguard.judge import determinism

    monkeypatch.setattr(runs.Runs, "nondeterministic_builds", lambda self, inputs: ("reference",))
    monkeypatch.setattr(determinism, "tvm_values", _values_that_change())
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "mlp", "mlp.onnx")
    report = ng.bisect(path, CompileConfig(pipeline="ToMixedPrecision,default"),
                       ng.Options(low=0.0, high=1.0, budget="10"))
    assert report.verdict == "unjudged" and report.at_fault == ["determinism"] and report.exit_code == 1
    assert report.data["bisection"] is None and report.data["nondeterminism"]["builds"] == ["reference"]
    summary = report.summary()
    head, rest = summary.splitlines()[0], "\n".join(summary.splitlines()[1:])
    assert head.startswith("numguard bisect: NONDETERMINISTIC: the reference build gives other outputs")
    assert "culprit" not in summary and "  fix " not in summary and "safe one" not in summary
    assert "VIOLATION" not in summary and "(and a pass" not in summary
    assert "determinism the reference build gives other outputs on the same inputs; first at" in rest


def _values_that_change():
    """tvm_values whose second run gives another value for one binding (a read out of bounds)."""
    calls = []

    def values(model, witness, target):
        calls.append(1)
        names = [b.var.name for b in model.mod["main"].body.blocks[0].bindings]
        return {name: np.full(3, float(len(calls) if name == names[1] else 0), np.float32) for name in names}

    return values


@pytest.mark.slow
def test_an_lstm_whose_import_reads_out_of_bounds_is_an_import_and_not_a_pass(tmp_path):
    # TVM 0.27 turns x[:, -1] into take(x, -1, mode="fast") (findings: torch select): the builds read garbage,
    # another each run. One verdict: the import at 'select', no pass judged (it was "IMPORT ... (and a pass:
    # see the culprit)" beside "culprit none blamed", and two opposite fix blocks)
    class LastStep(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.fc = torch.nn.LSTM(8, 16, batch_first=True), torch.nn.Linear(16, 4)

        def forward(self, x):
            h, _ = self.lstm(x)
            return self.fc(h[:, -1])

    torch.manual_seed(0)
    path = str(tmp_path / "lstm.pt2")
    torch.export.save(torch.export.export(LastStep().eval(), (torch.randn(2, 5, 8),)), path)
    report = ng.bisect(path, CompileConfig(pipeline="ToMixedPrecision,default"),
                       ng.Options(low=-1.0, high=1.0, budget="20"))
    assert report.imports.verdict == "import" and report.imports.origin.key == "select"
    if report.finding.pass_note is None:  # seen once in 7 CI runs, under load: both runs read the same bytes
        pytest.skip("the out-of-bounds read gave the same garbage in both runs of each build: nothing shows the "
                    "builds nondeterministic, and the pass question is judged as on any model")
    assert report.verdict in ("unjudged", "clean") and "pass" not in report.at_fault
    summary = report.summary()
    assert "(and a pass" not in summary and "culprit" not in summary and "safe one" not in summary


def test_a_value_grafted_into_the_frameworks_run_takes_its_own_type(tmp_path):
    # what follows a flip is judged with TVM's value of the flipping node grafted into ONNX Runtime's run:
    # the grafted tensor becomes an input of that run, which ONNX Runtime refuses untyped ("does not have
    # type information"), and the flip of a float16 model was blamed on TVM
    from tvm_numguard.judge.framework import open_framework

    two = numpy_helper.from_array(np.array(2.0, np.float16), "two")
    nodes = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Mul", ["e", "two"], ["m"]),
             helper.make_node("Floor", ["m"], ["f"], name="steps"), helper.make_node("Add", ["f", "e"], ["y"])]
    path = _onnx(tmp_path / "floor.onnx", nodes, [helper.make_tensor_value_info("x", F16, [4])],
                 [helper.make_tensor_value_info("y", F16, [4])], [two], opset=17)
    framework = open_framework(path, ["x"])
    inputs = {"x": np.array([0.4053, 0.916, 1.504, 0.1], np.float16)}
    floors = np.array([3.0, 5.0, 9.0, 2.0], np.float16)  # TVM's: exp(x) * 2 rounded to float16 first
    values = framework.values(inputs, grafts={"f": floors})
    assert "f" not in values and values["y"].tolist() == (floors + values["e"]).tolist()
    (y,) = framework.run(inputs, grafts={"f": floors})
    assert y.tolist() == values["y"].tolist()


def test_a_defect_in_an_operator_dispatch_makes_a_kernel_names_that_operator(tmp_path):
    # cumsum has no legalization: DispatchSortScan makes its kernel. Values captured from a module only
    # legalized had no binding for it, so the Mul after it was named
    from patches.imports import onnx_cumsum_exclusive

    axis = numpy_helper.from_array(np.array(1, np.int64), "axis")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["sums"], exclusive=1),
             helper.make_node("Mul", ["sums", "two"], ["y"])]
    path = _onnx(tmp_path / "cumsum.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [axis, two], opset=17)
    with onnx_cumsum_exclusive.planted():
        report = bisect(path, -1.0, 1.0, budget="10")
    assert report.imports.verdict == "import" and report.imports.origin.key == "sums"
