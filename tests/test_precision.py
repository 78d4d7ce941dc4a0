"""Verdicts that hold on float16 models, degenerate witnesses and index ranges:
precision told apart from an import defect, a flip of a discontinuous operator
benign, a tolerance that follows a value's history, conditioning, index bounds."""


import ast

import numpy as np
from tvm.script import ir as I
from tvm.script import relax as R
import pytest
import tvm
from onnx import TensorProto, helper, numpy_helper

import tvm_numguard as ng
from tvm_numguard.base.errors import RangeError
from tvm_numguard.base.flags import FLAG
from tvm_numguard.ir.model import load_model
from tvm_numguard.ir.narrow.widen import CannotWiden, keep_float32
from tvm_numguard.judge.rangecheck.indices import check_index_ranges, index_reaches, integer_note
from tvm_numguard.ir.relax_ir import output_float_history
from tvm_numguard.locate.ranges import InputRange
from tvm_numguard.base.compare import compare_output
from tvm_numguard.judge.import_stage.agreement import compare_with_framework, conditioning_scale, conditioning_bound
from tvm_numguard.judge.framework.runtimes import moved
from tvm_numguard.judge.import_stage.first_node import is_discontinuous, tvm_values
from tvm_numguard.base.tolerance import Tolerance
from clirun import assert_one_line_error, run_cli
from onnxfile import save_onnx

F16 = TensorProto.FLOAT16
ZERO = ng.CompileConfig(pipeline="zero")


def _onnx(path, nodes, inputs, outputs, initializers=(), opset=13):
    return save_onnx(path, nodes, inputs, outputs, initializers, opset)


def f16_mean(path, cast_to=None):
    """A float16 ReduceMean over 51 values (TVM accumulates in float16, ONNX Runtime in float32)."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["m" if cast_to else "y"], axes=[1], keepdims=0)]
    out_type = F16
    if cast_to is not None:
        nodes.append(helper.make_node("Cast", ["m"], ["y"], to=cast_to))
        out_type = cast_to
    return _onnx(path, nodes, [helper.make_tensor_value_info("x", F16, [4, 51])],
                 [helper.make_tensor_value_info("y", out_type, [4])])


@pytest.fixture(scope="module")
def mean_report(tmp_path_factory):
    path = f16_mean(tmp_path_factory.mktemp("f16") / "mean.onnx")
    return path, ng.bisect(path, ZERO, ng.Options(low=-1.0, high=1.0, budget="200", seed=0))


# -- precision --------------------------------------------------------------
def test_a_float16_reduction_is_precision_not_an_import_defect(mean_report):
    path, report = mean_report
    imports = report.imports
    assert imports.verdict == "precision", imports.reason
    assert report.at_fault == [] and report.exit_code == 0
    assert [e.key for e in imports.widened] == ["y"]
    assert "ReduceMean" in imports.reason and "float16" in imports.reason
    summary = report.summary()
    assert "IMPORT" not in summary.splitlines()[0]
    assert "--keep-float32 gv" in summary and "the model's 'y'" in summary


def test_the_widen_line_names_one_thing_that_both_the_command_line_and_the_api_take(mean_report):
    """Found by a new user's trial: the widen line said '--keep-float32 y' and, for the API,
    'keep_float32(mod, ['gv'])': two names for one value, and keep_float32 refuses the model's 'y'
    (it takes bindings of main). Both now name the binding; the model's name is said beside it."""
    path, report = mean_report
    lines = [line for line in report.summary().splitlines() if "--keep-float32" in line or "keep_float32(" in line]
    flag = lines[0].split("--keep-float32 ", 1)[1].split()[0].split(",")
    api = ast.literal_eval(lines[1].split("keep_float32(mod, ", 1)[1].rsplit(")", 1)[0])
    assert flag == api == ["gv"], lines
    assert tvm.compile(keep_float32(load_model(path).mod, api), "llvm") is not None  # what the API takes
    assert load_model(path).keeping_float32(flag).kept_float32 == ("gv",)  # and the flag


