"""Ctrl-C and SIGTERM end numguard within seconds, whatever TVM is doing.

Python runs a signal handler only between bytecodes of the main thread. While
TVM builds or runs (seconds to minutes of C++), the KeyboardInterrupt waits;
raised in a pass instrument's hook, TVM's FFI turns it into a TVMError that a
pass (FoldConstant) or an ``except Exception`` swallows, and the run went on
to its end (measured: SIGINT 3 s and 20 s into a SqueezeNet bisect under
ToMixedPrecision, exit 1 two minutes later).

SIGTERM (what ``timeout``, CI runners and schedulers send) is handled the same
way: inside the block it raises ``Terminated``, a KeyboardInterrupt, so every
step that stops its workers on a Ctrl-C stops them on it too, and the CLI
exits 143 (128 + 15) instead of 130. Left at its default, it ended the process
with no line and left its workers compiling.

``InterruptDeadline`` asks the C level instead: ``signal.set_wakeup_fd``
writes the signal's number to a pipe the moment it arrives, and a thread
reading the pipe gives the main thread ``GRACE`` seconds to end as usual (the
KeyboardInterrupt path: exit 130 or 143, the witness named). If it has not, the
thread says the same in one line, kills the worker processes and ends the
process with that code. Nothing is half-written: numguard writes every file to a
temporary name and renames it (``report.files.write_atomic``), so a file is
whole or absent. Workers that outlive nothing: the kernel kills them when
this process ends, however it ends (``workers.pool.die_with_parent``).

CLI only: the library never ends the process (``with InterruptDeadline(...)``
in ``cli.main``). Other signals pass through untouched.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import signal
import sys
import threading
from typing import Any, Callable, Literal, Optional

from ..base.errors import Terminated

STOPPING = (signal.SIGINT, signal.SIGTERM)  # the signals the CLI ends on, with 128 + their number
GRACE = 1.0  # seconds the main thread has to end by itself: a run between two builds ends in far less


class InterruptDeadline:
    """``with InterruptDeadline(last_words):`` ... ; ``last_words(signum)`` is the
    line said on a forced end by that signal (where the witness is). Inside
    the block SIGTERM raises ``Terminated``. Outside the main thread, or where
    the platform has no wakeup fd, it does nothing."""

    def __init__(self, last_words: Callable[[int], str], grace: float = GRACE):
        self.last_words, self.grace = last_words, grace
        self._ended = threading.Event()
        self._pipe: Optional[tuple[int, int]] = None
        self._stop: Optional[tuple[int, int]] = None
        self._previous_fd = -1
        self._previous_term: Any = None  # the SIGTERM handler before the block's

    def __enter__(self) -> "InterruptDeadline":
        if threading.current_thread() is not threading.main_thread():
            return self
        self._pipe, self._stop = os.pipe(), os.pipe()
        os.set_blocking(self._pipe[1], False)
        # forked workers inherit the fd, but ignore SIGINT and take SIGTERM at its default
        # (workers.pool.start_worker): they write nothing
        self._previous_fd = signal.set_wakeup_fd(self._pipe[1], warn_on_full_buffer=False)
        # the watcher first: a SIGTERM while Thread.start waits for it raised Terminated out of this
        # __enter__, outside every handler (a traceback and exit 1 under load); until the handler is
        # swapped, the one before it (the console script's: 143 and its line) ends the command
        threading.Thread(target=self._watch, name="numguard-interrupt", daemon=True).start()
        self._previous_term = signal.signal(signal.SIGTERM, raise_terminated)
        return self

    def __exit__(self, *exc) -> Literal[False]:
        self._ended.set()
        if self._pipe is not None and self._stop is not None:  # set together by __enter__
            signal.signal(signal.SIGTERM, self._previous_term)
            signal.set_wakeup_fd(self._previous_fd)
            os.write(self._stop[1], b"x")
            for fd in (*self._pipe, self._stop[1]):
                os.close(fd)
        return False

    def _watch(self) -> None:
        assert self._pipe is not None and self._stop is not None  # __enter__ made them first
        stop = self._stop[0]
        try:
            while True:
                ready, _, _ = select.select([self._pipe[0], stop], [], [])
                if stop in ready:
                    return
                read = os.read(self._pipe[0], 64)
                came = [signum for signum in STOPPING if signum in read]
                if came and not self._ended.wait(self.grace):
                    self._force_end(came[0])
        except OSError:  # the pipe closed under us: the run ended
            return
        finally:
            os.close(stop)

    def _force_end(self, signum: int) -> None:
        try:
            fd = sys.stderr.fileno()
            # on a terminal the line starts after the "^C" the terminal echoed
            os.write(fd, (("\n" if os.isatty(fd) else "") + f"numguard: {self.last_words(signum)}\n").encode())
        except (OSError, ValueError, AttributeError):
            pass
        for child in multiprocessing.active_children():  # a worker mid-build would go on for minutes
            child.kill()
        os._exit(exit_code(signum))


def raise_terminated(signum, frame) -> None:
    """The CLI's SIGTERM handler."""
    raise Terminated


def exit_code(signum: int) -> int:
    """The exit code of a command ended by ``signum``, as a shell reports it: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum

