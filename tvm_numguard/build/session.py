"""A build session: one model, one configuration, every build made of it.

The session owns the optimized build (the pipeline as written), the reference
build (every optional event skipped), any build a bisection asks for and the
plain builds of IR snapshots a trace measures. It closes a skip set over the
catalog's dependencies itself and prepares the two builds; the work is its
collaborators', one job each: ``memo.BuildMemo`` (builds made here, memoized
and counted), ``attempts.Attempts`` (builds that may crash, in worker
processes), ``runs.Runs`` (runs on inputs, remembered, compared) and
``reference.Reference`` (where the reference is built and run: in worker
mode, a worker of its own builds it while this process builds the pipeline as
written, and runs it beside it).

A session is made with its run's context (``RunContext``): what a run reports
to and where its builds are made, with one default each.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Mapping, Optional

import numpy as np

from ..base.errors import BuildError, PipelineBuildError, UsageError, named
from ..ir.instrument import close_skip_set, is_required
from ..ir.pipeline import CompileConfig
from ..base.progress import Progress, afford, silent, stopped_at_limit, time_left, waiting
from ..ir.relax_ir import output_float_history
from .workers import Workers
from .workers.pool import STOPPED_AT_LIMIT
from .attempts import Attempts, WorkerInfo
from .compile import Build, optional_events
from ..base.tolerance import Tolerance
from .compile import BuildRequest
from .kernel_cache import KernelCache
from .memo import BuildMemo
from .reference import Reference
from .run_worker import RunWorker
from .runs import Runs
from .tasks import INPUT_MODULE, RunFailure, Started

__all__ = ["RunContext", "RunFailure", "BuildSession"]


@dataclasses.dataclass(frozen=True)
class RunContext:
    """The hooks of one run and its workers.

    ``progress(message)`` sees phase messages and details (``progress.Detail``);
    ``on_build(build)`` sees every compile (a ``Build``, or a worker's
    ``RemoteBuild``); ``on_witness(inputs)`` sees a violation's witness as
    soon as it is known, before bisection (a report writer keeps it even if
    the run is stopped); ``workers``: where builds that may crash are made
    (default: one worker process per core).
    """

    progress: Callable[[str], None] = silent
    on_build: Optional[Callable] = None
    on_witness: Optional[Callable[[dict], None]] = None
    workers: Workers = Workers()

    @classmethod
    def of(cls, progress: Progress = None, on_build: Optional[Callable] = None,
           on_witness: Optional[Callable[[dict], None]] = None, workers: Optional[Workers] = None) -> "RunContext":
        """A context from a caller's optional hooks (None: the default)."""
        return cls(progress or silent, on_build, on_witness, workers or Workers())

    def in_process(self) -> "RunContext":
        """The same hooks, every build made in this process."""
        return dataclasses.replace(self, workers=Workers(jobs=0))

    def quiet(self) -> "RunContext":
        """The same workers, no hooks (a worker's: its parent reports)."""
        return RunContext(workers=self.workers)


