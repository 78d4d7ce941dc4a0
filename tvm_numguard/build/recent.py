"""What was computed for the last few input sets, newest first.

The one home of how much a session remembers (``REMEMBERED``) and of how it
looks a result up: by the identity of the build, and of the inputs or, where
they are another object, their bytes (``same``). A search's inputs are fresh
arrays each round; the witness the search reports is a frozen copy of the
inputs it ran (``locate.sampling.SearchResult`` freezes them), and the few
remembered are the ones asked for again (a bisection asks for the witness's
runs many times; the witness is judged and reported after the search: without
the bytes, each judge ran both builds and the framework on it once more).
"""

from __future__ import annotations

from typing import Generic, Iterator, Mapping, Optional, Tuple, TypeVar

import numpy as np

# input sets remembered: a search's last round and the witness fit, and
# a session holds at most this many outputs of each build in memory
REMEMBERED = 4

V = TypeVar("V")


def same(a, b) -> bool:
    """``a is b``, or two input sets (mappings of arrays) with the same names,
    and arrays of the same dtypes, shapes and bytes (-0.0 is not 0.0, a NaN is
    its own bits): what a build computes from one it computes from the other."""
    if a is b:
        return True
    if not (isinstance(a, Mapping) and isinstance(b, Mapping)) or a.keys() != b.keys():
        return False
    return all(_same_array(np.asarray(a[name]), np.asarray(b[name])) for name in a)


def _same_array(x: np.ndarray, y: np.ndarray) -> bool:
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    a, b = np.ascontiguousarray(x).reshape(-1).view(np.uint8), np.ascontiguousarray(y).reshape(-1).view(np.uint8)
    # fresh inputs differ in their first bytes: no pass over the whole array for them
    return bool(np.array_equal(a[:64], b[:64]) and np.array_equal(a, b))


class Recent(Generic[V]):
    """Values keyed by a tuple of objects, compared with ``same`` (identity,
    or an input set's bytes); adding one past ``REMEMBERED`` forgets the oldest."""

    def __init__(self):
        self._items: list = []  # (key, value), newest first

    def find(self, *key) -> Optional[V]:
        """The value added with these objects (or input sets of the same bytes) as its key, or None."""
        for seen, value in self._items:  # the very objects first: a search asks for the inputs it just made
            if len(seen) == len(key) and all(a is b for a, b in zip(seen, key)):
                return value
        for seen, value in self._items:
            if len(seen) == len(key) and all(same(a, b) for a, b in zip(seen, key)):
                return value
        return None

    def add(self, key: Tuple, value: V) -> None:
        self._items = [(tuple(key), value)] + self._items[:REMEMBERED - 1]

    def __iter__(self) -> Iterator[Tuple[tuple, V]]:
        return iter(list(self._items))
