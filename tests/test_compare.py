"""The violation rule and the error metrics."""

import numpy as np
import pytest

from tvm_numguard.base.compare import compare_outputs
from tvm_numguard.base.tolerance import Tolerance
from tvm_numguard.base.compare import compare_output, ulp_distance


def test_identical_outputs_score_zero():
    x = np.linspace(-3, 3, 50, dtype=np.float32)
    m = compare_output(0, x, x.copy(), Tolerance())
    assert m.score == 0 and m.violations == 0 and m.max_ulp == 0 and m.worst == ()


def test_violation_needs_both_atol_and_rtol_exceeded():
    ref = np.array([1000.0, 0.0, 1.0], dtype=np.float32)
    # 1000 + 5e-3: above atol (1e-6) but below rtol*|ref| (1e-2): not a violation
    opt = np.array([1000.005, 0.0, 1.0], dtype=np.float32)
    assert not compare_output(0, ref, opt, Tolerance()).violated
    # 1 + 1e-4: above both
    opt = np.array([1000.0, 0.0, 1.0001], dtype=np.float32)
    m = compare_output(0, ref, opt, Tolerance())
    assert m.violated and m.violations == 1
    assert m.worst[0]["index"] == (2,)
    # near zero only atol counts
    opt = np.array([1000.0, 5e-7, 1.0], dtype=np.float32)
    assert not compare_output(0, ref, opt, Tolerance()).violated


def test_minimum_passing_tolerances_are_tight():
    rng = np.random.default_rng(0)
    ref = rng.uniform(0.5, 2.0, 1000).astype(np.float32)
    opt = ref * (1 + rng.uniform(-3e-4, 3e-4, 1000)).astype(np.float32)
    m = compare_output(0, ref, opt, Tolerance())
    assert m.violated
    # with exactly the reported minimum the output passes; a little less fails
    for rtol, atol in [(m.rtol, m.min_atol), (m.min_rtol, m.atol)]:
        assert not compare_output(0, ref, opt, Tolerance(rtol=rtol, atol=atol)).violated
        assert compare_output(0, ref, opt, Tolerance(rtol=rtol * 0.99, atol=atol * 0.99)).violated


def test_nan_or_inf_only_in_the_optimized_build_is_an_infinite_violation():
    ref = np.array([1.0, np.nan, 2.0], dtype=np.float32)
    opt = np.array([1.0, np.nan, np.inf], dtype=np.float32)
    m = compare_output(0, ref, opt, Tolerance())
    assert m.score == float("inf") and m.violations == 1
    assert (m.nan_ref, m.nan_opt, m.inf_opt) == (1, 1, 1)


def test_dtype_change_is_reported_as_a_finding_and_compared_in_float64():
    ref = np.array([1.0, 2.0], dtype=np.float32)
    opt = ref.astype(np.float16)
    m = compare_output(0, ref, opt, Tolerance())
    assert m.finding == "dtype changed: float32 -> float16"
    assert not m.violated  # 1.0 and 2.0 are exact in float16


def test_shape_change_is_a_violation():
    c = compare_outputs([np.zeros((2, 3), np.float32)], [np.zeros((3, 2), np.float32)], Tolerance())
    assert c.violated and "shape changed" in c.outputs[0].finding


def test_ulp_distance_counts_representable_floats_across_zero():
    a = np.array([0.0], np.float32)
    tiny = np.nextafter(np.float32(0), np.float32(1))
    assert ulp_distance(a, np.array([tiny], np.float32)) == 1
    assert ulp_distance(np.array([-tiny], np.float32), np.array([tiny], np.float32)) == 2
    one = np.array([1.0], np.float32)
    assert ulp_distance(one, np.nextafter(one, np.float32(2))) == 1


def test_integer_outputs_must_match_exactly():
    ref = np.array([1, 2, 3], np.int64)
    assert compare_output(0, ref, np.array([1, 2, 4], np.int64), Tolerance()).violated
    assert not compare_output(0, ref, ref.copy(), Tolerance()).violated


@pytest.mark.parametrize("dtype,rtol", [("float16", 1e-3), ("float32", 1e-5)])
def test_default_tolerances_depend_on_dtype(dtype, rtol):
    assert Tolerance().for_dtype(dtype)[0] == rtol
    assert Tolerance(rtol=0.5).for_dtype(dtype)[0] == 0.5
