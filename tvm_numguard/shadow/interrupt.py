"""Ctrl-C during a build: TVM must not swallow it.

Python runs a SIGINT handler at the next Python bytecode, which during a build
is often an instrument hook inside a nested pass; the KeyboardInterrupt it
raises there becomes an error of that pass, and FoldConstant, which runs whole
builds inside itself and gives up folding when one fails, swallows it: the
build goes on as if nothing happened. ``InterruptWatch`` notes every SIGINT
that arrives while it is active, so the builder can raise KeyboardInterrupt
once TVM returns, whatever TVM did with the first one.
"""

from __future__ import annotations

import signal
import threading


class InterruptWatch:
    """``with InterruptWatch() as watch:`` ... ``watch.interrupted``; the previous
    SIGINT handler is called as usual and put back on exit. Signals can only
    be handled in the main thread: elsewhere the watch sees nothing."""

    def __init__(self):
        self.interrupted = False
        self._previous = None

    def __enter__(self) -> "InterruptWatch":
        # a process started with SIGINT ignored (nohup, a script's background job) keeps ignoring it
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            self._previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> bool:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        return False

    def _on_sigint(self, signum, frame) -> None:
        self.interrupted = True
        if callable(self._previous):
            self._previous(signum, frame)
        elif self._previous == signal.SIG_DFL:
            raise KeyboardInterrupt
