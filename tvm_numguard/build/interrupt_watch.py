"""Ctrl-C or SIGTERM during a build: TVM must not swallow it.

Python runs a signal handler at the next Python bytecode, which during a build
is often an instrument hook inside a nested pass; the KeyboardInterrupt it
raises there becomes an error of that pass, and FoldConstant, which runs whole
builds inside itself and gives up folding when one fails, swallows it: the
build goes on as if nothing happened. ``InterruptWatch`` notes every SIGINT
(and every SIGTERM the CLI turned into ``Terminated``) that arrives while it
is active, so the builder can raise it again once TVM returns, whatever TVM
did with the first one.
"""

from __future__ import annotations

import signal
import threading
from typing import Literal, Optional

from ..base.errors import Terminated


class InterruptWatch:
    """``with InterruptWatch() as watch:`` ... ``watch.reraise()``; the previous
    handlers are called as usual and put back on exit, and what the first of
    them raised (KeyboardInterrupt, the CLI's Terminated) is raised again by
    ``reraise``; a caller's handler that raises nothing (one that sets a flag)
    is left to do its work. SIGINT is watched unless ignored, SIGTERM only where
    a Python handler takes it (elsewhere it ends the process as it always did).
    Signals can only be handled in the main thread: elsewhere the watch sees nothing."""

    def __init__(self):
        self.caught: Optional[int] = None  # the first signal seen
        self._previous: dict = {}

    @property
    def interrupted(self) -> bool:
        return self.caught is not None

    def __enter__(self) -> "InterruptWatch":
        if threading.current_thread() is not threading.main_thread():
            return self
        # a process started with SIGINT ignored (nohup, a script's background job) keeps ignoring it
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            self._previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)
        if callable(signal.getsignal(signal.SIGTERM)):
            self._previous[signal.SIGTERM] = signal.getsignal(signal.SIGTERM)
        for signum in self._previous:
            signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc) -> Literal[False]:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}
        return False

    def reraise(self) -> None:
        """Raise what the first signal seen raises (nothing if none came)."""
        if self.caught == signal.SIGTERM:
            raise Terminated
        if self.caught is not None:
            raise KeyboardInterrupt

    def _on_signal(self, signum, frame) -> None:
        previous = self._previous.get(signum)
        try:
            if callable(previous):
                previous(signum, frame)
            elif previous == signal.SIG_DFL:
                raise KeyboardInterrupt
        except BaseException:  # what the handler raised is raised again after the build
            if self.caught is None:
                self.caught = signum
            raise
