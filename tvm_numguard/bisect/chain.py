"""Snapshot-chain bisection (DESIGN 5.3): for passes that cannot be re-run.

When the passes that produced a module were applied outside the compile call
and do not replay, they cannot be skipped; what remains is the chain of
modules they produced, m0 (the origin) .. mn. ``first_bad(n, is_bad)`` finds
the smallest i with ``is_bad(i)`` by binary search, given that m0 is good and
mn is bad: about log2(n) checks, each a build of one snapshot compared with
m0's build on the witness. A check that cannot be made (None: the snapshot
does not build) moves the boundary the way an untestable commit does in
``git bisect skip``: the search goes on in the half that can still decide.
"""

from __future__ import annotations

from typing import Callable, Optional


def first_bad(n: int, is_bad: Callable[[int], Optional[bool]]) -> tuple:
    """(first bad index or None, indices checked). ``is_bad(n)`` is assumed true."""
    good, bad, checked = 0, n, []
    untestable: set = set()
    while bad - good > 1:
        middle = (good + bad) // 2
        # an untestable middle: try its nearest testable neighbours inside (good, bad)
        probe = next((i for k in range(bad - good) for i in (middle + k, middle - k)
                      if good < i < bad and i not in untestable), None)
        if probe is None:
            return None, checked
        checked.append(probe)
        verdict = is_bad(probe)
        if verdict is None:
            untestable.add(probe)
        elif verdict:
            bad = probe
        else:
            good = probe
    return bad, checked