def test_a_binding_of_main_is_widened_whatever_the_model_names_its_values(tmp_path):
    """The line numguard prints names bindings of main: one the model also uses as a value's name (an
    ONNX tensor called 'gv', which TVM binds to 'lv') is still that binding, so the printed line
    widens what it says (the mean), not the model's 'gv' (the Abs)."""
    nodes = [helper.make_node("Abs", ["x"], ["gv"]),
             helper.make_node("ReduceMean", ["gv"], ["y"], axes=[1], keepdims=0)]
    path = _onnx(tmp_path / "gv.onnx", nodes, [helper.make_tensor_value_info("x", F16, [4, 51])],
                 [helper.make_tensor_value_info("y", F16, [4])])
    model = load_model(path)
    assert {name: p.key for name, p in model.provenance.items()} == {"lv": "gv", "gv": "y"}
    widened = model.keeping_float32(["gv"]).mod.script()
    assert "R.mean(gv_in0_f32" in widened and 'lv: R.Tensor((4, 51), dtype="float16") = R.abs(x)' in widened
    assert "R.abs(lv_in0_f32" in model.keeping_float32(["lv"]).mod.script()


def test_the_printed_precision_fix_verifies(mean_report):
    path, report = mean_report
    again = ng.bisect(load_model(path).keeping_float32(["y"]), ZERO,
                      ng.Options(low=-1.0, high=1.0, budget="60", seed=5))
    assert again.imports.verdict == "agrees" and again.exit_code == 0


def test_keep_float32_computes_the_operator_in_float32_and_keeps_its_name(tmp_path):
    mod = load_model(f16_mean(tmp_path / "m.onnx")).mod
    widened = keep_float32(mod, ["gv"])
    text = widened.script()
    assert 'R.mean(gv_in0_f32' in text and 'gv: R.Tensor((4,), dtype="float16") = R.astype(gv_f32' in text
    assert tvm.compile(widened, "llvm") is not None
    with pytest.raises(CannotWiden):
        keep_float32(mod, ["nope"])


def test_an_operator_that_chooses_its_dtype_is_not_widened(tmp_path):
    path = _onnx(tmp_path / "c.onnx", [helper.make_node("Cast", ["x"], ["y"], to=F16)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                 [helper.make_tensor_value_info("y", F16, [4])])
    with pytest.raises(CannotWiden, match="chooses its output dtype"):
        keep_float32(load_model(path).mod, ["gv"])  # the Cast's astype


# -- tolerance from a value's history ---------------------------------------
def test_a_float16_value_cast_to_float64_is_judged_at_float16s_tolerance(tmp_path):
    mod = load_model(f16_mean(tmp_path / "m64.onnx", cast_to=TensorProto.DOUBLE)).mod
    history = output_float_history(mod)
    assert history == ("float16",)
    ref = np.array([0.0172272], dtype=np.float64)
    opt = np.array([float(np.float16(0.0172272) + np.float16(1.5e-5))], dtype=np.float64)  # one float16 ulp
    assert compare_output(0, ref, opt, Tolerance()).violated  # at float64's own tolerance
    assert not compare_output(0, ref, opt, Tolerance().through(history)).violated


def test_a_user_tolerance_is_kept_and_an_integer_output_stays_exact():
    tol = Tolerance(rtol=1e-9, atol=0.0).through(["float16"])
    assert tol.for_output(0, "float32") == (1e-9, 0.0)
    assert Tolerance().through(["float16"]).for_output(0, "int64") == (0.0, 0.0)
    assert Tolerance().through(["float16"]).for_output(1, "float32") == Tolerance().for_dtype("float32")


# -- discontinuous operators ------------------------------------------------
def test_a_ceil_of_an_underflowing_product_is_a_benign_flip(tmp_path):
    path = _onnx(tmp_path / "ceil.onnx", [helper.make_node("Mul", ["x", "x"], ["xx"]),
                                          helper.make_node("Ceil", ["xx"], ["y"])],
                 [helper.make_tensor_value_info("x", F16, [8])], [helper.make_tensor_value_info("y", F16, [8])])
    report = ng.bisect(path, ZERO, ng.Options(low=0.0, high=1e-5, budget="30"))
    assert report.imports.verdict == "benign" and report.exit_code == 0
    # proven: ONNX Runtime's Ceil on TVM's input (x*x underflowed to 0 in float16) gives TVM's 0
    assert [f.key for f in report.imports.flips] == ["y"] and "Ceil" in report.imports.flips[0].node
    assert "discontinuous" in report.imports.reason


def test_discontinuous_operators():
    assert is_discontinuous("relax.ceil", np.float16) and is_discontinuous("relax.astype", np.bool_)
    assert is_discontinuous("relax.astype", np.int32) and not is_discontinuous("relax.astype", np.float32)
    assert not is_discontinuous("relax.add", np.float32)


def test_a_cast_to_bool_is_compared_as_a_bool(tmp_path):
    path = _onnx(tmp_path / "b.onnx", [helper.make_node("Mul", ["x", "x"], ["xx"]),
                                       helper.make_node("Cast", ["xx"], ["b"], to=TensorProto.BOOL),
                                       helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = load_model(path)
    values = tvm_values(model, {"x": np.array([1e-3, 0, 2, 0], np.float32)}, "llvm")
    casts = [v for v in values.values() if v.dtype == np.bool_]
    assert casts and casts[0].tolist() == [True, False, True, False]


# -- conditioning -----------------------------------------------------------
def layer_norm_first(path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(16, 16)).astype(np.float32), "W"),
             numpy_helper.from_array(np.ones(16, np.float32), "g"),
             numpy_helper.from_array(np.zeros(16, np.float32), "b")]
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["n", "W"], ["y"])]
    return _onnx(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 16])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 16])], inits, opset=17)


