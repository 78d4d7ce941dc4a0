"""Input searches and budgets, against synthetic score functions (no TVM builds)."""

import dataclasses
import math
import time

import numpy as np
import pytest

from tvm_numguard.base.errors import NumguardError, RangeError
from tvm_numguard.locate.budget import DEFAULT_BUDGET, Budget, parse_budget
from tvm_numguard.locate.cancellation import ZeroCrossing
from tvm_numguard.locate.ranges import InputRange
from tvm_numguard.build.observation import Observation
from tvm_numguard.locate.searches import (
    SEARCHES,
    BoundarySearch,
    EvolveSearch,
    RandomSearch,
    conform,
    make_search,
)


@dataclasses.dataclass(frozen=True)
class Spec:  # the fields of model.InputSpec that a search uses
    name: str
    shape: tuple
    dtype: str

    @property
    def is_integer(self):
        return np.dtype(self.dtype).kind in "iub"


X = [Spec("x", (64,), "float32")]
UNIT = {"x": InputRange(0.0, 1.0)}


def window_bug(x):
    """A fused kernel whose exp approximation is wrong only when elements 17 and 40
    both lie in [0.97, 0.98] (1% of the range each); its error grows smoothly as they
    approach that window and stays below the tolerance outside it."""
    d17, d40 = abs(float(x[17]) - 0.975), abs(float(x[40]) - 0.975)
    if d17 <= 0.005 and d40 <= 0.005:
        return 3.0
    return 0.45 * math.exp(-d17 / 0.1) + 0.45 * math.exp(-d40 / 0.1)


def on_x(fn):
    return lambda inputs: fn(inputs["x"])


# -- finding a planted bug --------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_evolve_finds_narrow_window_bug_that_random_misses(seed):
    found = EvolveSearch().run(on_x(window_bug), X, UNIT, seed, stop_at=1.0)
    assert found.best_score > 1.0
    assert found.evaluations <= DEFAULT_BUDGET.evaluations
    x = found.best_inputs["x"]
    assert abs(x[17] - 0.975) <= 0.005 and abs(x[40] - 0.975) <= 0.005
    missed = RandomSearch(Budget(30)).run(on_x(window_bug), X, UNIT, seed, stop_at=1.0)
    assert missed.best_score < 1.0 and missed.evaluations == 30
    plain = BoundarySearch(Budget(30)).run(on_x(window_bug), X, UNIT, seed, stop_at=1.0)
    assert plain.best_score < 1.0


def cancellation(inputs):
    """Eight outputs ref = W x (mixed-sign W) computed with a relative error of
    1e-3 in every term: the score (rtol 1e-5, atol 1e-9) is highest where an
    output cancels to zero while its terms do not."""
    x = inputs["x"].astype(np.float64)
    w = np.random.default_rng(3).standard_normal((8, 64))
    ref = w @ x
    err = np.abs(w) @ np.abs(x) * 1e-3
    return Observation(float(np.max(err / np.maximum(1e-9, 1e-5 * np.abs(ref)))), ref, err)


@pytest.mark.parametrize("seed", range(3))
def test_zero_crossing_drives_an_output_to_cancellation(seed, monkeypatch):
    # the operator edges (ties, thresholds: locate/edges.py) mean nothing to this synthetic score and only
    # reshuffle both evolutions' first candidates: the aim's own worth is measured without them
    from tvm_numguard.locate import searches

    monkeypatch.setattr(searches, "edge_candidates", lambda *args, **kwargs: [])
    budget = Budget(60)
    aimed = EvolveSearch(budget).run(cancellation, X, UNIT, seed)
    scores_only = EvolveSearch(budget).run(lambda inputs: cancellation(inputs).score, X, UNIT, seed)
    uniform = RandomSearch(budget).run(cancellation, X, UNIT, seed)
    assert aimed.best_score > 10 * max(uniform.best_score, scores_only.best_score)
    x = aimed.best_inputs["x"]
    assert x.dtype == np.float32 and x.min() >= 0.0 and x.max() <= 1.0


