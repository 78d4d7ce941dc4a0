"""Bisection of a pass pipeline on a witness (DESIGN 5.3).

Optional events E in execution order; f(k) = does the build that runs E[:k]
and skips the rest violate on the witness? The culprit is E[k-1] for the
smallest bad k, confirmed by skipping it alone; when that does not clear the
violation, ddmin finds a minimal disabling set instead.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional

import numpy as np

from ..shadow.session import ShadowSession
from .checker import BAD, GOOD, UNTESTABLE, WitnessChecker
from .strategies import ddmin, linear_scan, prefix_bisect

STRATEGIES = ("bisect", "linear")


@dataclasses.dataclass
class Probe:
    k: int
    status: str
    score: Optional[float]
    reason: Optional[str]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class BisectResult:
    status: str  # "culprit", "minimal_set", "ambiguous", "nondeterministic"
    strategy: str
    events: list  # optional event ids, in order
    culprit: Optional[str] = None
    score_before: Optional[float] = None  # f(k-1): culprit not run
    score_after: Optional[float] = None  # f(k): culprit run
    confirmed: Optional[bool] = None
    confirm_score: Optional[float] = None
    minimal_set: list = dataclasses.field(default_factory=list)
    minimal_set_complete: bool = True
    suspects: list = dataclasses.field(default_factory=list)  # when ambiguous
    probes: list = dataclasses.field(default_factory=list)
    builds: int = 0


def bisect_session(
    session: ShadowSession,
    witness: Mapping[str, np.ndarray],
    strategy: str = "bisect",
    progress: Optional[Callable[[str], None]] = None,
    ddmin_max_tests: int = 64,
) -> BisectResult:
    """Find the event that introduces the violation the witness shows."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy '{strategy}' (expected {', '.join(STRATEGIES)})")
    progress = progress or (lambda message: None)
    builds_before = session.build_count
    events = [e.id for e in session.optional]
    result = BisectResult(status="ambiguous", strategy=strategy, events=events)

    if not session.is_deterministic(session.optimized, witness) or not session.is_deterministic(
        session.reference, witness
    ):
        result.status = "nondeterministic"
        return result

    checker = WitnessChecker(session, witness)
    n = len(events)

    def probe(k: int) -> Optional[bool]:
        verdict = checker.check(frozenset(events[k:]))
        result.probes.append(Probe(k, verdict.status, verdict.score, verdict.reason))
        label = events[k - 1] if k else "(none)"
        progress(f"prefix {k}/{n} (last run: {label}): {verdict.status}"
                 + (f", score {verdict.score:.3g}" if verdict.score is not None else ""))
        return None if verdict.status == UNTESTABLE else verdict.status == BAD

    search = prefix_bisect if strategy == "bisect" else linear_scan
    prefix = search(n, probe)
    if not prefix.exact:
        result.suspects = events[prefix.good:prefix.bad]
    else:
        k = prefix.bad
        result.culprit = events[k - 1]
        result.score_before = checker.check(frozenset(events[k - 1:])).score
        result.score_after = checker.check(frozenset(events[k:])).score
        alone = checker.check(frozenset([result.culprit]))
        result.confirmed = alone.status == GOOD
        result.confirm_score = alone.score
        progress(f"confirm: skipping {result.culprit} alone: {alone.status}")
        if result.confirmed:
            result.status = "culprit"
            result.minimal_set = [result.culprit]
    if result.status != "culprit":
        progress("no single event explains the violation; delta debugging for a minimal disabling set")

        def clears(subset):
            verdict = checker.check(frozenset(subset))
            return None if verdict.status == UNTESTABLE else verdict.status == GOOD

        minimal, complete = ddmin(events, clears, max_tests=ddmin_max_tests)
        if clears(minimal):
            result.status = "minimal_set"
            result.minimal_set = minimal
            result.minimal_set_complete = complete
    result.builds = session.build_count - builds_before
    return result
