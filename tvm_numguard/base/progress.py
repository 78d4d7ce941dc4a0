"""Progress messages from long work, and the time limit they may carry.

A ``Progress`` is any ``callable(message: str)``. Phase messages (building,
searching, bisecting) are plain strings; finer steps (every 25 evaluations,
each bisection probe) are ``Detail`` strings, so a front end can show phases
everywhere and details only where someone watches (a terminal, ``-v``).

No wait is silent: a step that waits on TVM (a build, a VM whose kernels'
machine code TVM generates, a run) or on a worker says nothing by itself for
minutes, so it runs inside ``waiting(progress, what, estimate)``, and a
thread of its own tells ``progress`` every ``HEARTBEAT_S`` seconds what it
still waits for, how long it has, and what that was expected to take (from
the builds and runs measured so far). Those lines are ``Heartbeat`` details.

A guard's progress (``guard.clock.Deadline``) also carries its time limit;
``time_left``, ``afford`` and ``stopped_at_limit`` ask it, and do nothing
for a progress without one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterator, Optional

Progress = Optional[Callable[[str], None]]

HEARTBEAT_S = 5.0  # a wait says what it waits for this often: no line is further apart than twice this


class Detail(str):
    """A progress message below phase level."""


class Heartbeat(Detail):
    """"Still waiting for ...": said from the thread of ``waiting``, never the main thread."""


def silent(message: str) -> None:
    """The progress callback of a caller who passed none."""


@contextlib.contextmanager
def waiting(progress: Progress, what: str, estimate: Optional[float] = None,
            every: float = HEARTBEAT_S) -> Iterator[None]:
    """Inside the block, ``progress`` hears every ``every`` seconds that the
    block still waits for ``what`` (``estimate``: the seconds it was planned to
    take, None where nothing measured says). A block shorter than ``every``
    says nothing; a wait inside another is said instead of it while it lasts."""
    if progress is None or progress is silent:
        yield
        return
    frame = (what, estimate, time.perf_counter())
    waits = getattr(_current, "waits", None)
    if waits is not None:
        waits.append(frame)
        try:
            yield
        finally:
            waits.pop()
        return
    _current.waits = waits = [frame]
    done = threading.Event()
    thread = threading.Thread(target=_beat, args=(progress, waits, every, done), name="numguard-heartbeat",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        _current.waits = None


# in a thread inside ``waiting``: its waits, the outermost first (the heartbeat says the innermost)
_current = threading.local()


def _beat(progress, waits: list, every: float, done: threading.Event) -> None:
    while not done.wait(every):
        what, estimate, started = waits[-1]
        try:
            progress(Heartbeat(f"  still waiting for {what}: {waited(time.perf_counter() - started, estimate)}"))
        except BaseException:  # noqa: BLE001 - a progress that fails here fails for the main thread too
            return


def waited(seconds: float, estimate: Optional[float]) -> str:
    """``"12 s of ~30 s expected"``: how long a wait has lasted, against its estimate."""
    if estimate is None:
        return f"{seconds:.0f} s"
    if seconds <= estimate:
        return f"{seconds:.0f} s of ~{duration(estimate)} expected"
    return f"{seconds:.0f} s (~{duration(estimate)} was expected)"


def duration(seconds: float) -> str:
    """``"42 s"`` or ``"4 min"``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def time_left(progress: Progress) -> Optional[float]:
    """Seconds left of the time limit ``progress`` carries (None: no limit)."""
    left = getattr(progress, "left", None)
    return left() if callable(left) else None


def afford(progress: Progress, seconds: float, step: str) -> None:
    """Raise the limit's exception where ``step``, planned to take ``seconds``,
    cannot end within the time limit ``progress`` carries: a step that cannot
    be stopped once started is not started."""
    refuse = getattr(progress, "afford", None)
    if callable(refuse):
        refuse(seconds, step)


def stopped_at_limit(progress: Progress, step: str) -> None:
    """``step`` was stopped in its worker as the time limit ran out: raise the limit's exception."""
    stop = getattr(progress, "stopped", None)
    if callable(stop):
        stop(step)
