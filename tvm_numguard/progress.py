"""Progress messages from long work.

A ``Progress`` is any ``callable(message: str)``. Phase messages (building,
searching, bisecting) are plain strings; finer steps (every 25 evaluations,
each bisection probe) are ``Detail`` strings, so a front end can show phases
everywhere and details only where someone watches (a terminal, ``-v``).
"""

from __future__ import annotations

from typing import Callable, Optional

Progress = Optional[Callable[[str], None]]


class Detail(str):
    """A progress message below phase level."""


def silent(message: str) -> None:
    """The progress callback of a caller who passed none."""
