"""A pool of worker processes forked from this one: a task that crashes,
hangs or runs out of memory loses its answer, never the run.

Skipping passes builds combinations nobody tested, and a compiler can crash on
them (LLVM's opt-bisect has the same history). So builds (and regress's rows)
run in worker processes: a worker killed by a signal, one still working after
its task's timeout, or one past its share of the memory cap gives no answer
(``await_worker`` says why) and is replaced; the run goes on. The pool is
pebble's ProcessPool: it gives each task its own timeout, kills and replaces a
worker that hangs or dies and fails only that task's future
(``concurrent.futures`` breaks the whole pool on a dead worker and cannot time
out one task without reaching into its private process list).

Workers are forked, so each inherits what its pool's owner holds (a session,
a regress run) without anything being pickled but the task and its answer:
``ForkPool`` registers a *context factory* before forking, and each worker
calls it once, before its first task, to get the object its tasks run
against. This package knows nothing of what the tasks do. Where ``fork`` is
not available, callers do the work in-process (``Workers.mode``).

A worker never outlives the numguard process that forked it. A parent that
ends in order stops its pools; one killed (SIGKILL, the OOM killer, a CI
runner's timeout) runs no code at all, and its workers, adopted by init, went
on compiling for minutes. So every worker asks the kernel to kill it when its
parent ends (Linux's parent-death signal, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``:
``die_with_parent``) as the first thing it does after the fork, and then checks
its parent is still the one that forked it: a parent that died before the
request was made sends no signal, and the worker ends itself.

The kernel sends the signal when the *thread* that forked the worker ends:
pebble forks a replacement worker from its pool-manager thread, which lives
as long as the pool, and a pool's workers are stopped with it anyway.

A worker also takes SIGTERM at its default, death at once (``stop_at_once``):
pebble's own handler runs only between Python bytecodes, so a worker in the
middle of a build ignored a stop for pebble's 3 s grace, and a Python handler
would write the signal's number to the wakeup fd it inherited from the CLI
(``cli.interrupt``), which the parent would read as its own SIGTERM.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import dataclasses
import gc
import itertools
import multiprocessing
import os
import signal
import sys
import weakref
from typing import Callable, Optional

from ...base.errors import UsageError
from . import memory
from ...base.quiet import stderr_to_devnull

IN_PROCESS, WORKERS = "in-process", "workers"
STOPPED_AT_LIMIT = "stopped at the time limit"  # why a task waited for ``within`` seconds gave no answer
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
    (None: DEFAULT_SHARE of the machine). ``runs_in_workers``: this process
    runs no build at all, even one it made (a GPU target's: a process that
    initialized CUDA cannot fork workers that use it), where it can fork."""

    jobs: Optional[int] = None  # None: one per core
    build_timeout: Optional[float] = None
    max_memory: Optional[int] = None
    runs_in_workers: bool = False

    def __post_init__(self):
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 0):
            raise UsageError(f"jobs must be a whole number >= 0 (0 builds in this process), got {self.jobs!r}",
                             "jobs")
        if self.build_timeout is not None and not self.build_timeout > 0:
            raise UsageError(f"build_timeout must be a positive number of seconds, got {self.build_timeout!r}",
                             "build_timeout")
        if self.max_memory is not None and not self.max_memory > 0:
            raise UsageError(f"max_memory must be positive, got {self.max_memory!r}", "max_memory")

    @property
    def count(self) -> int:
        return available_cores() if self.jobs is None else self.jobs

    @property
    def mode(self) -> str:
        return WORKERS if self.count > 0 and can_fork() else IN_PROCESS

    def for_target(self, gpu: bool) -> "Workers":
        """These workers for the builds of a GPU target (``gpu``) or not: the one
        rule of where a GPU build runs. Wherever this process forks workers,
        every run of a GPU build is made in one, since a process that initialized
        CUDA can fork no worker that uses it; with ``jobs=0`` (or no fork) nothing
        forks and the device is used here. A ``runs_in_workers`` already set
        stands, except where this process has initialized CUDA already (a
        caller's own GPU work, ``cuda_started_here``): then no worker forked now
        could use the device, so every build and run of a GPU target is made here."""
        from ...ir.targets import cuda_started_here  # here: targets imports TVM, which the CLI loads late

        if gpu and cuda_started_here():
            return dataclasses.replace(self, jobs=0, runs_in_workers=False)
        return dataclasses.replace(self, runs_in_workers=self.runs_in_workers or (gpu and self.mode == WORKERS))

    @property
    def runs_elsewhere(self) -> bool:
        """Whether every run of a build is made in a worker (``runs_in_workers``, where fork is)."""
        return self.runs_in_workers and can_fork()

    @property
    def memory_cap(self) -> int:
        return self.max_memory or memory.default_max_memory()

    def timeout_for(self, build_seconds: float, run_seconds: float) -> float:
        if self.build_timeout is not None:
            return float(self.build_timeout)
        return max(MIN_TIMEOUT, TIMEOUT_FACTOR * (build_seconds + run_seconds))


