"""Bisection of a pass pipeline on a witness (DESIGN 5.3).

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

from typing import Callable, Mapping, Optional

import numpy as np

from ..errors import UsageError
from ..options import BISECT_STRATEGIES as STRATEGIES
from ..progress import Detail, silent
from ..shadow.session import ShadowSession
from .result import BisectResult, Probe
from .checker import BAD, GOOD, UNTESTABLE, WitnessChecker
from .strategies import ddmin, linear_scan, prefix_bisect

def bisect_session(
    session: ShadowSession,
    witness: Mapping[str, np.ndarray],
    strategy: str = "bisect",
    progress: Optional[Callable[[str], None]] = None,
    ddmin_max_tests: int = 64,
) -> BisectResult:
    """Find the event that introduces the violation the witness shows."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy '{strategy}' (expected {', '.join(STRATEGIES)})")
    progress = progress or silent
    builds_before = session.build_count
    events = [e.id for e in session.optional]
    changed = [e.id for e in session.optional if e.changed is not False]
    result = BisectResult(status="ambiguous", strategy=strategy, events=events, changed=changed)
    # prefix lengths over E that end right after a changed event
    ends = [0] + [i + 1 for i, e in enumerate(session.optional) if e.changed is not False]

    if not session.is_deterministic(session.optimized, witness) or not session.is_deterministic(
        session.reference, witness
    ):
        result.status = "nondeterministic"
        return result

    checker = WitnessChecker(session, witness)
    n = len(events)

    def skip_after(j: int) -> frozenset:
        # past the last changed event only unchanged ones remain: that prefix
        # builds what the pipeline as written builds, already at hand
        return frozenset(events[ends[j]:]) if j < len(ends) - 1 else frozenset()

    def probe(j: int) -> Optional[bool]:
        k = ends[j]
        verdict = checker.check(skip_after(j))
        result.probes.append(Probe(k, verdict.status, verdict.score, verdict.reason))
        label = events[k - 1] if k else "(none)"
        progress(Detail(f"prefix {k}/{n} (last run: {label}): {verdict.status}"
                        + (f", score {verdict.score:.3g}" if verdict.score is not None else "")))
        return None if verdict.status == UNTESTABLE else verdict.status == BAD

    def ahead(points):
        checker.prefetch([skip_after(j) for j in points])

    search = prefix_bisect if strategy == "bisect" else linear_scan
    try:
        _decide(result, checker, search(len(ends) - 1, probe, ahead), events, ends, changed, skip_after,
                progress, ddmin_max_tests)
    finally:
        checker.finish()
    result.builds = session.build_count - builds_before
    return result


def _decide(result, checker, prefix, events, ends, changed, skip_after, progress, ddmin_max_tests) -> None:
    """Name the culprit of a prefix search (confirmed alone) or, failing that, a minimal disabling set."""
    def clears(subset):
        verdict = checker.check(frozenset(subset))
        return None if verdict.status == UNTESTABLE else verdict.status == GOOD

    def ahead(subsets):
        checker.prefetch(frozenset(s) for s in subsets)

    if not prefix.exact:
        result.suspects = [i for i in events[ends[prefix.good]:ends[prefix.bad]] if i in changed]
    else:
        k = ends[prefix.bad]
        result.culprit = events[k - 1]
        # the last clean prefix builds the same as E[:k-1] (events between are unchanged)
        result.score_before = checker.check(skip_after(prefix.good)).score
        result.score_after = checker.check(skip_after(prefix.bad)).score
        alone = checker.check(frozenset([result.culprit]))
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
