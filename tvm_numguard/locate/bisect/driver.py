"""Bisection of a pass pipeline on a witness (docs/architecture.md: a check, end to end).

Optional events E in execution order; f(k) = does the build that runs E[:k]
and skips the rest violate on the witness? The culprit is E[k-1] for the
smallest bad k, confirmed by skipping it alone; when that does not clear the
violation, ddmin finds a minimal disabling set instead.

Only prefixes that end right after an event that changed the module (in the
build as written) are probed: an event that left its module unchanged there
sees the same module in every prefix that runs it, so running or skipping it
builds the same thing, and it cannot be the first bad event.
"""

from __future__ import annotations

import math
import time
import types

from typing import Callable, Mapping, Optional

import numpy as np

from ...base.errors import UsageError
from ...ir.targets import is_gpu
from ..options import BISECT_STRATEGIES as STRATEGIES
from ...base.progress import Detail, afford, duration, waiting
from ...build.session import BuildSession
from .result import BisectResult, Probe
from .question import BAD, GOOD, UNTESTABLE, WitnessQuestion
from .strategies import ddmin, first_questions, linear_scan, prefix_bisect

def bisect_session(
    session: BuildSession,
    witness: Mapping[str, np.ndarray],
    strategy: str = "bisect",
    ddmin_max_tests: int = 64,
    started: Optional["Bisection"] = None,
) -> BisectResult:
    """Find the event that introduces the violation the witness shows, telling
    the session's progress (``started``: the same bisection, its first round
    already under way)."""
    bisection = started or Bisection(session, witness, strategy)
    return bisection.run(ddmin_max_tests)


class BisectionStopped(Exception):
    """A bisection given up before a probe because its ``stop`` said so."""