def test_a_layer_norm_of_constant_rows_is_no_import_difference(tmp_path):
    path = layer_norm_first(tmp_path / "ln.onnx")
    report = ng.bisect(path, ng.CompileConfig(pipeline="default"), ng.Options(low=-1.0, high=1.0, budget="60"))
    assert "import" not in report.at_fault and report.imports.verdict in ("agrees", "benign")
    # the search's witness is degenerate (constant rows): the conditioning bound excuses it, TVM's error stays real
    constant = {"x": np.full((2, 8, 16), -0.98, np.float32)}
    from tvm_numguard.judge.framework import open_framework
    framework = open_framework(path, ["x"])
    truth = framework.truth(constant)
    moved = [framework.moved_truth(constant, s, conditioning_scale('float32')) for s in range(4)]
    bound = conditioning_bound(truth, moved)
    assert bound[0].max() > 1e-4  # rounding-sized input changes move a constant row's LayerNorm by that much


def test_the_spread_excuses_only_within_it():
    framework = np.zeros(4, np.float32)
    truth = np.zeros(4)
    tvm_out = np.array([1e-4, 0, 0, 0], np.float32)
    assert compare_with_framework(0, framework, tvm_out, Tolerance(), truth).tvm_at_fault
    assert not compare_with_framework(0, framework, tvm_out, Tolerance(), truth, np.full(4, 2e-4)).tvm_at_fault
    assert compare_with_framework(0, framework, tvm_out, Tolerance(), truth, np.full(4, 5e-5)).tvm_at_fault


def test_moved_moves_floats_only_by_rounding_sizes():
    rng = np.random.default_rng(0)
    assert np.array_equal(moved(np.arange(3), rng, 1.0), np.arange(3))
    values = moved(np.ones(1000, np.float32), rng, conditioning_scale("float32"))
    assert values.dtype == np.float64 and 0 < np.max(np.abs(values - 1.0)) <= 32 * np.finfo(np.float32).eps / 2


# -- index ranges -----------------------------------------------------------
def token_model(path):
    table = numpy_helper.from_array(np.random.default_rng(0).normal(size=(1000, 8)).astype(np.float32), "E")
    return _onnx(path, [helper.make_node("Gather", ["E", "ids"], ["e"], axis=0),
                        helper.make_node("Relu", ["e"], ["y"])],
                 [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8])], [table], opset=17)