def test_zero_crossing_brackets_only_sign_changes():
    aim = ZeroCrossing()
    positive = [(1.0, {"x": np.zeros(2)}, Observation(1.0, np.array([1.0, 2.0]), np.array([0.1, 0.1]))),
                (2.0, {"x": np.ones(2)}, Observation(2.0, np.array([3.0, 0.5]), np.array([0.2, 0.3])))]
    assert aim.bracket(positive) is None
    mixed = positive + [(0.5, {"x": np.full(2, 0.5)}, Observation(0.5, np.array([-1.0, 1.0]), np.array([0.1, 0.1])))]
    best, other, element = aim.bracket(mixed)
    assert best is mixed[1] and other is mixed[2] and element == 0
    assert aim.bracket(mixed) is None  # element 0 was aimed at; element 1 never changes sign


def test_boundary_finds_top_of_range_bug_at_once():
    # exp approximation wrong above 0.99: found by the range's high end
    def top(inputs):
        return max(0.0, float(inputs["x"].max()) - 0.99) * 1000

    found = BoundarySearch(Budget(300)).run(top, X, UNIT, 0, stop_at=1.0)
    assert found.best_score > 1.0 and found.evaluations <= 2
    found = EvolveSearch().run(top, X, UNIT, 0, stop_at=1.0)
    assert found.best_score > 1.0 and found.evaluations <= 2


def test_evolve_mutates_every_input_not_only_the_first():
    specs = [Spec("a", (8,), "float32"), Spec("b", (4, 4), "float32")]
    ranges = {"a": InputRange(-1.0, 1.0), "b": InputRange(-5.0, 5.0)}

    def bug_in_b(inputs):  # only b matters: near 2.5 at one element
        d = abs(float(inputs["b"][2, 3]) - 2.5)
        return 2.0 if d < 0.02 else 0.9 * math.exp(-d)

    found = EvolveSearch().run(bug_in_b, specs, ranges, 3, stop_at=1.0)
    assert found.best_score > 1.0


def test_stop_at_stops_early_and_without_it_the_budget_is_spent():
    score = on_x(lambda x: 5.0)
    assert EvolveSearch().run(score, X, UNIT, 0, stop_at=1.0).evaluations == 1
    assert EvolveSearch().run(score, X, UNIT, 0).evaluations == DEFAULT_BUDGET.evaluations
    assert RandomSearch(Budget(17)).run(score, X, UNIT, 0).evaluations == 17
    assert BoundarySearch().run(score, X, UNIT, 0, budget=Budget(5)).evaluations == 5


def test_seconds_budget_stops_the_search():
    # the search runs until its seconds are spent, then stops: bounded generously above
    # (a loaded machine may hold the process back), never by the machine's speed
    started = time.perf_counter()
    found = EvolveSearch(Budget(seconds=0.3)).run(on_x(window_bug), X, UNIT, 0)
    assert 0.3 <= time.perf_counter() - started < 60.0
    assert found.stopped_by == "time" and found.evaluations == len(found.history) >= 1


# -- staying in range, dtypes, reproducibility -------------------------------

RANGE_CASES = [
    ([Spec("x", (3, 5), "float32")], {"x": InputRange(0.1, 0.3)}),  # 0.1, 0.3 not exact in float32
    ([Spec("x", (7,), "float16")], {"x": InputRange(-1e-3, 2.2)}),
    ([Spec("x", (2, 3), "float64"), Spec("i", (9,), "int32")],
     {"x": InputRange(-3.0, -2.0), "i": InputRange(-2.5, 4.5)}),
    ([Spec("i", (4,), "int64"), Spec("u", (16,), "uint8"), Spec("b", (5,), "bool")],
     {"i": InputRange(1e6, 1e6 + 3), "u": InputRange(0, 255), "b": InputRange(0, 1)}),
    ([Spec("x", (), "float32"), Spec("c", (1,), "float32")], {"x": InputRange(-1e30, 1e30), "c": InputRange(2, 2)}),
]


