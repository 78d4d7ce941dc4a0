"""A seconds limit cuts a search short but never changes its course; the cut
search is repeated exactly by the K/N budget its result names (issue 10.4)."""

import time

import numpy as np
import pytest

from tvm_numguard.base.errors import RangeError
from tvm_numguard.ir.model import InputSpec
from tvm_numguard.locate import make_search, parse_budget
from tvm_numguard.locate.ranges import InputRange

SPECS = [InputSpec("x", (2, 4), "float32"), InputSpec("n", (3,), "int32")]
RANGES = {"x": InputRange(-1.0, 1.0), "n": InputRange(0, 9)}


def _search(name, budget, slow=0.0):
    seen = []

    def evaluate(inputs):
        seen.append({k: v.copy() for k, v in inputs.items()})
        time.sleep(slow)
        return float(np.abs(inputs["x"]).sum())  # a smooth score to climb

    result = make_search(name, budget=parse_budget(budget)).run(evaluate, SPECS, RANGES, seed=5)
    return result, seen


@pytest.mark.parametrize("search", ["evolve", "boundary", "random"])
def test_a_time_cut_search_is_repeated_by_its_budget(search):
    cut, seen = _search(search, "300,0.15s", slow=0.004)
    assert cut.stopped_by == "time" and 1 <= cut.evaluations < 300
    assert cut.repeat_budget == f"{cut.evaluations}/300"
    again, seen_again = _search(search, cut.repeat_budget)
    assert again.evaluations == cut.evaluations and again.stopped_by == "evaluations"
    assert len(seen) == len(seen_again)
    for a, b in zip(seen, seen_again):
        assert all(np.array_equal(a[k], b[k]) for k in a)
    # ... and they are the first inputs of the uncut search
    full, seen_full = _search(search, "300")
    for a, b in zip(seen, seen_full):
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_a_seconds_only_search_says_it_cannot_be_repeated():
    result, _ = _search("random", "0.05s", slow=0.004)
    assert result.stopped_by == "time" and result.repeat_budget is None


@pytest.mark.parametrize("text", ["0/10", "11/10", "a/10", "3/"])
def test_bad_cut_budgets(text):
    with pytest.raises(RangeError, match="budget"):
        parse_budget(text)
