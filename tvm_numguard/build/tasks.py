"""A session's attempts: builds that may crash, what a worker is asked and answers.

A task names a configuration of the session's model (a skip set, or an IR
snapshot by the event that produced it) and the inputs to run it on. The
``BuildService`` runs tasks in workers forked from the numguard process
(``workers.ForkPool``), so the model, the pipeline (pass objects included: a
guarded user's closures and ``__main__`` classes) and the builds made so far
are the worker's own already; nothing is pickled but the task and its answer.
(TVM 0.27's ``tvm.ir.save_json`` crashes on a Relax module with constants, so
an IRModule could not be shipped to a fresh process anyway.) A task types
against ``Builder``, the few things of a session it uses.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Protocol

from ..base.errors import summarize_error
from .workers import ForkPool, Pending, Workers
from .workers.pool import worker_peak_bytes, worker_share
from .workers.share import PIPELINE, PLAIN, RunShare

INPUT_MODULE = ""  # ModuleRun's name for the model's own module (before any pass)


@dataclasses.dataclass
class Attempt:
    """A configuration built and run on each input set, or why it could not be.

    ``outputs``: one list of output arrays per input set, None when untestable;
    ``untestable``: why (does not build, does not run, the worker was killed by
    a signal, timed out, ran out of memory).
    ``events``/``trace``: what the build ran (the gate's BISECT lines).
    """

    outputs: Optional[list] = None
    untestable: Optional[str] = None
    seconds: float = 0.0  # compile time
    events: list = dataclasses.field(default_factory=list)
    trace: list = dataclasses.field(default_factory=list)
    peak_private_bytes: int = 0  # the most private memory its worker held (0 in-process)

    @property
    def ok(self) -> bool:
        return self.outputs is not None

    @classmethod
    def lost(cls, why: str) -> "Attempt":
        """The Attempt of a task whose worker gave no answer."""
        return cls(untestable=why)


class Builder(Protocol):
    """What a task uses of a session (in a worker, the worker's copy of it)."""

    def build_or_known(self, skip: frozenset, fingerprint: bool, lazy: bool): ...

    def build_module(self, mod): ...

    def snapshot(self, event: str): ...

    @property
    def reference(self): ...

    def run(self, build, inputs: Mapping) -> list: ...


class RunFailure(Exception):
    """A build that compiled but failed to run."""


@dataclasses.dataclass
class RemoteBuild:
    """What ``on_build`` sees of a build a worker made (no executable here)."""

    skip: frozenset
    attempt: Attempt

    @property
    def ok(self) -> bool:
        return self.attempt.ok or (self.attempt.untestable or "").startswith("does not run")

    @property
    def error(self) -> Optional[str]:
        return self.attempt.untestable

    @property
    def seconds(self) -> float:
        return self.attempt.seconds

    @property
    def trace(self) -> list:
        return self.attempt.trace


@dataclasses.dataclass(frozen=True)
class SkipRun:
    """The model built with the events ``skip`` names skipped, run on ``inputs``."""

    skip: frozenset
    inputs: tuple  # of {input name: array}
    share: Optional[str] = None  # a RunShare's directory: runs of builds that compiled alike are made once

    def run(self, session: Builder) -> Attempt:
        # shared runs are keyed by the fingerprint, known before the machine code: a build
        # whose every run is shared already is never linked (its verdict is that build's).
        # One with no inputs asks whether it builds: its machine code is made, since code
        # generation fails too (llvm: "unknown intrinsic tirx.atan" for float16)
        shared = self.share is not None
        build = session.build_or_known(self.skip, fingerprint=shared, lazy=shared and bool(self.inputs))
        attempt = Attempt(seconds=build.seconds, events=build.events, trace=build.trace)
        if not build.ok:
            attempt.untestable = f"does not build: {build.error}"
            return attempt
        try:
            attempt.outputs = _runs(session, PIPELINE, build, self.inputs, self.share)
        except RunFailure as err:  # a lazy build's link that failed is a build that failed
            attempt.untestable = f"does not run: {err}" if build.ok else f"does not build: {build.error}"
        attempt.seconds = build.seconds  # its link included, where it was made
        return attempt


@dataclasses.dataclass(frozen=True)
class ModuleRun:
    """An IR snapshot built alone with the plain lowering, run on ``inputs``:
    ``event`` names the recorded event whose output it is (INPUT_MODULE: the
    model's own module)."""

    event: str
    inputs: tuple
    share: Optional[str] = None  # as SkipRun's

    def run(self, session: Builder) -> Attempt:
        build = session.build_module(session.snapshot(self.event))
        attempt = Attempt(seconds=build.seconds)
        if not build.ok:
            attempt.untestable = build.error
            return attempt
        try:
            attempt.outputs = _runs(session, PLAIN, build, self.inputs, self.share)
        except Exception as err:  # a snapshot that builds but does not run alone
            attempt.untestable = summarize_error(err)
        return attempt


@dataclasses.dataclass(frozen=True)
class ReferenceRun:
    """The reference (every optional event skipped; built once per process,
    its machine code made at once) run on ``inputs``, which may be none: a
    worker forked before the pipeline as written was built can make it, since
    the gate decides which events are optional as they come."""

    inputs: tuple

    def run(self, session: Builder) -> Attempt:
        build = session.reference
        attempt = Attempt(seconds=build.seconds, events=build.events, trace=build.trace)
        if not build.ok:
            attempt.untestable = f"does not build: {build.error}"
            return attempt
        try:
            if not self.inputs:  # a held worker's first task: the machine code now, before an input asks for it
                build.vm()
            attempt.outputs = [session.run(build, x) for x in self.inputs]
        except Exception as err:  # RunFailure, or TVM's own error making the VM
            attempt.untestable = f"does not run: {summarize_error(err)}"
        return attempt


def _runs(session: Builder, kind: str, build, inputs: tuple, share: Optional[str]) -> list:
    """``build``'s outputs on each of ``inputs``, through the share when there is one."""
    if share is None:
        return [session.run(build, x) for x in inputs]
    return RunShare(share).run(kind, build, inputs, session.run)


class Started:
    """An Attempt on its way (a ``workers.Pending``), with what the session
    counts of it: ``skip``, the skip set it builds (for what ``on_build``
    shows); a worker's build is counted once, when first taken."""

    def __init__(self, pending: Pending, skip: frozenset = frozenset()):
        self.pending, self.skip, self._counted = pending, skip, False

    def first_taken(self) -> bool:
        """True the first time a worker's Attempt is taken (to count it), False after and in-process."""
        first = self.pending.remote and not self._counted
        self._counted = True
        return first

    @property
    def remote(self) -> bool:
        return self.pending.remote

    def done(self) -> bool:
        return self.pending.done()

    def cancel(self) -> None:
        self.pending.cancel()

    def result(self, within: Optional[float] = None) -> Attempt:
        """The Attempt; ``within``: seconds to wait for a worker's (``Pending.result``)."""
        return self.pending.result(within)


def in_process(task, session: Builder, skip: frozenset = frozenset()) -> Started:
    """``task`` run in this process when its result is asked for."""
    return Started(Pending(compute=lambda: task.run(session)), skip)


class BuildService:
    """A session's pool of ``jobs`` (default ``workers.count``) forked
    workers, each stopped past ``cap`` bytes (default: a worker's share of the
    memory cap); a task past ``timeout`` seconds (None: none) is untestable.
    ``generation``: what the session's state was when the workers forked."""

    def __init__(self, session, workers: Workers, timeout: Optional[float], generation: int = 0,
                 jobs: Optional[int] = None, cap: Optional[int] = None):
        self.timeout, self.generation = timeout, generation
        jobs = workers.count if jobs is None else jobs
        self._pool = ForkPool(session.in_worker, jobs, worker_share(workers) if cap is None else cap, timeout)

    def submit(self, task, skip: frozenset = frozenset()) -> Started:
        return Started(self._pool.submit(_attempt, task, lost=Attempt.lost), skip)

    def stop(self) -> None:
        self._pool.stop()


def _attempt(session: Builder, task) -> Attempt:
    attempt = task.run(session)
    attempt.peak_private_bytes = worker_peak_bytes()
    return attempt
