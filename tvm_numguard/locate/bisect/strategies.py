"""Search over pass configurations, given only a question's answers.

``is_bad(k)``: the build that runs the first k optional events and skips the
rest; True (violates), False (clean) or None (untestable). k = 0 is the
reference (clean), k = n the pipeline as written (bad).

``lookahead(points)``, when given, hears before each question which points
the search may ask next, most likely first (the question itself, then the
points of the rounds after it): a caller with idle workers builds them ahead.
It never changes what is asked, so the answer does not depend on it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

PrefixProbe = Callable[[int], Optional[bool]]
Lookahead = Optional[Callable[[list], None]]
LOOKAHEAD_POINTS = 15  # a bisection tree four rounds deep


@dataclasses.dataclass
class PrefixResult:
    good: int  # largest k known clean
    bad: int  # smallest k known bad
    untestable: list  # k values that did not build or run

    @property
    def exact(self) -> bool:
        return self.bad - self.good == 1


def prefix_bisect(n: int, is_bad: PrefixProbe, lookahead: Lookahead = None) -> PrefixResult:
    """Binary search for the first bad prefix; untestable points are stepped
    around like ``git bisect skip`` (nearest testable point in the interval)."""
    untestable: list
    good, bad, untestable = 0, n, []
    while bad - good > 1:
        mid = (good + bad) // 2
        if lookahead is not None:
            lookahead(bisection_plan(good, bad))
        answer, probed = _nearest_testable(mid, good, bad, is_bad, untestable)
        if answer is None:
            break  # everything between good and bad is untestable
        if answer:
            bad = probed
        else:
            good = probed
    return PrefixResult(good, bad, sorted(untestable))


def bisection_plan(good: int, bad: int, limit: int = LOOKAHEAD_POINTS) -> list:
    """The points a bisection of (good, bad) asks, round by round, as far as
    both answers of each round lead: the midpoint, then the midpoints of the
    halves (the upper half first), and so on; a k-ary search's k-1 split
    points are the first k-1 when k is a power of two. There is no reason to
    favour either half; the order is fixed so the work done does not vary."""
    plan: list
    plan, level = [], [(good, bad)]
    while level and len(plan) < limit:
        nxt = []
        for lo, hi in level:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                plan.append(mid)
                nxt += [(mid, hi), (lo, mid)]
        level = nxt
    return plan[:limit]


def linear_plan(k: int, n: int, limit: int = LOOKAHEAD_POINTS) -> list:
    """The points a linear scan at ``k`` asks next: k, k+1, ... (at most ``limit`` + 1)."""
    return list(range(k, min(n, k + limit) + 1))


def first_questions(search, n: int) -> list:
    """What ``search`` (prefix_bisect or linear_scan) over ``n`` events asks
    first and may ask next: its first ``lookahead``, known before it starts."""
    return bisection_plan(0, n) if search is prefix_bisect else linear_plan(1, n)


def _nearest_testable(mid, good, bad, is_bad, untestable):
    for offset in range(0, bad - good):
        for k in (mid + offset, mid - offset) if offset else (mid,):
            if good < k < bad and k not in untestable:
                answer = is_bad(k)
                if answer is None:
                    untestable.append(k)
                else:
                    return answer, k
    return None, None


def linear_scan(n: int, is_bad: PrefixProbe, lookahead: Lookahead = None) -> PrefixResult:
    """TracNe-style isolation: one build per event, first bad prefix wins."""
    good, untestable = 0, []
    for k in range(1, n + 1):
        if lookahead is not None:
            lookahead(linear_plan(k, n))
        answer = is_bad(k)
        if answer is None:
            untestable.append(k)
        elif answer:
            return PrefixResult(good, k, untestable)
        else:
            good = k
    return PrefixResult(good, n, untestable)


def ddmin(items: Sequence, clears: Callable[[list], Optional[bool]], max_tests: int = 64,
          lookahead: Lookahead = None) -> tuple:
    """Zeller's delta debugging: a 1-minimal subset whose skipping clears the
    violation. ``clears(subset)`` answers True, False or None (untestable).
    Returns (subset, complete) where complete is False if max_tests ran out.
    ``lookahead`` hears each round's candidate subsets before they are tried."""
    items = list(items)
    n, tests = 2, 0
    while len(items) >= 2:
        chunks = _split(items, n)
        reduced = False
        complements = [[x for x in items if x not in c] for c in chunks] if n > 2 else []
        candidates = [(True, c) for c in chunks] + [(False, c) for c in complements]
        if lookahead is not None:
            lookahead([c for _, c in candidates])
        for is_chunk, subset in candidates:
            if tests >= max_tests:
                return items, False
            tests += 1
            if clears(subset):
                items = subset
                n = 2 if is_chunk else max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items, True


def _split(items, n):
    size, rest = divmod(len(items), n)
    chunks, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < rest else 0)
        if end > start:
            chunks.append(items[start:end])
        start = end
    return chunks