class Pending:
    """A task's answer on its way: ``result()`` waits for it. ``remote``: made
    in a worker; a worker that gave no answer gives ``lost(why)`` instead."""

    def __init__(self, future=None, compute=None, timeout: Optional[float] = 0.0, cap: int = 0,
                 lost: Optional[Callable[[str], object]] = None):
        self._future, self._compute, self._answer, self._lost = future, compute, None, lost
        self.timeout, self.cap = timeout, cap
        self.remote = future is not None

    def done(self) -> bool:
        return self._answer is not None or (self._future is not None and self._future.done())

    def cancel(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.cancel()

    def result(self, within: Optional[float] = None):
        """The answer; ``within``: seconds to wait for a worker's (None: as
        long as its task may take), past which the task is stopped and its
        answer is ``lost(STOPPED_AT_LIMIT)``."""
        if self._answer is None:
            self._answer = self._compute() if self._future is None else self._await(within)
        return self._answer

    def _await(self, within: Optional[float]):
        answer, why = await_worker(self._future, self.timeout, self.cap, within)
        assert self._lost is not None  # a Pending made in a worker is given its lost
        return answer if why is None else self._lost(why)


def await_worker(future, timeout: Optional[float], cap: int, within: Optional[float] = None) -> tuple:
    """(the task's answer, None), or (None, why its worker gave none: timed
    out, cancelled, stopped after ``within`` seconds of waiting (a caller's
    time limit: STOPPED_AT_LIMIT), or ``died``)."""
    from pebble import ProcessExpired

    try:
        return future.result(timeout=within), None
    except concurrent.futures.TimeoutError:
        if not future.done():  # the wait ran out, not the task's own timeout
            future.cancel()  # pebble stops the worker of a cancelled task
            return None, STOPPED_AT_LIMIT
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


# Workers find their pool's context factory here: a pool registers it before
# forking, so every worker (and every replacement) inherits the entry; each worker
# makes its context once (``_CONTEXTS``); the entry goes when the pool stops.
_FACTORIES: dict = {}
_CONTEXTS: dict = {}  # in a worker: the contexts it made
_TOKENS = itertools.count()
_WATCHDOG: list = []  # in a worker: its memory watchdog


def start_worker(cap: int, parent: int) -> None:
    """A pool's initializer: in a worker forked from ``parent`` (its pid), before its first task."""
    die_with_parent(parent)  # first: a parent killed now or later takes the worker with it
    stop_at_once()
    # what the worker inherited is left out of its garbage collections: a collection
    # writes to every object it scans, which copies the parent's pages into the
    # worker's private memory (the more the parent holds, the more), counted
    # against its share of --max-memory
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # a crashing build's backtrace (TVM prints one on SIGSEGV) is not the user's to read:
    # the parent reports the signal; the task's own errors come back in its answer
    stderr_to_devnull()
    _WATCHDOG[:] = [memory.Watchdog(cap).start()]


def _call(token: int, fn, args: tuple):
    if token not in _CONTEXTS:
        _CONTEXTS[token] = _FACTORIES[token]()
    return fn(_CONTEXTS[token], *args)


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
    started by ``start_worker`` (memory watchdog at ``cap``; killed by the
    kernel when this process ends)."""
    from pebble import ProcessPool

    sys.stdout.flush()
    sys.stderr.flush()  # a fork copies unflushed buffers, which the worker would write again
    return ProcessPool(max_workers=jobs, initializer=start_worker, initargs=(cap, os.getpid()),
                       context=multiprocessing.get_context("fork"))


class ForkPool:
    """``jobs`` workers forked from this process, each stopped past ``cap``
    bytes of private memory. ``context``: called once in each worker; a task
    ``submit(fn, *args)`` runs as ``fn(context, *args)`` there, within
    ``timeout`` seconds (None: no limit)."""

    def __init__(self, context: Callable[[], object], jobs: int, cap: int, timeout: Optional[float] = None):
        self.jobs, self.cap, self.timeout = jobs, cap, timeout
        self.token = next(_TOKENS)
        _FACTORIES[self.token] = context
        self._pool = fork_pool(jobs, cap)
        self._stopper = weakref.finalize(self, _stop, self._pool, self.token)

    def schedule(self, fn, *args):
        """The future of ``fn(context, *args)`` in a worker."""
        return self._pool.schedule(_call, args=(self.token, fn, args), timeout=self.timeout)

    def submit(self, fn, *args, lost: Callable[[str], object]) -> Pending:
        """``schedule``'s answer as a Pending; ``lost(why)`` if its worker gives none."""
        return Pending(self.schedule(fn, *args), timeout=self.timeout, cap=self.cap, lost=lost)

    def stop(self) -> None:
        self._stopper()


def _stop(pool, token: int) -> None:
    pool.stop()
    pool.join()
    _FACTORIES.pop(token, None)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """In a process just forked from the process ``parent`` (its pid): the
    kernel kills this one when that one ends; if it has ended already, this
    one ends now. Elsewhere than on Linux, the check alone."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request: no signal will come
        os.kill(os.getpid(), signal.SIGKILL)


def stop_at_once() -> None:
    """In a worker: SIGTERM ends it at once (the kernel's default, no Python
    handler), and the signal wakeup fd inherited from the parent is dropped."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