class BuildSession:
    """One model and configuration; ``context``: its hooks and workers."""

    def __init__(self, model, config: CompileConfig, tol: Tolerance = Tolerance(),
                 context: RunContext = RunContext()):
        # an output is judged at the precision of the narrowest float its value passed through
        tol = tol.through(output_float_history(model.mod))
        self.model, self.config, self.tol = model, config, tol
        self.context = context
        self.kernels = KernelCache()  # every build's kernels, compiled once (forked workers start with a copy)
        self.memo = BuildMemo(model.mod, config, context.on_build, self.kernels)
        self.attempts = Attempts(self, context.workers)
        self.reference_site = Reference(self)
        self.runs = Runs(model.input_names(), tol, self.reference_site.start, self._reference_made, self.attempts,
                         lambda: self.progress)
        if context.workers.runs_elsewhere:  # a GPU target's: this process never initializes the device
            self.runs.elsewhere = RunWorker(self, self._worker_timeout)
        self.optimized: Optional[Build] = None
        self.events: list = []
        self.optional: list = []
        self.recorded = False

    @property
    def progress(self):
        return self.context.progress

    @property
    def workers(self):
        return self.context.workers

    @property
    def built(self) -> Build:
        """The optimized build: ``prepare_optimized`` makes it before any step reads it."""
        assert self.optimized is not None, "the optimized build is read before prepare_optimized made it"
        return self.optimized

    def in_worker(self) -> "BuildSession":
        """A pool's context factory, called in a forked worker: this copy
        reports nothing (its parent counts and shows its Attempts)."""
        self.context = self.context.quiet()
        self.memo.silence()
        self.runs.elsewhere = None  # the worker is where runs are made
        return self

    # -- builds ---------------------------------------------------------
    def build(self, skip=frozenset(), record: bool = False, instruments=(), fingerprint: bool = False,
              lazy: bool = False) -> Build:
        """The model built with the events ``skip`` names skipped (closed over the
        catalog's dependencies here: a caller names what it means to skip);
        ``lazy``: linked only when its executable is asked for (``BuildMemo.get``)."""
        phase = self.optimized.relax_phase if self.optimized is not None else None
        # a skip set of TIR-phase events only runs the Relax phase the pipeline as written ran
        return self.memo.get(BuildRequest(self.close(skip), tuple(instruments), record, fingerprint), phase, lazy)

    def build_or_known(self, skip, fingerprint: bool = False, lazy: bool = False) -> Build:
        """The build of ``skip`` made so far in this process, or made now."""
        return self.known_build(skip) or self.build(skip, fingerprint=fingerprint, lazy=lazy)

    def known_build(self, skip) -> Optional[Build]:
        """The build of ``skip`` made so far in this process (failed or not), if any."""
        return self.memo.known(self.close(skip))

    def build_module(self, mod) -> Build:
        """``mod`` (an IR snapshot of this model, or a module a guarded user made
        of it) built alone with the plain lowering, memoized by structure; a
        failed Build's ``error`` says why."""
        return self.memo.module(mod, self.config.make_target())

    def snapshot(self, event: str):
        """The module the recorded ``event`` made (INPUT_MODULE: the model's own)."""
        return self.model.mod if event == INPUT_MODULE else self.built.snapshots[event]

    @property
    def build_count(self) -> int:
        return self.memo.count

    def close(self, skip) -> frozenset:
        """``skip`` and every optional event that needs one of its events (the catalog's DEPENDS_ON)."""
        return close_skip_set(skip, self.optional) if self.optional else frozenset(skip)

    # -- attempts: builds that may crash, in worker processes ---------------
    @property
    def concurrency(self) -> int:
        """How many attempts can be under way at once (in-process: one, made when taken)."""
        return self.attempts.concurrency

    def attempt(self, task) -> Started:
        """Start ``task`` (a ``tasks`` task: a skip set or a snapshot, run on
        inputs); ``take`` gives its Attempt. In worker mode a crash, hang or
        memory blow-up of the build is an untestable Attempt, not the end of the run."""
        skip = getattr(task, "skip", None)
        built = skip is not None and self.known_build(skip)  # a build at hand only needs running
        return self.attempts.start(task, built, self.runs.remembered, self._worker_timeout)

    def _worker_timeout(self) -> float:
        seconds = self.optimized.seconds if self.optimized else 0.0
        return self.workers.timeout_for(seconds, self.runs.run_seconds)

    def take(self, started: Started, what=None, skip: Optional[frozenset] = None, doing: Optional[str] = None,
             estimate: Optional[float] = None):
        """The Attempt of ``started``, counted as a build of this session
        (skipping ``skip``, default the one it was started with); a failed one
        is noted untestable as ``what`` (None: not noted). ``doing``: what the
        wait is for, said while it lasts (``progress.waiting``, with the
        ``estimate`` in seconds; None: the caller says it); a worker's is
        waited for within the time limit the progress carries, and stopped
        there (the limit's exception)."""
        with waiting(self.progress, doing, estimate) if doing else contextlib.nullcontext():
            attempt, first = self.attempts.taken(started, what, within=time_left(self.progress))
        if attempt.untestable == STOPPED_AT_LIMIT:
            stopped_at_limit(self.progress, doing or "a build in a worker")
        if first:
            self.memo.note_remote(started.skip if skip is None else skip, attempt)
        return attempt

    def __enter__(self) -> "BuildSession":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.attempts.close()

    def shutdown(self) -> None:
        """Stop the worker pool (a later attempt forks a new one) and the reference's worker."""
        self.attempts.stop()
        self.reference_site.stop()
        if self.runs.elsewhere is not None:
            self.runs.elsewhere.stop()

    def workers_info(self) -> WorkerInfo:
        """How builds were made, for the report's ``workers`` section."""
        return self.attempts.info(self.reference_site.held)

    def prepare(self, instruments=(), record: bool = True) -> None:
        """Build the pipeline as written (with ``instruments`` too: a guarded
        user's own) and the reference (at once, in worker mode: ``hold_reference``).
        Without ``record`` the first build keeps no hashes or snapshots
        (cheaper); ``ensure_recorded`` adds them."""
        self.hold_reference()
        self.prepare_optimized(instruments, record, fingerprint=True)  # attempts that build alike share its runs
        self.prepare_reference()

    def prepare_optimized(self, instruments=(), record: bool = True, fingerprint: bool = False) -> None:
        """The first half of ``prepare``: the pipeline as written (``fingerprint``:
        with ``Build.fingerprint``, what a verdict cache keys on)."""
        self.config.validate()
        self._validate_disabled(built=False)
        self.progress("building the optimized model (pipeline as written)")
        with waiting(self.progress, "TVM compiling the pipeline as written"):
            self.optimized = self.build(frozenset(), record=record, instruments=instruments, fingerprint=fingerprint)
        self.recorded = record
        self.runs.use(self.optimized)
        self.events = self.optimized.events
        self.optional = optional_events(self.events)
        if not self.optimized.ok:
            raise PipelineBuildError(f"the pipeline '{self.config.pipeline}' does not build this model: "
                                     f"{self.optimized.error}")
        self._validate_disabled(built=True)

    def _validate_disabled(self, built: bool) -> None:
        """Every event the configuration disables is an optional event of its
        pipeline: before the build, by its name; after it, that it exists."""
        known = {e.id for e in self.events}
        for event_id in self.config.disable:
            if not built and "/" in event_id:
                raise UsageError(f"{named('disable')} {event_id}: the event is nested inside another pass "
                                 "(disable that one)")
            if not built and is_required(event_id.split("#")[0]):
                raise UsageError(f"{named('disable')} {event_id}: the pass is required (the build fails without it)")
            if built and event_id not in known:
                raise UsageError(f"{named('disable')} {event_id}: no such pass event in this pipeline "
                                 "('numguard passes' lists the event ids)")

    def hold_reference(self, workers: Optional[Workers] = None) -> None:
        """Before ``prepare_optimized``, in worker mode (the session's, or
        ``workers``: a guard whose other builds stay here): a worker of its own
        builds the reference meanwhile and runs it from then on (``build/reference.py``)."""
        self.reference_site.hold(workers or self.workers)

    def prepare_reference(self) -> None:
        """The second half of ``prepare``: every optional event skipped. A held
        worker still making it is not waited for here: the reference's first
        run waits (this process makes the optimized build's VM meanwhile)."""
        self.progress(f"building the reference ({len(self.optional)} optional pass events skipped)")
        if not self.reference_site.building():
            self._reference_made()

    def _reference_made(self) -> None:
        error = self.reference_site.made(self.reference_skip)
        if error is not None:
            raise BuildError(f"the reference build (every optional pass skipped) fails: {error}")

    @property
    def reference(self) -> Build:
        """The reference build in this process. A held reference is made here
        only when asked for (for its executable: a guard that returns it)."""
        return self.reference_site.here()

    def ensure_recorded(self) -> None:
        """Rebuild the pipeline as written with hashes and snapshots, if the
        first build had none (which events changed the module, for bisection)."""
        if self.recorded:
            return
        self.progress("recording the pipeline's pass events")
        afford(self.progress, self.built.seconds, "recording the pipeline's pass events (a build)")
        with waiting(self.progress, "TVM compiling the pipeline as written again, recording its passes",
                     self.built.seconds):
            # linked only if it is another executable: the same pipeline most likely makes the same one
            build = self.build(frozenset(), record=True, fingerprint=True, lazy=True)
        if build.ok and [e.id for e in build.events] == [e.id for e in self.events]:
            self.attempts.changed()  # workers forked before lack the snapshots
            if build.made_as(self.built):  # the build made stays, with its runs, VM and determinism
                self.built.take_record(build)
                self.memo.remember(frozenset(), self.built, replace=True)
            else:
                self.optimized = build
                self.runs.use(build)
            self.events = self.built.events
            self.optional = optional_events(self.events)
        self.recorded = True

    @property
    def reference_skip(self) -> frozenset:
        return self.close(e.id for e in self.optional)

    # -- running (the Builder protocol's; the rest is ``runs``') ----------
    def run(self, build: Build, inputs: Mapping[str, np.ndarray]) -> list:
        return self.runs.run(build, inputs)
