"""Where the CLI's own words go (stderr), and how a Ctrl-C is told."""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import threading
import time
from typing import Optional

import click

from ..base.progress import Detail
from ..base.errors import Terminated
from .signals import exit_code

PROGRESS_PREFIX = "numguard: ["  # a progress line: "numguard: [  12.3s] building ..."
PHASE_SHOWN = 120  # characters of the phase under way a stop's last line repeats (a bisection's plan is long)


class Interrupted(Exception):
    """Ctrl-C or SIGTERM: ``main`` prints the message and exits ``code`` (130, 143)."""

    def __init__(self, message: str, code: int = 130):
        super().__init__(message)
        self.code = code


class Invocation:
    """What one ``numguard`` command line shares between ``main`` and its
    command (click's ``obj``): what TVM wrote to stderr (``captured``), where
    a violation's witness was kept and the phase under way, for the line a
    command that stops early ends with (Ctrl-C, SIGTERM, an error)."""

    def __init__(self):
        self.captured = None
        self.witness_path = None
        self.phase = None  # the last phase the command said (a progress line above step level)

    def interrupted_line(self, signum: int = signal.SIGINT) -> str:
        """The last line of a command ended by ``signum`` (SIGINT or SIGTERM)."""
        stopped = 'terminated (SIGTERM)' if signum == signal.SIGTERM else 'interrupted'
        phase = self.phase if not self.phase or len(self.phase) <= PHASE_SHOWN else self.phase[:PHASE_SHOWN] + " ..."
        where = f" while {phase}" if phase else ""
        return f"{stopped}{where}; {self.found()}"

    def found(self) -> str:
        """What was found before the command stopped, and where it is kept."""
        if self.witness_path:
            return f"the witness of the violation found is kept in {self.witness_path}"
        return "no violation had been found yet"


class Console:
    """Progress on stderr, also when stderr is not a terminal (a CI log must not
    sit silent for minutes): every phase with the time since the command
    started, and every step below it (``progress.Detail``: a search round, a
    bisection probe, a row of trace's table). On a terminal a step overwrites
    the one before, like a progress bar; in a log each is a line. ``-q``
    prints nothing; ``-v`` adds the opt-bisect style trace of every build. It
    remembers where a violation's witness was kept, to say so on Ctrl-C."""

    def __init__(self, verbose: bool = False, quiet: bool = False, invocation: Optional[Invocation] = None):
        self.invocation = invocation or Invocation()
        self.verbose = verbose
        self.quiet = quiet
        self.interactive = sys.stderr.isatty()
        self.started = time.perf_counter()
        self.builds = 0
        self._step_shown = False  # a step line is on the terminal, to be overwritten
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def interruptible(self):
        """Turn a Ctrl-C or SIGTERM inside the block into Interrupted, naming the witness if one was kept."""
        try:
            yield
        except Terminated:
            raise Interrupted(self.invocation.interrupted_line(signal.SIGTERM), exit_code(signal.SIGTERM)) from None
        except KeyboardInterrupt:
            raise Interrupted(self.invocation.interrupted_line()) from None
        finally:
            self._end_step()

    @property
    def witness_path(self) -> Optional[str]:
        return self.invocation.witness_path

    @witness_path.setter
    def witness_path(self, path: str) -> None:
        self.invocation.witness_path = path

    def progress(self, message: str) -> None:
        if not isinstance(message, Detail):  # what a stop says it was doing, also with -q
            self.invocation.phase = message.strip()
        if self.quiet:
            return
        with self._lock:  # a waiting step's heartbeat comes from a thread of its own
            line = f"{PROGRESS_PREFIX}{time.perf_counter() - self.started:6.1f}s] {message.strip()}"
            if isinstance(message, Detail) and self.interactive and not self.verbose:
                width = shutil.get_terminal_size((100, 20)).columns - 1
                click.echo("\r\x1b[K" + line[:width], err=True, nl=False)
                self._step_shown = True
                return
            self._end_step()
            click.echo(line, err=True)

    def _end_step(self) -> None:
        """The overwritten step line stays; what follows starts on a line of its own."""
        if self._step_shown:
            click.echo("", err=True)
            self._step_shown = False

    def on_build(self, build) -> None:
        self.builds += 1
        if not self.verbose:
            return
        click.echo(f"BISECT: build {self.builds}: {len(build.skip)} events skipped"
                   + ("" if build.ok else f", FAILED: {build.error}"), err=True)
        for line in build.trace:
            click.echo(line, err=True)
