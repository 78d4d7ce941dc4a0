"""A pipeline that does not build: which optional pass event breaks it.

The events the failed build ran (up to the pass that raised) are bisected on
"builds / does not build" with the prefix search a numerical violation uses
(``strategies.prefix_bisect``): prefix k runs the first k optional events and
skips the rest. A probe is an attempt (in a worker where there are workers),
so a probe that crashes the process counts as "does not build". The culprit
is the first bad prefix's last event, confirmed by skipping it alone.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from ...ir.instrument import disabled_pass_reaches
from .strategies import prefix_bisect


@dataclasses.dataclass(frozen=True)
class BuildFailure:
    """Why the pipeline as written does not build, and who breaks it.

    ``culprit``: the event whose prefix first fails (None when even skipping
    every optional event fails: ``reference_error`` says with what);
    ``confirmed``: skipping it alone builds (None: not tried)."""

    pipeline: str
    error: str
    events: tuple  # optional event ids the failed build ran, in order
    culprit: Optional[str] = None
    culprit_name: Optional[str] = None
    disabled_pass_reaches: bool = True  # PassContext(disabled_pass=[culprit_name]) switches it off
    confirmed: Optional[bool] = None
    confirm_error: Optional[str] = None  # what skipping the culprit alone still fails with
    reference_error: Optional[str] = None
    builds: int = 0


def bisect_build_failure(session) -> BuildFailure:
    """Name the optional event that makes ``session``'s pipeline fail to build
    (its ``optimized`` build failed; ``optional``: the events it ran), telling
    the session's progress."""
    from ...build.tasks import SkipRun

    progress = session.progress
    events = tuple(e.id for e in session.optional)
    by_id = {e.id: e for e in session.optional}
    builds = [0]

    def failure(skip) -> Optional[str]:
        builds[0] += 1
        attempt = session.take(session.attempt(SkipRun(frozenset(skip), ())))
        return None if attempt.ok else attempt.untestable

    failed = BuildFailure(session.config.pipeline, session.optimized.error, events)
    progress(f"the pipeline does not build; bisecting its {len(events)} optional events on "
             "'builds / does not build'")
    reference_error = failure(events) if events else session.optimized.error
    if reference_error is not None:
        return dataclasses.replace(failed, reference_error=reference_error, builds=builds[0])

    def is_bad(k: int) -> bool:
        progress(f"probe: the first {k} of {len(events)} optional events run")
        return failure(events[k:]) is not None

    result = prefix_bisect(len(events), is_bad)
    culprit = events[result.bad - 1]
    progress(f"confirming: {culprit} skipped alone")
    confirm_error = failure({culprit})
    return dataclasses.replace(failed, culprit=culprit, culprit_name=by_id[culprit].name,
                               disabled_pass_reaches=culprit in disabled_pass_reaches(session.events),
                               confirmed=confirm_error is None, confirm_error=confirm_error, builds=builds[0])
