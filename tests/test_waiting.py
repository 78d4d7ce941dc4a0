"""No wait is silent: a step that waits on TVM or a worker says, every few
seconds, what it waits for and what it was expected to take."""

import threading
import time

import pytest

from tvm_numguard.api.guard.clock import Deadline, TimeLimitReached
from tvm_numguard.base.progress import Heartbeat, silent, waited, waiting


class Heard(list):
    def __call__(self, message):
        self.append(message)


def test_a_long_wait_says_what_it_waits_for_and_its_estimate():
    heard = Heard()
    with waiting(heard, "TVM making the optimized build's VM", 30.0, every=0.05):
        time.sleep(0.4)
    assert len(heard) >= 2 and all(isinstance(m, Heartbeat) for m in heard)
    assert heard[0].strip().startswith("still waiting for TVM making the optimized build's VM: 0 s of ~30 s expected")


def test_a_short_wait_says_nothing_and_a_silent_progress_starts_no_thread():
    heard = Heard()
    with waiting(heard, "a run", every=1.0):
        time.sleep(0.01)
    assert heard == []
    threads = threading.active_count()
    with waiting(silent, "a run", every=0.01):
        assert threading.active_count() == threads


def test_a_wait_inside_another_is_said_while_it_lasts():
    heard = Heard()
    with waiting(heard, "bisection probe 2 of about 5", 40.0, every=0.05):
        with waiting(heard, "the reference's run in its worker", every=0.05):
            time.sleep(0.3)
        inner = len(heard)
        time.sleep(0.3)
    assert inner >= 2 and all("the reference's run" in m for m in heard[:inner])
    assert "bisection probe 2 of about 5" in heard[-1]


def test_a_wait_past_its_estimate_says_so():
    assert waited(12.0, None) == "12 s"
    assert waited(12.0, 30.0) == "12 s of ~30 s expected"
    assert waited(45.0, 30.0) == "45 s (~30 s was expected)"
    assert waited(30.0, 300.0) == "30 s of ~5 min expected"


def test_a_heartbeat_past_the_time_limit_goes_through_and_the_next_step_meets_the_limit():
    heard = Heard()
    deadline = Deadline(0.01, heard)
    time.sleep(0.02)
    deadline(Heartbeat("  still waiting for a run: 1 s"))  # from a wait's thread: never raised there
    assert heard == ["  still waiting for a run: 1 s"]
    with pytest.raises(TimeLimitReached):
        deadline("the next step")
    with pytest.raises(TimeLimitReached, match="a run did not finish \\(stopped in its worker\\)"):
        deadline.stopped("a run")

def test_an_evaluation_is_expected_to_take_as_long_as_the_longest_recent_one():
    """The search's heartbeat estimated an evaluation by the optimized build's VM call alone: '~0 s was
    expected' while each input took 1 to 2 s (the reference's run, the framework's, and its float64 truth where
    they differ, on a 1024-channel upsampling). An evaluation now expects the longest of the last few."""
    from tvm_numguard.engine.engine import RECENT_EVALUATIONS, evaluation_wait

    what, estimate = evaluation_wait(1, [])
    assert estimate is None and "VM" in what
    what, estimate = evaluation_wait(5, [0.2, 1.9, 1.1])
    assert estimate == 1.9 and what == "input 5: both builds' runs and the framework's"
    assert evaluation_wait(5, [0.2], framework=False)[0] == "input 5: both builds' runs"
    assert RECENT_EVALUATIONS >= 3