def test_an_index_range_past_the_vocabulary_is_a_usage_error(tmp_path, capsys):
    path = token_model(tmp_path / "tokens.onnx")
    model = load_model(path)
    (reach,) = index_reaches(model, {"ids": InputRange(-1000, 999)})
    # ONNX's Gather takes negative indices: TVM's frontend wraps them, and the reach follows the wrap
    assert (reach.inputs, reach.size, reach.low, reach.high) == (("ids",), 1000, 0, 999) and not reach.leaves
    check_index_ranges(model, {"ids": InputRange(0, 999)})
    with pytest.raises(RangeError, match=r"indexes ONNX Gather .* reach \[0, 5000\].* are \[-1000, 999\]"):
        check_index_ranges(model, {"ids": InputRange(0, 5000)})
    for command in (["bisect", "--jobs", "0"], ["check"]):
        code, _, err = run_cli(capsys, *command[:1], path, *command[1:], "--low", "0", "--high", "5000")
        assert_one_line_error(code, err, "stay inside are [-1000, 999]", "--range ids=0:999", "ONNX Gather")


def offset_token_model(path):
    """Gather(table[10], idx - 100): the ids a user gives are 100 to 109."""
    table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    offset = numpy_helper.from_array(np.array(100, np.int64), "offset")
    nodes = [helper.make_node("Sub", ["idx", "offset"], ["i"]), helper.make_node("Gather", ["table", "i"], ["y"])]
    return _onnx(path, nodes, [helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], [table, offset], opset=17)


def test_index_ranges_follow_the_integer_arithmetic_to_the_table(tmp_path, capsys):
    path = offset_token_model(tmp_path / "offset.onnx")
    model = load_model(path)
    # idx - 100 on [100, 109] is [0, 9]: inside; an identity reading would refuse it and ask for 0:9
    check_index_ranges(model, {"idx": InputRange(100, 109)})
    code, out, err = run_cli(capsys, "bisect", path, "--range", "idx=100:109", "--jobs", "0", "--budget", "10")
    assert code == 0, err
    with pytest.raises(RangeError, match=r"reach \[-90, 100\].*stay inside are \[90, 109\]: "
                                         r"give ranges=\{'idx': \(90, 109\)\}$") as refused:
        check_index_ranges(model, {"idx": InputRange(0, 200)})
    assert refused.value.said_with(FLAG).endswith("give --range idx=90:109")  # on the command line


def test_a_range_the_framework_runs_is_never_refused(tmp_path):
    path = offset_token_model(tmp_path / "offset.onnx")
    model = load_model(path)
    asked = []

    def runs(name, end):
        asked.append((name, end))
        return True

    check_index_ranges(model, {"idx": InputRange(0, 200)}, runs)  # the framework runs both ends: not refused
    assert asked == [("idx", "low"), ("idx", "high")]
    from tvm_numguard.judge.framework.probe import EndsProbe
    probe = EndsProbe(model, {"idx": InputRange(0, 200)})
    assert probe("idx", "high") is False  # ONNX Runtime refuses index 100 of a 10-row table


def test_an_integer_range_names_its_integers(tmp_path):
    model = load_model(token_model(tmp_path / "t.onnx"))
    (line,) = integer_note(model.inputs, {"ids": InputRange(-0.5, 3.5)})
    assert "integers 0 to 3" in line
    assert integer_note(model.inputs, {"ids": InputRange(0, 3)}) == []