@pytest.mark.parametrize("name", sorted(SEARCHES))
@pytest.mark.parametrize("case", range(len(RANGE_CASES)))
def test_candidates_stay_in_range_with_the_input_dtype(name, case):
    specs, ranges = RANGE_CASES[case]
    seen = []

    def check(inputs):
        assert set(inputs) == {s.name for s in specs}
        for s in specs:
            a, r = inputs[s.name], ranges[s.name]
            assert isinstance(a, np.ndarray) and a.dtype == np.dtype(s.dtype) and a.shape == s.shape
            assert np.all(a >= r.low) and np.all(a <= r.high), (s.name, a, r)
            if s.is_integer:
                assert np.all(a.astype(np.float64) == np.rint(a.astype(np.float64)))
        seen.append(1)
        return float(np.random.default_rng(len(seen)).random()) * 0.9  # some landscape, never > 1

    for seed in range(4):
        result = make_search(name, budget=Budget(120)).run(check, specs, ranges, seed)
        assert result.evaluations == 120


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_same_seed_same_history_and_witness(name):
    def run(seed):
        return make_search(name, budget=Budget(150)).run(on_x(window_bug), X, UNIT, seed)

    a, b, c = run(7), run(7), run(8)
    assert a.history == b.history and a.best_score == b.best_score
    assert np.array_equal(a.best_inputs["x"], b.best_inputs["x"])
    assert a.history != c.history


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_invalid_candidates_are_counted_and_never_win(name):
    def half_invalid(inputs):  # reference not finite where x[0] > 0.5
        x = inputs["x"]
        return None if x[0] > 0.5 else 0.5 - float(x[0])

    result = make_search(name, budget=Budget(100)).run(half_invalid, X, UNIT, 1)
    assert result.evaluations == 100 == len(result.history)
    assert result.invalid == sum(h is None for h in result.history) > 0
    assert result.best_inputs is not None and result.best_inputs["x"][0] <= 0.5
    assert result.best_score == max(h for h in result.history if h is not None)


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_all_invalid_gives_no_witness(name):
    result = make_search(name, budget=Budget(40)).run(lambda inputs: None, X, UNIT, 0)
    assert result.best_inputs is None and result.invalid == result.evaluations == 40


def test_infinite_and_nan_scores_are_violations():
    result = RandomSearch(Budget(10)).run(lambda inputs: math.nan, X, UNIT, 0, stop_at=1.0)
    assert result.best_score == math.inf and result.evaluations == 1


@pytest.mark.parametrize("name", sorted(SEARCHES))
@pytest.mark.parametrize("ranges", [{"x": InputRange(1.0, 1.0), "k": InputRange(2.0, 2.0)},
                                    {"x": InputRange(1.0, 1.0 + 1e-9), "k": InputRange(1.5, 2.9)}])
def test_a_range_of_one_point_is_evaluated_once(name, ranges):
    """Found by a new user's trial: --low 1 --high 1 evaluated the same input 200 times (every draw of a
    range of one point is that point; 1 + 1e-9 rounds to 1 in float32, and [1.5, 2.9] holds one integer)."""
    specs = [Spec("x", (8,), "float32"), Spec("k", (2,), "int64")]
    seen = []
    found = make_search(name).run(lambda inputs: seen.append(inputs) or 0.5, specs, ranges, seed=0)
    assert len(seen) == 1 and found.evaluations == 1 and list(found.history) == [0.5], len(seen)
    assert found.stopped_by == "one point" and found.best_score == 0.5
    assert np.array_equal(found.best_inputs["x"], np.ones(8, np.float32))
    assert np.array_equal(found.best_inputs["k"], np.full(2, 2)) and found.best_inputs["k"].dtype == np.int64
    wider = make_search(name).run(lambda inputs: 0.5, specs, {**ranges, "x": InputRange(1.0, 2.0)}, seed=0,
                                  budget=Budget(20))
    assert wider.evaluations == 20 and wider.stopped_by == "evaluations"  # one input free to move: a search


def test_conform_rounds_and_clips():
    spec = Spec("i", (4,), "int8")
    out = conform([-300.0, 1.4, 1.6, 300.0], spec, InputRange(-5.5, 5.5))
    assert out.dtype == np.int8 and out.tolist() == [-5, 1, 2, 5]
    out = conform(0.3, Spec("x", (2,), "float32"), InputRange(0.0, 0.3))
    assert out.dtype == np.float32 and np.all(out <= 0.3) and np.all(out > 0.2999)


