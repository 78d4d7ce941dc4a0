"""The public Python API: ``bisect``, ``search``, ``list_passes`` (and, in
their packages, ``trace``, ``replay`` and ``guard``).

Everything returns data (a Report whose ``.finding`` is the typed result, or
a list of event rows); nothing prints. Long work reports progress through an
optional ``progress(message)`` callback (progress.py).
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional

import numpy as np

from ..engine import engine
from ..base.errors import BuildError, PipelineBuildError, first_line
from ..locate.options import DEFAULT_SEARCHES, Options
from ..ir.pipeline import CompileConfig
from ..base.progress import Progress
from ..report import Report
from ..report.sections import event_row
from ..build.session import RunContext, BuildSession
from ..build.workers import Workers

__all__ = ["Options", "bisect", "event_table", "list_passes", "range_check", "search"]



def event_table(session: BuildSession) -> list:
    """The rows of ``numguard passes`` for a prepared session."""
    optional_ids = {e.id for e in session.optional}
    return [event_row(e, e.id in optional_ids) for e in session.events]


def list_passes(model, config: Optional[CompileConfig] = None, progress: Progress = None,
                on_build: Optional[Callable] = None) -> list:
    """The pass events of one compilation (``numguard passes``): the pipeline as
    written is built once, nothing else. Where it does not build, the events
    that ran until it stopped, the last top-level one with ``build_error`` (the
    error's first line: the build stopped in that event or after it); which
    pass breaks the build is ``bisect``'s question, not this one's."""
    context = RunContext.of(progress, on_build).in_process()
    with BuildSession(engine.as_model(model), config or CompileConfig(), context=context) as session:
        try:
            session.prepare_optimized()
        except PipelineBuildError:
            rows = [dict(row) for row in event_table(session)]
            last = next((r for r in reversed(rows) if "/" not in r["id"]), None)
            if last is None:  # it failed before any pass ran
                raise
            last["build_error"] = first_line(session.built.error or "the build failed")
            return rows
        return event_table(session)


def bisect(model, config: Optional[CompileConfig] = None, options: Optional[Options] = None,
           inputs: Optional[Mapping[str, np.ndarray]] = None, progress: Progress = None,
           on_build: Optional[Callable] = None, on_witness: Optional[Callable[[dict], None]] = None,
           workers: Optional[Workers] = None) -> Report:
    """Search the range for a violation and bisect the pipeline on its witness
    (or, with ``inputs``, check those inputs only): ``numguard bisect``.

    Args:
        model: a Model, a model file (.onnx, .pt2, .py) or an IRModule.
        config: the pipelines, target and opt level (default: TVM's default pipeline, llvm).
        options: the range, tolerance, search and budget (default: ``Options()``, which needs a range).
        inputs: check only these inputs (e.g. a saved witness), no search.
        progress: ``callable(message)`` for phase messages and details (``progress.Detail``).
        on_build: ``callable(build)`` for every compile.
        on_witness: ``callable(inputs)``, once a violation's witness is known and before the
            (long) bisection, so a caller can keep it even if the bisection never ends.
        workers: how builds that may crash are made (default: a worker process per core).

    Returns:
        The Report: verdict, witness, metrics and, for a violation, the blamed pass events.

    Raises:
        UsageError: bad input (model, range, options), one line saying what.
        PipelineBreaksError: the pipeline as written does not build the model (the pass that breaks it named).
    """
    context = RunContext.of(progress, on_build, on_witness, workers)
    return Report.from_finding(engine.run(model, config or CompileConfig(), options or Options(), context,
                                          engine.Steps("bisect"), inputs=inputs))


def search(model, config: Optional[CompileConfig] = None, options: Optional[Options] = None,
           progress: Progress = None, on_build: Optional[Callable] = None,
           workers: Optional[Workers] = None) -> Report:
    """Search the range with each of the options' searches (same budget, same
    seed) for the inputs where the optimized build is worst; no bisection (``numguard search``).

    Args:
        model, config, progress, on_build, workers: as for ``bisect``.
        options: as for ``bisect``; by default every strategy
            (``Options(search="random,boundary,evolve")``), which needs a range.

    Returns:
        The Report, with each search's result in its ``search`` section.

    Raises:
        UsageError, PipelineBreaksError: as for ``bisect``.
    """
    context = RunContext.of(progress, on_build, workers=workers)
    return Report.from_finding(engine.run(model, config or CompileConfig(), options or Options(search=DEFAULT_SEARCHES),
                                          context, engine.Steps("search", bisect=False, every_search=True)))


def range_check(model, config: Optional[CompileConfig] = None, options: Optional[Options] = None):
    """The static range check (``numguard check``): which operators of the model,
    and of the module the pipeline's Relax passes make of it, can leave their
    domain or their dtype's range in the options' input range. Nothing is
    built or run.

    Args:
        model, config: as for ``bisect``.
        options: the input range (``low``/``high``/``ranges``); the rest is unused.

    Returns:
        A ``rangecheck.check.CheckResult``: the warnings of both functions, with their drivers.

    Raises:
        UsageError: bad input; BuildError when the pipeline fails before legalizing
        (PipelineBreaksError where a bisection names the pass that breaks it).
    """
    from ..judge.rangecheck.check import check
    from ..judge.framework.probe import EndsProbe
    from ..judge.rangecheck.indices import check_index_ranges
    from ..locate import resolve_ranges

    model = engine.as_model(model)
    options = options or Options()
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    check_index_ranges(model, ranges, EndsProbe(model, ranges) if options.framework else None)
    config = config or CompileConfig()
    try:
        return check(model, config, ranges)
    except BuildError:  # the pipeline fails before LegalizeOps: which pass breaks it
        engine.diagnose_build(model, config)
        raise
