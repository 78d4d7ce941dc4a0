"""The searches over pass configurations, against synthetic checkers."""

import math

import numpy as np
import pytest

from tvm_numguard.locate.bisect import ddmin, linear_scan, prefix_bisect


def threshold(bad_from, untestable=()):
    calls = []

    def is_bad(k):
        calls.append(k)
        if k in untestable:
            return None
        return k >= bad_from

    return is_bad, calls


@pytest.mark.parametrize("n", [1, 2, 7, 52, 100, 1000])
def test_prefix_bisect_finds_first_bad_prefix_in_log_probes(n):
    for bad_from in sorted({1, n // 3 or 1, n}):
        is_bad, calls = threshold(bad_from)
        result = prefix_bisect(n, is_bad)
        assert result.exact and result.bad == bad_from
        assert len(calls) <= math.ceil(math.log2(n)) if n > 1 else not calls


def test_prefix_bisect_steps_around_untestable_points():
    is_bad, calls = threshold(30, untestable={50, 25, 26, 27})
    result = prefix_bisect(100, is_bad)
    assert result.exact and result.bad == 30
    assert 50 in result.untestable


def test_prefix_bisect_reports_an_interval_when_the_boundary_is_untestable():
    # 29 and 30 cannot be built: the first bad prefix is 30, but only 28 (good)
    # and 31 (bad) can be tested, so the suspects are events 28..30
    is_bad, _ = threshold(30, untestable={29, 30})
    result = prefix_bisect(100, is_bad)
    assert not result.exact
    assert (result.good, result.bad) == (28, 31)


def test_linear_scan_uses_one_probe_per_event_until_the_culprit():
    is_bad, calls = threshold(17)
    result = linear_scan(40, is_bad)
    assert result.bad == 17 and calls == list(range(1, 18))


def test_ddmin_finds_a_pair_that_must_be_disabled_together():
    events = [f"E{i}" for i in range(20)]

    # the violation needs both E3 and E15 to run: skipping either clears it
    def clears(skipped):
        return "E3" in skipped or "E15" in skipped

    minimal, complete = ddmin(events, clears)
    assert complete and len(minimal) == 1 and minimal[0] in ("E3", "E15")


def test_ddmin_finds_a_set_when_two_bugs_each_violate():
    events = [f"E{i}" for i in range(16)]

    # two independent bugs, E4 and E11: only skipping both clears
    def clears(skipped):
        return "E4" in skipped and "E11" in skipped

    minimal, complete = ddmin(events, clears)
    assert complete and sorted(minimal) == ["E11", "E4"]


def test_ddmin_treats_untestable_as_not_clearing_and_respects_its_budget():
    events = [f"E{i}" for i in range(64)]

    def clears(skipped):
        if len(skipped) == 1:
            return None
        return "E7" in skipped and "E8" in skipped

    minimal, complete = ddmin(events, clears, max_tests=200)
    assert sorted(minimal) == ["E7", "E8"]
    short, complete = ddmin(events, clears, max_tests=3)
    assert not complete and len(short) > 2


def test_the_bisection_plan_is_the_decision_tree_breadth_first():
    from tvm_numguard.locate.bisect.strategies import bisection_plan

    assert bisection_plan(0, 16)[:3] == [8, 12, 4]  # a 4-ary search's three split points
    assert bisection_plan(0, 16)[:7] == [8, 12, 4, 14, 10, 6, 2]
    assert bisection_plan(3, 4) == []  # nothing left to ask
    assert len(bisection_plan(0, 1000)) == 15


@pytest.mark.parametrize("seed", range(20))
def test_looking_ahead_never_changes_what_is_asked(seed):
    """The points heard ahead include every point asked next; the questions and
    the answer are those of the search without a lookahead."""
    from tvm_numguard.locate.bisect.strategies import ddmin, linear_scan, prefix_bisect

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    answers = {k: (None if rng.random() < 0.2 else bool(rng.random() < 0.5)) for k in range(1, n)}
    answers[n] = True

    def run(search, lookahead):
        asked = []

        def is_bad(k):
            asked.append(k)
            return answers[k]

        return search(n, is_bad, lookahead) if lookahead else search(n, is_bad), asked

    for search in (prefix_bisect, linear_scan):
        heard = []
        plain, asked_plain = run(search, None)
        ahead, asked_ahead = run(search, lambda points: heard.append(list(points)))
        assert (plain, asked_plain) == (ahead, asked_ahead)
        assert heard and asked_ahead[0] == heard[0][0]  # the next question heads what is heard

    needed = set(rng.choice(20, size=2, replace=False).tolist())
    clears = lambda subset: needed <= set(subset)  # noqa: E731
    heard = []
    assert ddmin(list(range(20)), clears) == ddmin(list(range(20)), clears, lookahead=heard.append)
    assert heard
