"""The build service: worker processes that build and run configurations.

Skipping passes builds combinations nobody tested, and a compiler can crash on
them (LLVM's opt-bisect has the same history). Each such build runs in a
worker process: a worker killed by a signal, one still working after the
build timeout, or one past its share of the memory cap makes that
configuration *untestable* (the Attempt says why) and is replaced; the run goes
on. The pool is pebble's ProcessPool: it gives each task its own timeout, kills
and replaces a worker that hangs or dies and fails only that task's future
(``concurrent.futures`` breaks the whole pool on a dead worker and cannot time
out one task without reaching into its private process list).

Workers are forked from the numguard process once the session is prepared, so
each has the model, the pipeline and the builds made so far (see ``tasks``).
A session whose recorded state changes asks for a fresh pool (``generation``).
Where ``fork`` is not available, builds run in-process (``Workers.mode``).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import gc
import itertools
import multiprocessing
import os
import signal
import sys
import weakref
from typing import Optional

from ..errors import UsageError
from . import memory
from ..quiet import stderr_to_devnull
from .tasks import Attempt

IN_PROCESS, WORKERS = "in-process", "workers"
MIN_TIMEOUT = 60.0  # seconds: the default build timeout is never shorter ...
TIMEOUT_FACTOR = 10.0  # ... nor shorter than this many times the recorded build and run


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


@dataclasses.dataclass(frozen=True)
class Workers:
    """How builds are made: ``jobs`` worker processes (0: in this process),
    each build given ``build_timeout`` seconds (None: scaled from the recorded
    build), the workers' private memory together under ``max_memory`` bytes
    (None: DEFAULT_SHARE of the machine)."""

    jobs: Optional[int] = None  # None: one per core
    build_timeout: Optional[float] = None
    max_memory: Optional[int] = None

    def __post_init__(self):
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 0):
            raise UsageError(f"--jobs must be a whole number >= 0 (0 builds in this process), got {self.jobs!r}")
        if self.build_timeout is not None and not self.build_timeout > 0:
            raise UsageError(f"--build-timeout must be a positive number of seconds, got {self.build_timeout!r}")
        if self.max_memory is not None and not self.max_memory > 0:
            raise UsageError(f"--max-memory must be positive, got {self.max_memory!r}")

    @property
    def count(self) -> int:
        return available_cores() if self.jobs is None else self.jobs

    @property
    def mode(self) -> str:
        return WORKERS if self.count > 0 and can_fork() else IN_PROCESS

    @property
    def memory_cap(self) -> int:
        return self.max_memory or memory.default_max_memory()

    def timeout_for(self, build_seconds: float, run_seconds: float) -> float:
        if self.build_timeout is not None:
            return float(self.build_timeout)
        return max(MIN_TIMEOUT, TIMEOUT_FACTOR * (build_seconds + run_seconds))


class Pending:
    """An Attempt on its way: ``result()`` waits for it. ``remote``: made in a
    worker (the session counts it once, when it is first taken: ``counted``);
    ``skip``: the skip set it builds, for what ``on_build`` shows."""

    def __init__(self, future=None, compute=None, timeout: float = 0.0, cap: int = 0):
        self._future, self._compute, self._attempt = future, compute, None
        self.timeout, self.cap = timeout, cap
        self.remote = future is not None
        self.skip: frozenset = frozenset()
        self.counted = False

    def done(self) -> bool:
        return self._attempt is not None or (self._future is not None and self._future.done())

    def cancel(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.cancel()

    def result(self) -> Attempt:
        if self._attempt is None:
            self._attempt = self._compute() if self._future is None else self._await()
        return self._attempt

    def _await(self) -> Attempt:
        attempt, why = await_worker(self._future, self.timeout, self.cap)
        return attempt if why is None else Attempt(untestable=why)


def await_worker(future, timeout: float, cap: int) -> tuple:
    """(the task's answer, None), or (None, why its worker gave none: timed
    out, cancelled, or ``died``)."""
    from pebble import ProcessExpired

    try:
        return future.result(), None
    except concurrent.futures.TimeoutError:
        return None, f"timed out: still working after {timeout:.0f} s (--build-timeout); the worker was stopped"
    except concurrent.futures.CancelledError:
        return None, "cancelled"
    except ProcessExpired as err:
        return None, died(err.exitcode, cap)


def died(exitcode: Optional[int], cap: int) -> str:
    """Why a worker that ended without an answer ended, in words."""
    if exitcode == memory.OUT_OF_MEMORY_EXIT:
        return (f"out of memory: the worker passed its share of --max-memory ({cap // memory.MIB} MiB) "
                "and was stopped")
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the worker crashed: killed by {name} while building or running this configuration"
    return f"the worker crashed: it exited with code {exitcode} without an answer"


# Worker processes find their session here: the service registers it before
# the pool forks, so every worker (and every replacement) inherits the entry;
# the entry goes when the service stops.
_SESSIONS: dict = {}
_TOKENS = itertools.count()
_WATCHDOG: list = []  # in a worker: its memory watchdog


def start_worker(cap: int) -> None:
    """A pool's initializer: in a forked worker, before its first task."""
    # what the worker inherited is left out of its garbage collections: a collection
    # writes to every object it scans, which copies the parent's pages into the
    # worker's private memory (the more the parent holds, the more), counted
    # against its share of --max-memory
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # a crashing build's backtrace (TVM prints one on SIGSEGV) is not the user's to read:
    # the parent reports the signal; the build's own errors come back in the Attempt
    stderr_to_devnull()
    _WATCHDOG[:] = [memory.Watchdog(cap).start()]


