"""A shadow session: one model, one configuration, every build made of it.

The session owns the optimized build (the pipeline as written), the reference
build (every optional event skipped), any build a bisection asks for and the
plain builds of IR snapshots a trace measures. In worker mode the reference can
be held by a worker of its own (``hold_reference``): it builds while this
process builds the pipeline as written, and runs beside it. Every compile goes through it:
it closes a skip set over the catalog's dependencies itself, memoizes builds
by everything that changes them (the closed skip set, the instruments, whether
snapshots were recorded or a fingerprint taken; a module's structure for
snapshot builds) and counts each compile it really made.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Mapping, NamedTuple, Optional

import numpy as np

from ..errors import BuildError, PipelineBuildError, UsageError
from ..instrument import close_skip_set, is_required
from ..pipeline import CompileConfig
from .build import Build, compile_model, compile_plain, optional_events, run_build, summarize_error
from ..search.sampling import Observation
from .compare import Comparison, Tolerance, compare_outputs, differences, is_finite_outputs
from ..workers import WORKERS, BuildService, Pending, Workers, in_process
from .constancy import ConstancyWatch, same_bytes
from .reference import Reference
from ..workers.info import UntestableBuild, WorkerInfo
from ..workers.tasks import RemoteBuild
from ..workers.memory import MIB
from ..workers.share import PIPELINE, RunShare

Progress = Callable[[str], None]


class RunFailure(Exception):
    """A build that compiled but failed to run."""


class BestSeen(NamedTuple):
    """The best-scored input a session observed, and its runs."""

    score: float
    reference: Pending  # the reference's run on it
    optimized: tuple  # (optimized build, inputs, outputs), as ``optimized_outputs`` remembers runs


class ShadowSession:
    def __init__(
        self,
        model,
        config: CompileConfig,
        tol: Tolerance = Tolerance(),
        progress: Optional[Progress] = None,
        on_build: Optional[Callable[[Build], None]] = None,
        workers: Optional[Workers] = None,
    ):
        self.model = model
        self.workers = workers or Workers(jobs=0)
        self._service: Optional[BuildService] = None
        self._share: Optional[RunShare] = None  # runs the attempts share (workers/share.py), made with the first
        self.reference_site = Reference(self)
        self._generation = 0  # bumped when what a forked worker inherits changes
        self.speculative_builds = 0  # builds made ahead of need and never asked for
        self.untestable: list = []  # UntestableBuild of every attempt taken that failed
        self.peak_worker_bytes = 0
        self.run_seconds = 0.0
        self.on_build = on_build
        self.config = config
        self.tol = tol
        self.progress = progress or (lambda message: None)
        self.builds: dict = {}
        self._module_builds: dict = {}  # structural hash -> Build (failed ones carry their error)
        self.build_count = 0
        self.build_seconds = 0.0
        self.optimized: Optional[Build] = None
        self.events: list = []
        self.optional: list = []
        self.recorded = False
        self._ref_runs: list = []  # (inputs, Pending ReferenceRun) of the last few input sets
        # the best-scored input's runs, remembered past the last few (the search's
        # witness is judged and reported after it)
        self._best: Optional[BestSeen] = None
        self._opt_outputs: list = []
        self.invalid_samples: list = []  # a few inputs on which the reference is not finite
        self.constancy = ConstancyWatch()

    # -- builds ---------------------------------------------------------
    def build(self, skip=frozenset(), record: bool = False, instruments=(), fingerprint: bool = False) -> Build:
        """The model built with the events ``skip`` names skipped (closed over the
        catalog's dependencies here: a caller names what it means to skip)."""
        skip = self.close(skip)
        key = (skip, tuple(instruments))  # TVM objects hash and compare by identity
        known = self.builds.get(key)
        # a recorded or fingerprinted build serves a request for less
        if known is None or (record and not known.events_recorded) or (fingerprint and known.fingerprint is None):
            known = self._compile(skip, record, instruments, fingerprint)
            if known.ok or key not in self.builds:
                self.builds[key] = known
        return known

    def _compile(self, skip: frozenset, record: bool, instruments, fingerprint: bool) -> Build:
        phase = self.optimized.relax_phase if self.optimized is not None else None
        # a skip set of TIR-phase events only runs the Relax phase the pipeline as written ran
        resume = phase if phase is not None and phase.serves(skip, record, instruments) else None
        build = compile_model(self.model.mod, self.config, skip, record=record, instruments=instruments,
                              fingerprint=fingerprint, resume=resume)
        self.count(build)
        return build

    def count(self, build: Build) -> None:
        """A compile made in this process: counted, and shown to ``on_build``."""
        self.build_count += 1
        self.build_seconds += build.seconds
        if self.on_build is not None:
            self.on_build(build)

    def build_module(self, mod) -> Build:
        """``mod`` (an IR snapshot of this model, or a module a guarded user made
        of it) built alone with the plain lowering, memoized by structure; a
        failed Build's ``error`` says why."""
        import tvm_ffi

        key = tvm_ffi.structural_hash(mod)
        if key not in self._module_builds:
            build = compile_plain(mod, self.config.make_target())
            self.count(build)
            self._module_builds[key] = build
        return self._module_builds[key]

    # -- attempts: builds that may crash, in worker processes ---------------
    @property
    def concurrency(self) -> int:
        """How many attempts can be under way at once (in-process: one, made when taken)."""
        return self.workers.count if self.workers.mode == WORKERS else 1

    def attempt(self, task) -> Pending:
        """Start ``task`` (a ``workers`` task: a skip set or a snapshot, run on
        inputs); ``take`` gives its Attempt. In worker mode a crash, hang or
        memory blow-up of the build is an untestable Attempt, not the end of the run."""
        skip = getattr(task, "skip", None)
        built = skip is not None and self.known_build(skip)
        # a build at hand only needs running; no worker rebuilds it
        remote = self.workers.mode == WORKERS and not (built and built.ok)
        task = dataclasses.replace(task, share=self.run_share().directory)
        pending = self.service().submit(task) if remote else in_process(task, self)
        pending.skip = skip or frozenset()
        return pending

    def known_build(self, skip) -> Optional[Build]:
        """The build of ``skip`` made so far in this process (failed or not), if any."""
        return self.builds.get((self.close(skip), ()))

    def run_share(self) -> RunShare:
        """Where attempts share the runs of builds that compiled alike; made
        with the runs of the pipeline as written that this process remembers."""
        if self._share is None:
            self._share = RunShare.create()
            remembered = self._opt_outputs + ([self._best.optimized] if self._best is not None else [])
            for build, inputs, outputs in remembered:
                self._share.put(RunShare.key(PIPELINE, build.fingerprint, inputs), outputs)
        return self._share

    def take(self, pending: Pending, what=None):
        """The Attempt of ``pending``, counted as a build of this session."""
        attempt = pending.result()
        if pending.remote and not pending.counted:
            pending.counted = True
            self.build_count += 1
            self.build_seconds += attempt.seconds
            self.peak_worker_bytes = max(self.peak_worker_bytes, attempt.peak_private_bytes)
            if self.on_build is not None:
                self.on_build(RemoteBuild(pending.skip, attempt))
        if not attempt.ok and what is not None:
            note = UntestableBuild(what, attempt.untestable)
            if note not in self.untestable:
                self.untestable.append(note)
        return attempt

    def service(self) -> BuildService:
        """The worker pool, forked now if there is none or the session changed since."""
        if self._service is not None and self._service.generation != self._generation:
            self.shutdown()
        if self._service is None:
            timeout = self.workers.timeout_for(self.optimized.seconds if self.optimized else 0.0, self.run_seconds)
            self._service = BuildService(self, self.workers, timeout, self._generation)
        return self._service

    def __enter__(self) -> "ShadowSession":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        if self._share is not None:
            self._share.remove()
            self._share = None

    def shutdown(self) -> None:
        """Stop the worker pool (a later attempt forks a new one) and the reference's worker."""
        if self._service is not None:
            self._service.stop()
            self._service = None
        self.reference_site.stop()

    def workers_info(self) -> WorkerInfo:
        """How builds were made, for the report's ``workers`` section."""
        service = self._service
        return WorkerInfo(self.workers.mode, self.concurrency,
                          None if service is None else round(service.timeout, 1),
                          self.workers.memory_cap // MIB, round(self.peak_worker_bytes / MIB, 1),
                          self.speculative_builds, list(self.untestable),
                          "worker" if self.reference_site.held else "in-process")

    def close(self, skip) -> frozenset:
        """``skip`` and every optional event that needs one of its events (the catalog's DEPENDS_ON)."""
        return close_skip_set(skip, self.optional) if self.optional else frozenset(skip)

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
        self._check_disabled(built=False)
        self.progress("building the optimized model (pipeline as written)")
        self.optimized = self.build(frozenset(), record=record, instruments=instruments, fingerprint=fingerprint)
        self.recorded = record
        self.events = self.optimized.events
        self.optional = optional_events(self.events)
        if not self.optimized.ok:
            raise PipelineBuildError(f"the pipeline '{self.config.pipeline}' does not build this model: "
                                     f"{self.optimized.error}")
        self._check_disabled(built=True)

    def _check_disabled(self, built: bool) -> None:
        """Every event the configuration disables is an optional event of its
        pipeline: before the build, by its name; after it, that it exists."""
        known = {e.id for e in self.events}
        for event_id in getattr(self.config, "disable", ()):
            if not built and "/" in event_id:
                raise UsageError(f"--disable {event_id}: the event is nested inside another pass (disable that one)")
            if not built and is_required(event_id.split("#")[0]):
                raise UsageError(f"--disable {event_id}: the pass is required (the build fails without it)")
            if built and event_id not in known:
                raise UsageError(f"--disable {event_id}: no such pass event in this pipeline "
                                 "('numguard passes' lists the event ids)")

    def hold_reference(self, workers: Optional[Workers] = None) -> None:
        """Before ``prepare_optimized``, in worker mode (the session's, or
        ``workers``: a guard whose other builds stay here): a worker of its own
        builds the reference meanwhile and runs it from then on (``shadow/reference.py``)."""
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
        build = self.build(frozenset(), record=True)
        if build.ok and [e.id for e in build.events] == [e.id for e in self.events]:
            self._generation += 1  # workers forked before lack the snapshots
            self.optimized = build
            self.events = build.events
            self.optional = optional_events(self.events)
        self.recorded = True

    @property
    def reference_skip(self) -> frozenset:
        return self.close(e.id for e in self.optional)

    # -- running --------------------------------------------------------
    def run(self, build: Build, inputs: Mapping[str, np.ndarray]) -> list:
        start = time.perf_counter()
        try:
            outputs = run_build(build, self.model.input_names(), inputs)
        except Exception as err:  # a VM error means: this build is unusable
            raise RunFailure(summarize_error(err)) from None
        self.run_seconds = max(self.run_seconds, time.perf_counter() - start)
        return outputs

    def reference_outputs(self, inputs: Mapping[str, np.ndarray]) -> list:
        """The reference's outputs; the last few input sets are remembered
        (a bisection asks for the witness's many times)."""
        return self._reference_result(self._reference_run(inputs))

    def _reference_run(self, inputs: Mapping[str, np.ndarray], again: bool = False) -> Pending:
        """The reference's run on ``inputs``: the remembered one, or (``again``:
        always) one started now in the held worker, or here when asked for."""
        if not again:
            if self._best is not None and self._best.optimized[1] is inputs:
                return self._best.reference
            for seen, pending in self._ref_runs:
                if seen is inputs:
                    return pending
        pending = self.reference_site.start(inputs)
        if not again:
            self._ref_runs = [(inputs, pending)] + self._ref_runs[:3]
        return pending

    def _reference_result(self, pending: Pending) -> list:
        self._reference_made()  # a reference that does not build says so, not that a run failed
        attempt = pending.result()
        self.peak_worker_bytes = max(self.peak_worker_bytes, attempt.peak_private_bytes)
        if not attempt.ok:
            raise BuildError(f"the reference build fails to run: {attempt.untestable}")
        return attempt.outputs[0]

    def optimized_outputs(self, inputs: Mapping[str, np.ndarray]) -> list:
        """The optimized build's outputs, the last few remembered (the search
        scores the witness, the report describes it: one run)."""
        remembered = self._opt_outputs + ([self._best.optimized] if self._best is not None else [])
        for build, seen, outputs in remembered:
            if build is self.optimized and seen is inputs:
                return outputs
        try:
            outputs = self.run(self.optimized, inputs)
        except RunFailure as err:
            raise BuildError(f"the optimized build fails to run: {err}") from None
        self._opt_outputs = [(self.optimized, inputs, outputs)] + self._opt_outputs[:3]
        if self._share is not None:
            self._share.put(RunShare.key(PIPELINE, self.optimized.fingerprint, inputs), outputs)
        return outputs

    def compare(self, build: Build, inputs: Mapping[str, np.ndarray]) -> Comparison:
        """Compare ``build`` with the reference on ``inputs``."""
        out = self.optimized_outputs(inputs) if build is self.optimized else self.run(build, inputs)
        return self.compare_outputs(out, inputs)

    def compare_outputs(self, outputs: list, inputs: Mapping[str, np.ndarray]) -> Comparison:
        """Compare ``outputs`` (of some build, on ``inputs``) with the reference's."""
        return compare_outputs(self.reference_outputs(inputs), outputs, self.tol)

    def evaluate(self, inputs: Mapping[str, np.ndarray]) -> Optional[float]:
        """Score of the optimized build on ``inputs``; None when the reference is not finite."""
        return self.observe(inputs).score

    def observe(self, inputs: Mapping[str, np.ndarray]) -> Observation:
        """The score with the values behind it (for searches that aim at one element)."""
        started = self._reference_run(inputs)
        # the held worker runs the reference while this process runs the optimized build
        opt = self.optimized_outputs(inputs) if started.remote else None
        ref = self._reference_result(started)
        if not is_finite_outputs(ref):
            if len(self.invalid_samples) < 2:
                self.invalid_samples.append(inputs)
            return Observation(None)
        self.constancy.note(inputs, ref)
        opt = opt if opt is not None else self.optimized_outputs(inputs)
        comparison = compare_outputs(ref, opt, self.tol)
        score = math.inf if math.isnan(comparison.score) else comparison.score
        if self._best is None or score > self._best.score:
            self._best = BestSeen(score, started, (self.optimized, inputs, opt))
        if any(np.shape(r) != np.shape(o) for r, o in zip(ref, opt)):
            return Observation(comparison.score)
        pairs = [differences(r, o) for r, o in zip(ref, opt)]
        return Observation(comparison.score,
                           np.concatenate([p[0].ravel() for p in pairs]) if pairs else np.zeros(0),
                           np.concatenate([p[2].ravel() for p in pairs]) if pairs else np.zeros(0))

    @property
    def outputs_constant(self) -> bool:
        """The reference gave the very same outputs on every valid input observed,
        and those inputs were not all the same."""
        return self.constancy.outputs_constant

    def deterministic(self, inputs: Mapping[str, np.ndarray]) -> bool:
        """Do the optimized build and the reference each give bit-identical
        outputs when run on ``inputs`` again? A run remembered from the search
        is the first of each pair (on a big CNN a run costs seconds); a held
        reference's second run goes on beside this process's."""
        first_ref = self._reference_run(inputs)
        second_ref = self._reference_run(inputs, again=True)
        first, second = self.optimized_outputs(inputs), self.run(self.optimized, inputs)
        same = all(same_bytes(a, b) for a, b in zip(first, second))
        pairs = zip(self._reference_result(first_ref), self._reference_result(second_ref))
        return all(same_bytes(a, b) for a, b in pairs) and same

    def timing(self) -> dict:
        return {"builds": self.build_count, "build_seconds": round(self.build_seconds, 3)}
