"""The public Python API: ``bisect``, ``search``, ``list_passes`` (and, in
their packages, ``trace``, ``replay`` and ``guard``).

Everything returns data (a Report whose ``.finding`` is the typed result, or
a list of event rows); nothing prints. Long work reports progress through an
optional ``progress(message)`` callback (progress.py).
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Optional

import numpy as np

from . import engine
from .errors import BuildError, PipelineBuildError
from .options import DEFAULT_SEARCHES, Options
from .pipeline import CompileConfig
from .progress import Progress
from .report import Report
from .report.sections import event_row
from .search import FixedInputs
from .shadow.session import ShadowSession
from .workers import Workers

__all__ = ["Options", "bisect", "check", "event_table", "list_passes", "search"]



def event_table(session: ShadowSession) -> list:
    """The rows of ``numguard passes`` for a prepared session."""
    optional_ids = {e.id for e in session.optional}
    return [event_row(e, e.id in optional_ids) for e in session.events]


def list_passes(model, config: Optional[CompileConfig] = None, progress: Progress = None,
                on_build: Optional[Callable] = None) -> list:
    """The pass events of one compilation (``numguard passes``)."""
    session = ShadowSession(engine.as_model(model), config or CompileConfig(), progress=progress, on_build=on_build)
    with session:
        try:
            session.prepare()
        except PipelineBuildError:  # which pass breaks the build: a finding, as for every command
            engine.raise_build_failure(session, progress)
        return event_table(session)


def bisect(model, config: Optional[CompileConfig] = None, options: Optional[Options] = None,
           inputs: Optional[Mapping[str, np.ndarray]] = None, progress: Progress = None,
           on_build: Optional[Callable] = None, on_witness: Optional[Callable[[dict], None]] = None,
           workers: Optional[Workers] = None) -> Report:
    """Search the range for a violation and bisect the pipeline on its witness
    (or, with ``inputs``, check those inputs only).

    ``on_witness(inputs)`` is called once a violation's witness is known, before
    the (long) bisection, so a caller can keep it even if the bisection never ends.
    ``workers``: how builds are made (default: a worker process per core)."""
    started = time.perf_counter()
    options = options or Options()
    session, ranges = engine.open_session(model, config or CompileConfig(), options, progress, on_build,
                                          workers=workers)
    with session:
        if inputs is not None:
            searches = [FixedInputs(engine.check_given_inputs(session.model, inputs))]
        else:
            searches = engine.strategies(options)
        finding = engine.check(session, options, ranges, searches, "bisect", progress, on_witness,
                               budget=options.budget if inputs is None else None)
        return Report.from_finding(engine.finish(finding, session, started))


def search(model, config: Optional[CompileConfig] = None, options: Optional[Options] = None,
           progress: Progress = None, on_build: Optional[Callable] = None,
           workers: Optional[Workers] = None) -> Report:
    """Search the range with each of the options' strategies (same budget, same
    seed; ``Options(search="random,boundary,evolve")``) for the inputs where the
    optimized build is worst; no bisection."""
    started = time.perf_counter()
    options = options or Options(search=DEFAULT_SEARCHES)
    session, ranges = engine.open_session(model, config or CompileConfig(), options, progress, on_build,
                                          workers=workers)
    with session:
        finding = engine.check(session, options, ranges, engine.strategies(options), "search", progress,
                               bisect=False)
        return Report.from_finding(engine.finish(finding, session, started))


def check(model, config: Optional[CompileConfig] = None, options: Optional[Options] = None):
    """The static range check (``numguard check``): which operators of the model,
    and of the module the pipeline's Relax passes make of it, can leave their
    domain or their dtype's range in the options' input range. Returns an
    ``ops.check.CheckResult``; nothing is built or run."""
    from .ops.check import check as range_check
    from .search import resolve_ranges

    model = engine.as_model(model)
    options = options or Options()
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    config = config or CompileConfig()
    try:
        return range_check(model, config, ranges)
    except BuildError:  # the pipeline fails before LegalizeOps: which pass breaks it
        engine.diagnose_build(model, config)
        raise
