"""What was computed for the last few input sets, newest first.

The one home of how much a session remembers (``REMEMBERED``) and of how it
looks a result up: by the identity of the inputs (and of the build), never by
their values. A search's inputs are fresh arrays each round, so identity is
both exact and cheap; the few remembered are the ones asked for again (a
bisection asks for the witness's runs many times, the witness is judged and
reported after the search).
"""

from __future__ import annotations

from typing import Generic, Iterator, Optional, Tuple, TypeVar

# input sets remembered: a search's last round and the witness fit, and
# a session holds at most this many outputs of each build in memory
REMEMBERED = 4

V = TypeVar("V")


class Recent(Generic[V]):
    """Values keyed by a tuple of objects, compared with ``is``; adding one
    past ``REMEMBERED`` forgets the oldest."""

    def __init__(self):
        self._items: list = []  # (key, value), newest first

    def find(self, *key) -> Optional[V]:
        """The value added with these very objects as its key, or None."""
        for seen, value in self._items:
            if len(seen) == len(key) and all(a is b for a, b in zip(seen, key)):
                return value
        return None

    def add(self, key: Tuple, value: V) -> None:
        self._items = [(tuple(key), value)] + self._items[:REMEMBERED - 1]

    def __iter__(self) -> Iterator[Tuple[tuple, V]]:
        return iter(list(self._items))
