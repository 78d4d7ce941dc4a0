"""The guard's sense of time: progress a user sees once judging a compile runs long,
and the wall-time limit of one guarded compile.

A guarded compile that takes a second stays silent; one that takes minutes
(a float16 build runs 18 s per inference on a 2-core CPU) says each phase and
step on stderr once it has run ``LateProgress.after`` seconds, as the CLI does.
``Deadline`` ends judging between two of its steps (each progress message is
one: a search round, a bisection probe, a table row) once its time is spent,
or before a step whose planned time (``afford``: a bisection probe, the float64
oracle, a narrowing test, planned from the builds and runs measured so far)
would end past it. A step made in this process (a build, the oracle) is not
cut short once started; one made in a worker (a run, whose first creates the
VM, which on a float16 model can take minutes; a bisection probe; the
reference) is waited for only as long as the limit leaves, then stopped there
(``stopped``).

Both read the time from a ``clock`` (seconds, ``time.perf_counter`` unless the
guard is given another: ``guard(clock=...)``), so that what a limit does is
tested on a clock the test moves, not on how fast the machine happens to be.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional

from ...base.progress import Detail, Heartbeat

Clock = Callable[[], float]  # seconds, from any start: only differences are read

PREFIX = "numguard guard:"
# the default limit of one guarded compile ("auto"): this many times the compile it
# wraps (judging it builds the model several times and runs it), never under the floor
AUTO_FACTOR = 20.0
AUTO_FLOOR_S = 120.0


def auto_time_limit(compile_seconds: float) -> float:
    """The default limit of a guarded compile whose build as written took ``compile_seconds``."""
    return max(AUTO_FLOOR_S, AUTO_FACTOR * compile_seconds)


class TimeLimitReached(BaseException):
    """The guard's time limit ran out; ``doing``: the phase then under way.
    A BaseException, as KeyboardInterrupt is: no ``except Exception`` of a step
    (a probe made untestable, a range check skipped) may take it for its own failure."""

    def __init__(self, seconds: float, doing: str):
        super().__init__(f"the time limit of {seconds:g} s ran out while {doing} (time_limit= gives judging "
                         "more, cache= keeps a verdict for the next compile)")
        self.seconds, self.doing = seconds, doing
        self.executable = None  # the build as written, where it was made before the limit


class LateProgress:
    """Progress on stderr once judging a compile has run ``after`` seconds (the phases so
    far are told then, then every phase and step as it comes); ``restart`` at
    each compile."""

    def __init__(self, after: float = 5.0, clock: Clock = time.perf_counter):
        self.after, self.clock = after, clock
        self.restart()

    def restart(self) -> None:
        self.phases: list = []
        self.started, self.talking = self.clock(), False

    def __call__(self, message: str) -> None:
        elapsed = self.clock() - self.started
        line = f"{PREFIX} [{elapsed:6.1f}s] {message.strip()}"
        if not self.talking:
            if elapsed < self.after:
                if not isinstance(message, Detail):
                    self.phases.append(line)
                return
            self.talking = True
            for earlier in self.phases:
                print(earlier, file=sys.stderr)
        print(line, file=sys.stderr, flush=True)


class Deadline:
    """A progress callback in front of ``progress`` that raises TimeLimitReached
    at the first step past ``seconds`` from now (None: no limit; ``"auto"``:
    none until ``compiled`` says how long the compile as written took), as
    ``clock`` tells the time."""

    def __init__(self, seconds, progress: Callable[[str], None], clock: Clock = time.perf_counter):
        self.clock = clock
        self.started = clock()
        self.auto = seconds == "auto"
        self.seconds = None if self.auto else seconds
        self.at = None if self.seconds is None else self.started + self.seconds
        self.progress = progress
        self.doing = "starting to judge the compile"

    def compiled(self, seconds: float) -> None:
        """The build as written took ``seconds``: an ``"auto"`` limit is set from it."""
        if self.auto:
            self.seconds = round(auto_time_limit(seconds), 1)
            self.at = self.started + self.seconds

    def left(self) -> Optional[float]:
        return None if self.at is None else max(0.0, self.at - self.clock())

    def afford(self, seconds: float, step: str) -> None:
        """Raise TimeLimitReached now where ``step``, planned to take ``seconds``,
        cannot end before the limit: a step is not cut short once started, so
        one that cannot fit is not started (a float16 build's probe whose VM
        takes minutes to make)."""
        left = self.left()
        if left is not None and seconds > left:
            raise self._reached(f"{self.doing}: the next step, {step}, needs ~{seconds:.0f} s "
                                f"and {left:.0f} s were left")

    def stopped(self, step: str) -> None:
        """``step`` was stopped in its worker as the limit ran out: raise TimeLimitReached."""
        raise self._reached(f"{self.doing}: {step} did not finish (stopped in its worker)")

    def _reached(self, doing: str) -> "TimeLimitReached":
        assert self.seconds is not None, "a step stopped by the limit before the limit was set"
        return TimeLimitReached(self.seconds, doing)

    def __call__(self, message: str) -> None:
        if isinstance(message, Heartbeat):  # from a waiting step's thread: the main thread meets the limit
            self.progress(message)
            return
        if self.at is not None and self.clock() > self.at:
            raise self._reached(self.doing)
        if not isinstance(message, Detail):
            self.doing = message.strip()
        self.progress(message)