def test_make_search_rejects_unknown_names():
    with pytest.raises(NumguardError, match="unknown search 'genetic'"):
        make_search("genetic")
    assert make_search("evolve").name == "evolve"


# -- budgets ---------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("500", Budget(500, None)),
    ("60s", Budget(None, 60.0)),
    ("2m", Budget(None, 120.0)),
    ("1.5h", Budget(None, 5400.0)),
    ("500,60s", Budget(500, 60.0)),
    (" 60s , 500 ", Budget(500, 60.0)),
    ("0.5s", Budget(None, 0.5)),
])
def test_parse_budget(text, expected):
    assert parse_budget(text) == expected


@pytest.mark.parametrize("text", ["", "0", "-5", "0s", "-1m", "abc", "10x", "1.5", "500,600", "60s,2m",
                                  "1,2,3", "500,", "s", "infs", "nans"])
def test_parse_budget_rejects(text):
    with pytest.raises(RangeError) as err:
        parse_budget(text)
    assert "\n" not in str(err.value) and "budget" in str(err.value)


@pytest.mark.parametrize("budget, said", [
    (Budget(200, 4.39596), "200,4.4s"),  # the guard's automatic seconds, as the issue saw them: 200,4.39596s
    (Budget(200, 131.7), "200,132s"), (Budget(None, 0.5), "0.5s"), (Budget(500, 60.0), "500,60s"),
    (Budget(300), "300"), (Budget(500, stop=37), "37/500")])
def test_a_budget_is_said_rounded_and_reads_back(budget, said):
    assert str(budget) == said
    again = parse_budget(said)
    assert again.evaluations == budget.evaluations and again.stop == budget.stop
    assert again.seconds == pytest.approx(budget.seconds, rel=0.05) if budget.seconds else again.seconds is None


def test_budget_needs_a_positive_limit():
    for bad in [dict(), dict(evaluations=0), dict(seconds=-1.0), dict(evaluations=2.5)]:
        with pytest.raises(RangeError):
            Budget(**bad)


def test_budget_exhausted():
    now = time.perf_counter()
    assert not Budget(3).exhausted(2, now) and Budget(3).exhausted(3, now)
    assert Budget(seconds=1.0).exhausted(0, now - 2.0) and not Budget(seconds=1.0).exhausted(10**6, now)
    both = Budget(100, 1.0)
    assert both.exhausted(100, now) and both.exhausted(1, now - 5.0) and not both.exhausted(1, now)
    # with evaluations the plan is split by evaluations and the seconds stay one
    # deadline (a time limit cuts the search short but never changes its course)
    assert str(both) == "100,1s" and both.part(0.2) == Budget(20, 1.0)
    assert Budget(seconds=1.0).part(0.2) == Budget(None, 0.2)  # a seconds-only plan is split by time


def test_a_budget_to_be_done_by_starts_no_evaluation_that_would_end_past_it(monkeypatch):
    """The guard's automatic budget is a time to be done by: its search ran one evaluation past it
    (0.28 plain compiles of SqueezeNet). With ``done_by``, an evaluation as long as the mean one so
    far is not started where it would end past the seconds; a plain deadline still starts it."""
    from tvm_numguard.locate import budget as budgets

    now = [100.0]
    monkeypatch.setattr(budgets.time, "perf_counter", lambda: now[0])
    plain, done_by = budgets.Budget(seconds=10.0), budgets.Budget(seconds=10.0, done_by=True)
    now[0] = 100.0 + 8.0  # 2 evaluations of 4 s each, 2 s left: a third would end at 12 s
    assert not plain.exhausted(2, 100.0) and done_by.exhausted(2, 100.0)
    now[0] = 100.0 + 4.0  # 1 evaluation, 6 s left: the next fits
    assert not done_by.exhausted(1, 100.0)
    assert done_by.part(0.5).done_by
