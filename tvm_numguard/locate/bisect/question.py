"""The question a bisection asks: is this configuration bad? (separate from any search state)

Like XLA's hlo_bisect, the question "does the build with this skip set still
violate on the witness?" is an interface; prefix bisection, linear isolation
and ddmin only ever ask it. A search may also say which configurations it may
ask about next (``prefetch``): with worker processes free, those are built
ahead, so k workers answer a round of k questions at once. Only what the search
asks is its answer; a build made ahead and never asked for is counted apart
(``BuildSession.speculative_builds``), so the result does not depend on the
number of workers.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Optional, Protocol

import numpy as np

from ...build.session import BuildSession
from ...build.attempts import describe_skip
from ...build.tasks import SkipRun
from ...build.workers import WORKERS

BAD, GOOD, UNTESTABLE = "bad", "good", "untestable"


@dataclasses.dataclass(frozen=True)
class Verdict:
    status: str  # BAD, GOOD or UNTESTABLE
    score: Optional[float] = None
    reason: Optional[str] = None


class Question(Protocol):
    def ask(self, skip: frozenset) -> Verdict: ...


class WitnessQuestion:
    """Builds with a skip set (in a worker where the session has them) and
    compares with the reference on the witness."""

    def __init__(self, session: BuildSession, witness: Mapping[str, np.ndarray]):
        self.session = session
        self.witness = witness
        self._memo: dict = {}
        self._pending: dict = {}  # closed skip set -> Pending, built ahead of being asked

    def ask(self, skip: frozenset) -> Verdict:
        skip = self.session.close(skip)  # skip sets that close to the same set are one question
        if skip not in self._memo:
            pending = self._pending.pop(skip, None) or self._start(skip)
            what = describe_skip(skip, [e.id for e in self.session.optional])
            self._memo[skip] = self._verdict(skip, self.session.take(pending, what=what))
        return self._memo[skip]

    def prefetch(self, skips: Iterable[frozenset]) -> None:
        """Build ``skips`` (most likely first) ahead while workers are free; a
        prefetched build no longer among ``skips`` is cancelled (it was a guess
        on the side the last answer ruled out). With one worker only the first
        is built: the question about to be asked, started while the caller
        does other work."""
        if self.session.workers.mode != WORKERS:
            return  # in-process builds are made when taken
        wanted = []
        for skip in skips:
            skip = self.session.close(skip)
            if skip not in self._memo and skip not in wanted:
                wanted.append(skip)
        for skip in [s for s in self._pending if s not in wanted]:
            self._drop(skip)
        for skip in wanted:
            if len(self._pending) >= self.session.concurrency:
                break
            if skip not in self._pending:
                self._pending[skip] = self._start(skip)

    def finish(self) -> None:
        """Cancel what was built ahead and not asked for; count what was made anyway."""
        for skip in list(self._pending):
            self._drop(skip)

    def _drop(self, skip: frozenset) -> None:
        pending = self._pending.pop(skip)
        if pending.done():
            self.session.attempts.note_speculative()
        else:
            pending.cancel()

    def _start(self, skip: frozenset):
        return self.session.attempt(SkipRun(skip, (self.witness,)))

    def _verdict(self, skip: frozenset, attempt) -> Verdict:
        if not attempt.ok:
            return Verdict(UNTESTABLE, reason=attempt.untestable)
        score = self.session.runs.compare_outputs(attempt.outputs[0], self.witness).score
        return Verdict(BAD if score > 1.0 else GOOD, score=score)
