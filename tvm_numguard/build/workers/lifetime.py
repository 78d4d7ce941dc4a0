"""A worker never outlives the numguard process that forked it.

A parent that ends in order stops its pools; one killed (SIGKILL, the OOM
killer, a CI runner's timeout) runs no code at all, and its workers, adopted
by init, went on compiling for minutes. So every worker asks the kernel to
kill it when its parent ends (Linux's parent-death signal, ``prctl
(PR_SET_PDEATHSIG, SIGKILL)``) as the first thing it does after the fork, and
then checks its parent is still the one that forked it: a parent that died
before the request was made sends no signal, and the worker ends itself.

The kernel sends the signal when the *thread* that forked the worker ends:
pebble forks a replacement worker from its pool-manager thread, which lives
as long as the pool, and a pool's workers are stopped with it anyway.

A worker also takes SIGTERM at its default, death at once: pebble's own
handler runs only between Python bytecodes, so a worker in the middle of a
build ignored a stop for pebble's 3 s grace, and a Python handler would write
the signal's number to the wakeup fd it inherited from the CLI
(``cli.interrupt``), which the parent would read as its own SIGTERM.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

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
