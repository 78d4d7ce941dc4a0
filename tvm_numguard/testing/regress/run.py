"""``regress``: every pass under test on every model of a corpus, one row each.

Rows run in forked worker processes (``jobs``; 0: in this process), one
(pass, model) per task, on pebble's ProcessPool like the build service: a
model whose build kills or hangs its worker is one untestable row, and the run
goes on. Every worker is forked from this process after the passes were
resolved, so TVM is imported once per command, and pass objects (the pytest
route's) need no pickling. Rows come back in the order asked, whatever the
order they finished in, so the result does not depend on ``jobs``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import shutil
import tempfile
from typing import Callable, Optional, Sequence

from ...base.progress import Progress, silent
from ...report.schemas import header
from ...build.workers import WORKERS, ForkPool, Workers
from ...build.workers.pool import await_worker, worker_peak_bytes, worker_share
from .corpus import CorpusModel
from .row import VERDICTS, RegressRow, RowRequest, judge_model

# exit codes of ``numguard regress`` (documented in the README and in `numguard regress --help`)
# (3 is every command's internal error)
EXIT_CLEAN, EXIT_VIOLATION, EXIT_ERROR, EXIT_NOT_CHANGED = 0, 1, 2, 4
ROW_TIMEOUT = 900.0  # seconds one (pass, model) row may take before it is untestable (--build-timeout)


@dataclasses.dataclass
class RegressRun:
    """Every row of a regress run, in (pass, model) order, and what they add up to."""

    passes: list  # the passes under test, as their bracketed specs
    models: list  # CorpusModel
    rows: list  # RegressRow
    require_changed: int = 1
    jobs: int = 0
    requests: list = dataclasses.field(default_factory=list)  # RowRequest per pass (what `reduce` rebuilds)

    def rows_of(self, spec: str) -> list:
        return [r for r in self.rows if r.pass_spec == spec]

    def changed_count(self, spec: str) -> int:
        return sum(1 for r in self.rows_of(spec) if r.changed)

    @property
    def violations(self) -> list:
        return [r for r in self.rows if r.attributed]

    @property
    def errors(self) -> list:
        return [r for r in self.rows if r.verdict == "error"]

    @property
    def under_changed(self) -> list:
        """The passes that changed fewer than ``require_changed`` models (they proved little)."""
        return [p for p in self.passes if self.changed_count(p) < self.require_changed]

    @property
    def exit_code(self) -> int:
        """1: a violation of a pass's own; else 2: a tool error on some model;
        else 4: a pass changed fewer than ``require_changed`` models; else 0."""
        if self.violations:
            return EXIT_VIOLATION
        if self.errors:
            return EXIT_ERROR
        if self.under_changed:
            return EXIT_NOT_CHANGED
        return EXIT_CLEAN

    def summary(self) -> dict:
        counts = {p: {v: 0 for v in VERDICTS} for p in self.passes}
        for row in self.rows:
            counts[row.pass_spec][row.verdict] += 1
        return {p: {"models": len(self.rows_of(p)), "changed": self.changed_count(p), **counts[p]} for p in self.passes}

    def to_json(self) -> dict:
        return {**header("regress"), "passes": list(self.passes), "jobs": self.jobs,
                "require_changed": self.require_changed, "exit_code": self.exit_code,
                "summary": self.summary(), "models": [m.to_json() for m in self.models],
                "requests": [{"pass": r.config.under_test, "config": r.config.to_json(),
                              "tolerance": r.options.tolerance.to_json()} for r in self.requests],
                "rows": [r.to_json() for r in self.rows]}


def regress(requests: Sequence[RowRequest], models: Sequence[CorpusModel], workers: Optional[Workers] = None,
            progress: Progress = None, on_row: Optional[Callable[[RegressRow], None]] = None,
            require_changed: int = 1, row_timeout: float = ROW_TIMEOUT, cluster: Optional[str] = None) -> RegressRun:
    """Check each request's pass on each model; ``on_row`` sees each row as it
    finishes (in finishing order); the run's rows are in (pass, model) order.
    ``cluster``: a Dask scheduler address: the rows run there (cluster.py)."""
    progress = progress or silent
    workers = workers or Workers()
    tasks = list(itertools.product(range(len(requests)), range(len(models))))
    where = (f", on the cluster at {cluster}" if cluster else f", {workers.count} worker(s)"
             if workers.mode == WORKERS else ", in this process")
    progress(f"judging {len(requests)} pass(es) on {len(models)} model(s): {len(tasks)} rows{where}")
    workdir = tempfile.mkdtemp(prefix="numguard_regress_")
    report = _reporter(progress, on_row, len(tasks))
    try:
        if cluster:
            from .cluster import rows_on_cluster

            rows = rows_on_cluster(cluster, requests, models, tasks, report, _lost)
        elif workers.mode == WORKERS:
            rows = _in_workers(requests, models, tasks, workers, workdir, row_timeout, report)
        else:
            rows = []
            for i, j in tasks:
                rows.append(judge_model(requests[i], models[j], workdir))
                report(rows[-1])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    specs = [r.config.under_test for r in requests]
    return RegressRun(specs, list(models), rows, require_changed, workers.count if workers.mode == WORKERS else 0,
                      list(requests))


def _reporter(progress: Callable[[str], None], on_row, total: int):
    done = [0]

    def report(row: RegressRow) -> None:
        done[0] += 1
        progress(f"[{done[0]}/{total}] {row.pass_spec} on {row.model}: {row.verdict}"
                 + (f" ({row.reason})" if row.reason and row.verdict != "clean" else ""))
        if on_row is not None:
            on_row(row)

    return report


def _work(run: tuple, i: int, j: int) -> RegressRow:
    """In a worker: the row of request ``i`` on model ``j`` (``run``: what the worker inherited)."""
    requests, models, workdir = run
    row = judge_model(requests[i], models[j], workdir)
    row.peak_private_bytes = worker_peak_bytes()
    return row


def _in_workers(requests, models, tasks, workers: Workers, workdir: str, row_timeout: float, report) -> list:
    run = (list(requests), list(models), workdir)
    cap = worker_share(workers)
    pool = ForkPool(lambda: run, workers.count, cap, row_timeout)
    try:
        futures = {pool.schedule(_work, i, j): k for k, (i, j) in enumerate(tasks)}
        rows: list = [None] * len(tasks)
        for future in concurrent.futures.as_completed(futures):
            k = futures[future]
            i, j = tasks[k]
            try:
                rows[k], why = await_worker(future, row_timeout, cap)
                if why is not None:
                    rows[k] = _lost(requests[i], models[j], why)
            except Exception as err:  # noqa: BLE001 - the answer did not come back: a tool error, the run goes on
                rows[k] = _lost(requests[i], models[j], f"numguard failed: {type(err).__name__}: {err}", "error")
            report(rows[k])
        return rows
    finally:
        pool.stop()


def _lost(request: RowRequest, model: CorpusModel, why: str, verdict: str = "untestable") -> RegressRow:
    """The row of a task whose worker ended without an answer: untestable, with why."""
    return RegressRow(request.config.under_test or "?", model.name, verdict=verdict, reason=why)