class Bisection:
    """One bisection of a session's optional events on a witness.

    ``start`` builds the first round in the workers without waiting for it, so
    a caller can do other work meanwhile (judge the witness against the
    float64 oracle); ``run`` asks the questions and returns the result;
    ``cancel`` gives up what was started when no bisection follows.
    ``stop``: asked before each probe; True gives the bisection up
    (``BisectionStopped``), as when the oracle, judging meanwhile, finds the
    difference benign.
    """

    def __init__(self, session: BuildSession, witness: Mapping[str, np.ndarray], strategy: str = "bisect",
                 stop: Optional[Callable[[], bool]] = None):
        if strategy not in STRATEGIES:
            raise UsageError(f"unknown strategy '{strategy}' (expected {', '.join(STRATEGIES)})")
        self.session, self.witness, self.strategy, self.stop = session, witness, strategy, stop
        self.search = prefix_bisect if strategy == "bisect" else linear_scan
        self.events = [e.id for e in session.optional]
        self.changed = [e.id for e in session.optional if e.changed is not False]
        # prefix lengths over E that end right after a changed event
        self.ends = [0] + [i + 1 for i, e in enumerate(session.optional) if e.changed is not False]
        self.question = WitnessQuestion(session, witness)
        self.probe_seconds = sum(probe_parts(session))

    def skip_after(self, j: int) -> frozenset:
        """The skip set of the j-th probed prefix: past the last changed event
        only unchanged ones remain, so that prefix builds what the pipeline as
        written builds, already at hand."""
        return frozenset(self.events[self.ends[j]:]) if j < len(self.ends) - 1 else frozenset()

    def start(self) -> "Bisection":
        self.question.prefetch(self.skip_after(j) for j in first_questions(self.search, len(self.ends) - 1))
        return self

    def cancel(self) -> None:
        self.question.finish()

    def run(self, ddmin_max_tests: int = 64) -> BisectResult:
        # one heartbeat for the whole bisection: steps shorter than its period, one after the other
        # (the confirmation's three builds), are no silence either
        with waiting(self.session.progress, "the bisection"):
            return self._run(ddmin_max_tests)

    def _run(self, ddmin_max_tests: int) -> BisectResult:
        session = self.session
        builds_before = session.build_count  # a build started early is counted when taken
        # what the bisection learns as it goes; the BisectResult, frozen, is made of it at the end
        result = types.SimpleNamespace(status="ambiguous", culprit=None, score_before=None, score_after=None,
                                       confirmed=None, confirm_score=None, confirm_reason=None, minimal_set=[],
                                       minimal_set_complete=True, suspects=[], probes=[], builds=0)
        try:
            if self._deterministic():
                self._bisect(result, ddmin_max_tests)
            else:
                result.status = "nondeterministic"
        finally:
            self.cancel()
            result.builds = session.build_count - builds_before
        return BisectResult(strategy=self.strategy, events=self.events, changed=self.changed, **vars(result))

    def _bisect(self, result, ddmin_max_tests: int) -> None:
        """The prefix search and ``_decide``, noting what they find in ``result``."""
        session, events, ends = self.session, self.events, self.ends
        progress = session.progress
        n = len(events)
        started = time.perf_counter()
        expected = expected_probes(len(ends) - 1, self.search is linear_scan)

        def probe(j: int) -> Optional[bool]:
            k = ends[j]
            if self.stop is not None and self.stop():
                raise BisectionStopped
            done = len(result.probes)
            # planned from the build as written, longer where the probes so far took longer (one built
            # ahead while the caller did other work is answered at once: no shorter)
            each = max(self.probe_seconds, (time.perf_counter() - started) / done if done else 0.0)
            afford(progress, each, "a bisection probe")  # a guard's limit: a probe that cannot fit is not started
            with waiting(progress, f"bisection probe {done + 1} of about {expected} (prefix {k}/{n}: "
                         "a build, its VM and a run)", each):
                verdict = self.question.ask(self.skip_after(j))
            result.probes.append(Probe(k, verdict.status, verdict.score, verdict.reason))
            label = events[k - 1] if k else "(none)"
            done = len(result.probes)
            progress(Detail(f"bisection probe {done} of about {expected}: "
                            f"prefix {k}/{n} (last run: {label}): {verdict.status}"
                            + (f", score {verdict.score:.3g}" if verdict.score is not None else "")
                            + time_left(time.perf_counter() - started, done, expected + 1)))
            return None if verdict.status == UNTESTABLE else verdict.status == BAD

        def ahead(points):
            self.question.prefetch([self.skip_after(j) for j in points])

        self._decide(result, self.search(len(ends) - 1, probe, ahead), progress, ddmin_max_tests)

    def _deterministic(self) -> bool:
        """``Runs.deterministic`` on the witness, planned (a VM and two runs) and said while it lasts."""
        session = self.session
        if session.runs.determinism_known(self.witness):  # the judge asked already, on this witness
            return session.runs.deterministic(self.witness)
        _, vm_s, call_s = probe_parts(session)
        # a build recorded anew for the bisection (the guard's) makes its VM again
        planned = (0.0 if session.runs.has_run(session.built) else vm_s) + 2 * call_s
        afford(session.progress, planned, "running both builds again on the witness")
        with waiting(session.progress, "both builds run again on the witness (are they deterministic?)",
                     planned or None):
            return session.runs.deterministic(self.witness)

    def _decide(self, result, prefix, progress, ddmin_max_tests: int) -> None:
        """Name the culprit of a prefix search (confirmed alone) or, failing that, a minimal disabling set."""
        question, events, ends = self.question, self.events, self.ends
        changed, skip_after = self.changed, self.skip_after

        def ask(skip: frozenset, what: str):
            afford(progress, self.probe_seconds, what)
            with waiting(progress, f"{what}: a build, its VM and a run", self.probe_seconds):
                return question.ask(skip)

        def clears(subset):
            verdict = ask(frozenset(subset), f"a build skipping {len(subset)} event(s) (delta debugging)")
            return None if verdict.status == UNTESTABLE else verdict.status == GOOD

        def ahead(subsets):
            question.prefetch(frozenset(s) for s in subsets)

        if not prefix.exact:
            result.suspects = [i for i in events[ends[prefix.good]:ends[prefix.bad]] if i in changed]
        else:
            k = ends[prefix.bad]
            result.culprit = events[k - 1]
            # the last clean prefix builds the same as E[:k-1] (events between are unchanged)
            result.score_before = ask(skip_after(prefix.good), "the last clean prefix's score").score
            result.score_after = ask(skip_after(prefix.bad), "the first bad prefix's score").score
            alone = ask(frozenset([result.culprit]), f"the confirmation, {result.culprit} skipped alone")
            result.confirmed = None if alone.status == UNTESTABLE else alone.status == GOOD
            result.confirm_score, result.confirm_reason = alone.score, alone.reason
            progress(Detail(f"confirm: skipping {result.culprit} alone: {alone.status}"
                            + (f" ({alone.reason})" if alone.reason else "")))
            if result.confirmed:
                result.status = "culprit"
                result.minimal_set = [result.culprit]
                return
            if result.confirmed is None:
                # a later pass needs the culprit to have run (the build without it crashed or
                # failed): the culprit goes with the fewest later events that make it buildable
                progress(f"skipping {result.culprit} alone cannot be tested; looking for the later passes "
                         "that must go with it")
                later = events[k:]
                together, complete = ddmin(later, lambda s: clears([result.culprit, *s]), ddmin_max_tests,
                                           lambda subsets: ahead([result.culprit, *s] for s in subsets))
                if clears([result.culprit, *together]):
                    result.status = "minimal_set"
                    result.minimal_set = [result.culprit, *together]
                    result.minimal_set_complete = complete
                    return
        progress("no single event explains the violation; delta debugging for a minimal disabling set")
        minimal, complete = ddmin(changed, clears, max_tests=ddmin_max_tests, lookahead=ahead)
        if clears(minimal):
            result.status = "minimal_set"
            result.minimal_set = minimal
            result.minimal_set_complete = complete


