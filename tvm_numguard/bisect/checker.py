"""The checker: is this configuration bad? (separate from any search state)

Like XLA's hlo_bisect, the question "does the build with this skip set still
violate on the witness?" is an interface; prefix bisection, linear isolation
and ddmin only ever ask it.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Protocol

import numpy as np

from ..shadow.session import RunFailure, ShadowSession

BAD, GOOD, UNTESTABLE = "bad", "good", "untestable"


@dataclasses.dataclass(frozen=True)
class Verdict:
    status: str  # BAD, GOOD or UNTESTABLE
    score: Optional[float] = None
    reason: Optional[str] = None


class Checker(Protocol):
    def check(self, skip: frozenset) -> Verdict: ...


class WitnessChecker:
    """Builds with a skip set and compares with the reference on the witness."""

    def __init__(self, session: ShadowSession, witness: Mapping[str, np.ndarray]):
        self.session = session
        self.witness = witness
        self._memo: dict = {}

    def check(self, skip: frozenset) -> Verdict:
        skip = self.session.close(skip)  # skip sets that close to the same set are one check
        if skip not in self._memo:
            self._memo[skip] = self._check(skip)
        return self._memo[skip]

    def _check(self, skip: frozenset) -> Verdict:
        build = self.session.build(skip)
        if not build.ok:
            return Verdict(UNTESTABLE, reason=f"does not build: {build.error}")
        try:
            score = self.session.compare(build, self.witness).score
        except RunFailure as err:
            return Verdict(UNTESTABLE, reason=f"does not run: {err}")
        return Verdict(BAD if score > 1.0 else GOOD, score=score)