def _work(token: int, task) -> Attempt:
    session = _SESSIONS[token]
    # this worker's copy of the session reports nothing: its parent counts and shows the Attempt
    session.on_build, session.progress = None, (lambda message: None)
    attempt = task.run(session)
    attempt.peak_private_bytes = worker_peak_bytes()
    return attempt


def worker_peak_bytes() -> int:
    """In a worker: the most private memory it has held so far (0 elsewhere)."""
    if not _WATCHDOG:
        return 0
    _WATCHDOG[0].sample()
    return _WATCHDOG[0].peak


def worker_share(workers: Workers) -> int:
    """One worker's share of the memory cap: the workers' private memory
    together stays under what the cap leaves this (the parent) process."""
    return max(64 * memory.MIB, (workers.memory_cap - memory.resident_bytes()) // workers.count)


def fork_pool(jobs: int, cap: int):
    """A pebble ProcessPool of ``jobs`` workers forked from this process, each
    started by ``start_worker`` (memory watchdog at ``cap``)."""
    from pebble import ProcessPool

    sys.stdout.flush()
    sys.stderr.flush()  # a fork copies unflushed buffers, which the worker would write again
    return ProcessPool(max_workers=jobs, initializer=start_worker, initargs=(cap,),
                       context=multiprocessing.get_context("fork"))


class BuildService:
    """A pool of ``jobs`` (default ``workers.count``) forked workers for one
    session, each stopped past ``cap`` bytes (default: a worker's share of
    the memory cap); ``timeout`` None: none."""

    def __init__(self, session, workers: Workers, timeout: Optional[float], generation: int = 0,
                 jobs: Optional[int] = None, cap: Optional[int] = None):
        self.workers, self.timeout, self.generation = workers, timeout, generation
        self.jobs = workers.count if jobs is None else jobs
        self.cap = worker_share(workers) if cap is None else cap
        self.token = next(_TOKENS)
        _SESSIONS[self.token] = session
        self._pool = fork_pool(self.jobs, self.cap)
        self._stopper = weakref.finalize(self, _stop, self._pool, self.token)

    def submit(self, task) -> Pending:
        future = self._pool.schedule(_work, args=(self.token, task), timeout=self.timeout)
        return Pending(future, timeout=self.timeout, cap=self.cap)

    def stop(self) -> None:
        self._stopper()


def _stop(pool, token: int) -> None:
    pool.stop()
    pool.join()
    _SESSIONS.pop(token, None)


def in_process(task, session) -> Pending:
    """``task`` run in this process when its result is asked for."""
    return Pending(compute=lambda: task.run(session))
