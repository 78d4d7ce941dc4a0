"""Memory of worker processes: what one uses, what the machine has, a cap.

A worker is forked from the numguard process, so its resident set counts the
pages it shares with its parent (TVM, the model, the builds already made).
What a build adds is the worker's *private* memory (pages only it has written);
the cap is on that, so that the parent plus every worker stays under
``--max-memory``.
"""

from __future__ import annotations

import os
import threading
import time

MIB = 1024 * 1024
OUT_OF_MEMORY_EXIT = 77  # a worker that passed its share of the cap exits with this code
DEFAULT_SHARE = 0.75  # of the machine's memory, the default --max-memory


def machine_bytes() -> int:
    """Physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_max_memory() -> int:
    return int(machine_bytes() * DEFAULT_SHARE)


def resident_bytes() -> int:
    """This process's resident set now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def private_bytes() -> int:
    """Pages only this process holds (private clean + dirty, from smaps_rollup)."""
    total = 0
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
    except OSError:  # no smaps_rollup (old kernel, not Linux): the resident set bounds it
        return resident_bytes()
    return total


class Watchdog:
    """In a worker: samples its private memory; past ``cap`` bytes the worker
    exits at once with OUT_OF_MEMORY_EXIT (its parent reports the build it was
    making as untestable, out of memory). ``peak`` is the most it saw."""

    def __init__(self, cap: int, interval: float = 0.1):
        self.cap, self.interval = cap, interval
        self.peak = private_bytes()

    def start(self) -> "Watchdog":
        threading.Thread(target=self._watch, name="numguard-memory-watchdog", daemon=True).start()
        return self

    def sample(self) -> int:
        now = private_bytes()
        self.peak = max(self.peak, now)
        return now

    def _watch(self) -> None:
        while True:
            if self.sample() > self.cap:
                os._exit(OUT_OF_MEMORY_EXIT)  # a worker past its share must not take the machine down
            time.sleep(self.interval)