# -- a valid model TVM's import cannot run at a shape the model allows ---------
def test_a_shape_the_model_allows_and_tvm_cannot_bind_is_an_import_failure(tmp_path, capsys):
    # ONNX's Expand broadcasts both ways; TVM's import makes broadcast_to, one way: z's b=1 against x's 3
    path = _onnx(tmp_path / "expand.onnx", [helper.make_node("Shape", ["z"], ["s"]),
                                            helper.make_node("Expand", ["x", "s"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1]),
                  helper.make_tensor_value_info("z", TensorProto.FLOAT, ["a", "b", "c"])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    code, _, err = run_cli(capsys, "bisect", path, "--shape", "z=3,1,3", "--low", "0", "--high", "1", "--jobs", "0")
    assert code == 1, err
    assert "IMPORT" in err and "a=3, b=1, c=3" in err and "ONNX Expand node" in err and "Traceback" not in err
    repro = err.split("TVM alone shows it:\n", 1)[1]
    with pytest.raises(Exception, match="broadcast_to expects"):
        exec(compile(repro, "repro", "exec"), {})
    code, _, _ = run_cli(capsys, "bisect", path, "--shape", "z=3,3,3", "--low", "0", "--high", "1", "--jobs", "0")
    assert code == 0


# -- printed commands run as printed ----------------------------------------
def test_a_dynamic_pt2s_printed_lines_carry_its_shapes_and_run(tmp_path, capsys, script_not_on_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the replay line, as printed, keeps its witness
    import shlex

    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            return torch.relu(self.fc(x))

    batch = torch.export.Dim("batch", min=1, max=64)
    path = str(tmp_path / "dyn.pt2")
    torch.export.save(torch.export.export(Block(), (torch.randn(4, 8),), dynamic_shapes=({0: batch},)), path)
    code, out, _ = run_cli(capsys, "bisect", path, "--shape", "x=3,8", "--low", "0", "--high", "1", "--jobs", "0",
                           "--pipeline", "ToMixedPrecision,default", "--budget", "30",
                           "--save-inputs", str(tmp_path / "w.npz"))
    assert code == 1, out
    lines = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()
             if line.strip().startswith(("verify ", "replay "))}
    for name in ("verify", "replay"):
        words = shlex.split(lines[name].split("   (expect")[0])
        assert "--shape" in words and "x=3,8" in words, words
        assert words[0] == script_not_on_path  # the program as invoked, not a bare numguard
        again, printed, err = run_cli(capsys, *words[1:], "--jobs", "0")
        assert again in (0, 1), err  # runs as printed (here in-process; test_trace runs them from a shell)


def test_a_tuple_output_takes_each_fields_own_history():
    from test_input_kinds import AllKinds

    # ((y, z), d * 2, (w, (k, exp(s)))): y and z are float32 arithmetic on a float16 input cast up (storage,
    # exact), w a bfloat16 input cast up and nothing else (float32, its own dtype), k an integer
    assert output_float_history(AllKinds) == ("float32", "float32", "float64", "float32", None, "float32")


@I.ir_module
class Arithmetic:
    @R.function
    def main(h: R.Tensor((4,), "float16"), x: R.Tensor((4,), "float32")):
        with R.dataflow():
            narrow_sum = R.astype(R.add(h, h), "float32")  # float16 arithmetic, cast up
            moved = R.reshape(R.permute_dims(R.reshape(narrow_sum, (2, 2))), (4,))  # moves values, rounds none
            bias = R.add(x, R.astype(R.const(np.array([0.5, 1.0, 1.5, 2.0], "float16")), "float32"))
            rounded = R.astype(R.astype(x, "float16"), "float32")  # a cast down rounds in float16
            out = (R.add(moved, x), bias, rounded)
            R.output(out)
        return out


def test_only_arithmetic_in_a_narrow_float_loosens_an_outputs_tolerance():
    # a float16 sum cast up keeps float16's precision through the values' moves; a float16
    # constant (storage, exact in float32) added in float32 is float32 arithmetic; a cast down rounds
    assert output_float_history(Arithmetic) == ("float16", "float32", "float16")


def test_a_float16_matmul_is_widened(tmp_path):
    weight = numpy_helper.from_array(np.full((8, 4), 0.5, np.float16), "W")
    path = _onnx(tmp_path / "mm.onnx", [helper.make_node("MatMul", ["x", "W"], ["y"])],
                 [helper.make_tensor_value_info("x", F16, [2, 8])], [helper.make_tensor_value_info("y", F16, [2, 4])],
                 [weight])
    text = keep_float32(load_model(path).mod, ["gv"]).script()
    assert "R.matmul(gv_in0_f32" in text  # its out_dtype is unset ("None"): no dtype of its own to keep


def test_a_float16_program_the_torch_frontend_cannot_import_is_an_import_failure(tmp_path, capsys):
    import torch

    # torch.export made it, so it is valid: TVM 0.27's importer types a float16 Linear's product float32
    path = str(tmp_path / "half.pt2")
    torch.export.save(torch.export.export(torch.nn.Linear(8, 8).half().eval(), (torch.randn(2, 8).half(),)), path)
    code, _, err = run_cli(capsys, "bisect", path, "--low", "-1", "--high", "1", "--pipeline", "zero")
    assert code == 1, err
    assert "IMPORT: TVM's torch frontend cannot import" in err and "from_exported_program" in err
    assert "Traceback" not in err


def test_a_type_tvm_has_no_dtype_for_is_a_limit_not_an_import_failure(tmp_path, capsys):
    # a string input (StringNormalizer): TVM documents no string tensors; exit 2, as an unsupported operator
    path = _onnx(tmp_path / "s.onnx", [helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")],
                 [helper.make_tensor_value_info("x", TensorProto.STRING, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.STRING, [4])], opset=17)
    code, _, err = run_cli(capsys, "bisect", path, "--low", "0", "--high", "1")
    assert_one_line_error(code, err, "cannot import this model")


def test_precision_inside_a_converters_expansion_is_precision(tmp_path):
    # a float16 Gemm becomes matmul + add in TVM: the matmul is made inside the Gemm's conversion (no name
    # of its own in the model) and is declared float16 as the Gemm's output is; keeping the chain in
    # float32 agrees (it was left out, and the Gemm called TVM's fault)
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.ones(16, np.float16), "g"),
             numpy_helper.from_array(np.zeros(16, np.float16), "b"),
             numpy_helper.from_array(rng.normal(0, 0.5, (16, 16)).astype(np.float16), "W"),
             numpy_helper.from_array(rng.normal(0, 0.1, (16,)).astype(np.float16), "c")]
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
             helper.make_node("Gemm", ["n", "W", "c"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["y"])]
    path = _onnx(tmp_path / "ln_gemm.onnx", nodes, [helper.make_tensor_value_info("x", F16, [4, 16])],
                 [helper.make_tensor_value_info("y", F16, [4, 16])], inits, opset=17)
    report = ng.bisect(path, ZERO, ng.Options(low=-1.0, high=1.0, budget="20", seed=0))
    assert "import" not in report.at_fault, report.imports.reason



def test_the_precision_stages_rounds_make_each_kernels_machine_code_once(tmp_path, monkeypatch):
    """Issue 52.5: the precision stage rebuilt TVM's whole import for every trial and round (a float16
    GPT2 block waited 130 s there, past the judge table's limit; 67 s now). Its builds share one
    KernelCache: the widened build's kernels are compiled into it, and a round's capture build of the
    same module (Located.of) links them all, compiling none."""
    from tvm_numguard.build.kernel_cache import KernelCache
    from tvm_numguard.judge.import_stage import precision
    from tvm_numguard.judge.import_stage.first_node import Located

    caches = []

    class Counted(KernelCache):
        def __init__(self):
            super().__init__()
            caches.append(self)

    monkeypatch.setattr(precision, "KernelCache", Counted)
    path = f16_mean(tmp_path / "mean.onnx")
    report = ng.bisect(path, ZERO, ng.Options(low=-1.0, high=1.0, budget="50", seed=0))
    assert report.imports.verdict == "precision" and [c.compiled > 0 for c in caches] == [True]

    model, witness = load_model(path), {"x": np.linspace(-1, 1, 204, dtype=np.float16).reshape(4, 51)}
    cache = KernelCache()
    precision.widened_build(model, ["gv"], "llvm", cache)
    compiled = cache.compiled
    located = Located(model, None, witness, "llvm", expected={"y": np.zeros(4, np.float16)})
    again = located.of(keep_float32(model.mod, ["gv"]), cache)
    assert again.error is None and cache.compiled == compiled and cache.reused >= compiled > 0
