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