def bisection_plan(session: BuildSession, options) -> str:
    """The bisection's cost planned from the build as written (``probe_plan``),
    and where the time goes when creating a VM is most of it."""
    build_s, vm_s, call_s = probe_parts(session)
    points = sum(1 for e in session.optional if e.changed is not False)
    plan = probe_plan(points, options.strategy == "linear", build_s, vm_s, call_s)
    if vm_s >= max(10.0, build_s):
        plan += (f"; where the time goes: creating a build's VM ({vm_s:.0f} s), when TVM generates its kernels' "
                 "machine code"
                 + ("; float16 arithmetic is emulated on a CPU" if vm_emulates_float16(session) else ""))
    return plan


def vm_emulates_float16(session: BuildSession) -> bool:
    """A CPU build of a pipeline that makes float16 kernels (ToMixedPrecision), whose VM takes long to make."""
    return "MixedPrecision" in session.config.pipeline and not is_gpu(session.config.make_target())


def probe_parts(session: BuildSession) -> tuple:
    """A probe's planned seconds, as the builds so far took: a build (the pipeline
    as written's compile), its VM (the longest creation so far) and a run."""
    build_s = session.optimized.seconds if session.optimized is not None else 0.0
    return build_s, session.runs.vm_seconds, session.runs.call_seconds


def expected_probes(points: int, linear: bool) -> int:
    """The probes a search over ``points`` prefixes asks about, the confirmation not counted."""
    return points if linear else max(1, math.ceil(math.log2(max(points, 2))))


def probe_plan(points: int, linear: bool, build_s: float, vm_s: float, call_s: float) -> str:
    """What a bisection over ``points`` prefixes will take, planned before its first
    probe from what the build as written took: each probe builds the model
    (``build_s``), creates that build's VM (``vm_s``) and runs it once on the
    witness (``call_s``); the confirmation is one probe more, and delta debugging,
    where no single event explains the violation, more still (not planned)."""
    probes = expected_probes(points, linear) + 1
    each = build_s + vm_s + call_s
    return (f"about {probes} probes at ~{duration(each)} each (a build {build_s:.1f} s, its VM {vm_s:.1f} s, "
            f"a run {call_s:.2f} s): ~{duration(probes * each)}")


def time_left(spent: float, done: int, total: int) -> str:
    """``; ~N s left`` after ``done`` of about ``total`` probes (the confirmation
    included) that took ``spent`` seconds: each one left costs what they cost on average."""
    left = max(total - done, 0) * spent / max(done, 1)
    if left < 1.0:
        return ""
    return f"; ~{left:.0f} s left" if left < 120 else f"; ~{left / 60:.0f} min left"
