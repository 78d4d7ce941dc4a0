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
