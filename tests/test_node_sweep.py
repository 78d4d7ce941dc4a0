"""benchmarks/node_sweep.py: TVM's ONNX import over the onnx wheel's operator
tests. A few cases through the real sweep (forked children), and its
categories for a child that crashes or hangs."""

import os
import signal
import time

import numpy as np
import pytest

from benchmarks import node_sweep


def test_cases_that_agree_and_one_that_differs_are_told_apart():
    cases = node_sweep.collect(r"^test_(abs|shape|isinf_positive|cast_FLOAT_to_DOUBLE)$")
    rows = {r["case"]: r for r in node_sweep.sweep(cases, jobs=2, timeout=120)}
    assert rows["test_abs"]["outcome"] == "agree"
    # a Shape output is one int64 tensor, not a tuple of ints (TVM's VM returns a Shape object)
    assert rows["test_shape"]["outcome"] == "agree", rows["test_shape"]
    # its generator stores the data sets as TensorProto, not arrays
    assert rows["test_cast_FLOAT_to_DOUBLE"]["outcome"] == "agree", rows["test_cast_FLOAT_to_DOUBLE"]
    assert rows["test_isinf_positive"]["outcome"] == "differ"  # TVM ignores detect_negative=0
    assert rows["test_isinf_positive"]["op"] == "IsInf"


def test_an_unsupported_operator_is_counted_as_op_not_implemented():
    rows = node_sweep.sweep(node_sweep.collect(r"^test_adagrad$"), jobs=1, timeout=120)
    assert [r["outcome"] for r in rows] == ["OpNotImplemented"]
    assert "Adagrad" in rows[0]["detail"]


def test_a_child_that_crashes_or_hangs_is_a_row_of_its_own(monkeypatch):
    def crash(case, report_stage=lambda stage: None):
        report_stage("build")
        if case.name == "test_abs":
            os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(60)

    monkeypatch.setattr(node_sweep, "run_case", crash)  # the forked children run it
    rows = {r["case"]: r for r in node_sweep.sweep(node_sweep.collect(r"^test_(abs|acos)$"), jobs=2, timeout=3)}
    assert rows["test_abs"]["outcome"] == "crash" and rows["test_abs"]["detail"] == "signal 11 during build"
    assert rows["test_acos"]["outcome"] == "timeout" and "during build" in rows["test_acos"]["detail"]


@pytest.mark.parametrize("computed, differs", [
    ([np.float32([1.0, 2.0])], False),
    ([np.float32([1.0, 2.0 + 1e-6])], False),  # float32 rounding
    ([np.float32([1.0, 2.1])], True),
    ([np.float32([1.0])], True),  # another shape
    ([np.float32([1.0, 2.0]), np.float32([0.0])], True),  # another number of outputs
])
def test_the_judgement(computed, differs):
    assert node_sweep.judge_case([np.float32([1.0, 2.0])], computed, ("float32",))["differs"] is differs


def test_an_element_with_no_finite_expected_value_is_unjudged_and_excuses_no_other():
    expected = [np.float32([np.inf, np.nan, 1.0, 2.0])]
    # TVM differs only where ONNX expects NaN: nothing can judge that element
    judged = node_sweep.judge_case(expected, [np.float32([np.inf, 5.0, 1.0, 2.0])], ("float32",))
    assert (judged["differs"], judged["unjudged"]) == (False, 1)
    # where ONNX expects inf (the framework and the truth agree on it), a finite value is TVM's fault
    judged = node_sweep.judge_case(expected, [np.float32([5.0, np.nan, 1.0, 2.0])], ("float32",))
    assert (judged["differs"], judged["unjudged"]) == (True, 0)
    # a wrong finite element beside them is TVM's fault, not excused by the output's inf and NaN
    judged = node_sweep.judge_case(expected, [np.float32([np.inf, np.nan, 1.0, -15.0])], ("float32",))
    assert (judged["differs"], judged["unjudged"]) == (True, 0)
    assert judged["worst"]["index"] == [3]
    # the same non-finite values are no difference
    assert node_sweep.judge_case(expected, [np.float32([np.inf, np.nan, 1.0, 2.0])], ("float32",))["unjudged"] == 0


def _float16_inside_model():
    """y = float32(float16(x) + float16(x)): a float32 output the model computes in float16."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("Add", ["h", "h"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(model)
    return model


def test_the_tolerance_follows_the_floats_the_model_computes_in():
    model = _float16_inside_model()
    x = np.float32([1.0, 3.0])
    history = node_sweep.model_history(model, [x], [2 * x])
    assert history == ("float16",)  # the output is float32, its sum float16 (read off value_info)
    off_by_a_float16_rounding = [np.float32([2.0, 6.0 + 2e-3])]
    assert not node_sweep.judge_case([2 * x], off_by_a_float16_rounding, history)["differs"]
    assert node_sweep.judge_case([2 * x], off_by_a_float16_rounding, ("float32",))["differs"]


def test_a_case_that_differs_only_where_onnx_expects_no_finite_value_is_counted_unjudged(capsys):
    # Cast without saturation: ONNX expects NaN for 1e6 and inf in float8_e4m3fn (it has no inf), TVM's CPU
    # cast gives finite values
    rows = node_sweep.sweep(node_sweep.collect(r"^test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN$"), jobs=1, timeout=120)
    assert rows[0]["outcome"] == "unjudged" and rows[0]["unjudged"] > 0, rows[0]
    node_sweep.print_tables(rows, failures=False)
    printed = capsys.readouterr().out
    assert "| differ 0 | unjudged (differ only where the expected value is not finite) 1" in printed
    assert f"unjudged test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN [Cast]: output 0, score inf, unjudged " \
           f"{rows[0]['unjudged']}," in printed
