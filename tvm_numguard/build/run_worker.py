"""Runs of this process's builds in a worker: a GPU target's, since numguard's
own process must never initialize the device.

A process forked after CUDA was initialized cannot use it
(cudaErrorInitializationError), and numguard's workers are forked. So where
``Workers.runs_in_workers`` is set (engine sets it for a GPU target), this
process still compiles (compiling for CUDA loads nothing on a device: TVM's
``CUDAModuleNode`` loads its kernels on a device lazily, on first call; nvrtc
compiles for the target's arch without asking the GPU) but runs nothing:
``Runs.run`` hands each run to ``RunWorker``.

``RunWorker`` keeps one worker forked from this process. A build is
registered the first time it is to run; the worker has every build registered
before it forked (inherited memory: nothing of a build is pickled, only the
inputs and the outputs), and keeps each one's VM, so the pipeline as written's
VM is made once however many inputs a search runs. A build registered after
the fork stops that worker and forks a new one (a bisection probe run here, a
fix's build): a fork and a VM each, no rebuild.

Limits: a run that crashes, hangs past the session's worker timeout or passes
the machine's memory is a ``RunFailure`` saying why (the worker is replaced
on the next run); builds registered stay alive as long as the session. A run
is waited for within the time limit the session's progress carries (a
guard's): past it, the worker is stopped (``STOPPED_AT_LIMIT``).

The guard runs its builds here too wherever it has a time limit and may fork:
a first run makes the build's VM, which TVM may take minutes to make (float16
kernels on a CPU), and only a worker can be stopped in the middle of it.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional

import numpy as np

from ..base.progress import time_left
from .workers import ForkPool
from .workers import memory
from .tasks import RunFailure


class RunWorker:
    """Where a session (``session``) runs its builds when it runs none itself;
    ``timeout()``: a run's limit in seconds (None: none), read at each fork."""

    def __init__(self, session, timeout: Callable[[], Optional[float]]):
        self._session, self._timeout = session, timeout
        self._builds: dict = {}  # key -> Build registered to run
        self._keys: dict = {}  # id(Build) -> key (the Build is kept alive in _builds)
        self._pool: Optional[ForkPool] = None
        self._forked_with = 0  # the worker has the builds of the keys below this
        self.forks = 0

    def run(self, build, inputs: Mapping[str, np.ndarray]) -> tuple:
        """(outputs, seconds its VM took to make, seconds of the call) of
        ``build`` on ``inputs``, made in the worker; RunFailure where it fails."""
        key = self._keys.get(id(build))
        if key is None:
            key = self._keys[id(build)] = len(self._builds)
            self._builds[key] = build
        if self._pool is not None and key >= self._forked_with:
            self.stop()  # this worker forked before the build existed
        if self._pool is None:
            self._forked_with = len(self._builds)
            self._pool = ForkPool(self._in_worker, 1, memory.machine_bytes(), self._timeout())
            self.forks += 1
        # a run past the session's time limit is stopped there (Runs.run tells the limit)
        return self._pool.submit(_run_registered, key, inputs, lost=_lost).result(time_left(self._session.progress))

    def _in_worker(self) -> "RunWorker":
        """The pool's context factory, in the forked worker: its session runs here."""
        self._session.in_worker()
        self._pool = None  # the parent's pool is not the worker's to stop
        return self

    def run_here(self, key: int, inputs: Mapping[str, np.ndarray]) -> tuple:
        """In the worker: the registered build ``key`` run (``Runs.run_here``)."""
        return self._session.runs.run_here(self._builds[key], inputs)

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool = None


def _run_registered(worker: RunWorker, key: int, inputs: Mapping[str, np.ndarray]) -> tuple:
    return worker.run_here(key, inputs)


def _lost(why: str):
    raise RunFailure(why)
