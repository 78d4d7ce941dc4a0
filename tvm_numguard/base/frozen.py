"""Values that cannot change once made: what a Finding holds, all the way down.

A Finding is handed to callers, reports, caches and other processes; a list
appended to or an array written in place after it was made would change what
every holder sees. So a record a Finding holds is a frozen dataclass whose
``__post_init__`` calls ``freeze_fields``: its lists become tuples, its dicts
``FrozenDict``, its arrays read-only copies. A later stage that adds something
makes a new record (``dataclasses.replace``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class FrozenDict(dict):
    """A dict that refuses every change after it is made. A dict still (JSON
    writes it, ``isinstance(x, dict)`` holds), pickled and copied as one."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("a FrozenDict cannot change; make a new one")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return FrozenDict, (dict(self),)

    def __copy__(self) -> "FrozenDict":
        return self

    def __deepcopy__(self, memo) -> "FrozenDict":
        return self

    def __hash__(self) -> int:  # type: ignore[override]  # dict's is None: this one is hashable
        return hash(frozenset(self.items()))


def freeze(value: Any) -> Any:
    """``value`` with every list and tuple a tuple, every dict a FrozenDict and
    every numpy array a read-only copy, all the way down; anything else as it is."""
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return tuple(freeze(item) for item in value)
    if isinstance(value, dict):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, np.ndarray) and (value.flags.writeable or value.base is not None):
        copy = np.array(value, copy=True)  # a view could still change through the array it views
        copy.flags.writeable = False
        return copy
    return value


def freeze_fields(record: Any, *names: str) -> None:
    """In a frozen dataclass's ``__post_init__``: the fields ``names`` frozen (``freeze``)."""
    for name in names:
        object.__setattr__(record, name, freeze(getattr(record, name)))
