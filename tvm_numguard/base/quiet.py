"""Keeping TVM's own noise off the user's terminal.

When a TVM call fails, the IR builders its frames hold (a ``BlockBuilder``
with open blocks) are freed with the traceback, and their C++ destructors
write warnings straight to file descriptor 2, after numguard has already said
in one line what went wrong. A caller drops its last reference to the failure
inside ``silenced_stderr()`` and collects it there.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings


@contextlib.contextmanager
def _stderr_to(fd: int):
    """File descriptor 2 points at ``fd`` inside the block, and back after it."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def stderr_to_devnull() -> None:
    """File descriptor 2 goes to /dev/null for good (a worker process: its parent reports what matters)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


@contextlib.contextmanager
def silenced_stderr():
    """File descriptor 2 goes to /dev/null inside the block (C++ logging writes there directly)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with _stderr_to(devnull):
            yield
    finally:
        os.close(devnull)


class HeldStderr:
    """``text``: what was written to file descriptor 2 inside ``held_stderr()``
    (set when the block ends)."""

    text: str = ""


@contextlib.contextmanager
def held_stderr():
    """File descriptor 2 goes to a temporary file inside the block; the caller
    decides afterwards whether what was written there is worth showing."""
    held = HeldStderr()
    with tempfile.TemporaryFile() as file:
        try:
            with _stderr_to(file.fileno()):
                yield held
        finally:
            file.seek(0)
            held.text = file.read().decode(errors="replace")


class Captured:
    """What others wrote to stderr while a command ran: TVM's C++ log lines
    (straight to file descriptor 2) and Python warnings (torch's FutureWarnings);
    ``lines()`` reads them so far, one per message."""

    def __init__(self, file=None, caught=None):
        self._file = file
        self._caught = caught if caught is not None else []

    def lines(self) -> list:
        out = []
        if self._file is not None:
            self._file.flush()
            with open(self._file.name, errors="replace") as held:
                out += [ln for ln in held.read().splitlines() if ln.strip()]
        out += [f"{w.category.__name__}: {w.message} ({os.path.basename(w.filename)}:{w.lineno})"
                for w in self._caught]
        return out


@contextlib.contextmanager
def captured_stderr(enabled: bool = True):
    """Inside the block, file descriptor 2 goes to a temporary file and Python
    warnings are recorded (a ``Captured``); the process's own ``sys.stderr``
    keeps writing where it wrote (a new stream on the old descriptor when it
    was descriptor 2), so numguard's lines still reach the user."""
    if not enabled:
        yield Captured()
        return
    try:
        on_fd2 = sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # a test's capture, an IDE's stream
        on_fd2 = False
    own = sys.stderr
    with tempfile.NamedTemporaryFile(prefix="numguard-stderr-") as file, \
            warnings.catch_warnings(record=True) as caught:
        saved = os.dup(2)
        if on_fd2:
            sys.stderr = os.fdopen(os.dup(saved), "w", buffering=1, encoding=own.encoding, errors="replace")
        try:
            own.flush()
            os.dup2(file.fileno(), 2)
            yield Captured(file, caught)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if on_fd2:
                sys.stderr.close()
                sys.stderr = own
