"""How one pass changed a value: the one vocabulary of ``matching`` and ``rewrites``.

A value (a binding of ``main``) or an operand (an argument, a constant) after
the pass, against its match before it, is

- ``SAME``: computed as before;
- ``FOLLOW``: the same operator, attributes and values, only in another dtype
  because what it reads arrives in one (ToMixedPrecision's follow policy; a
  constant cast to another dtype);
- ``REWRITE``: computed otherwise (another operator or kernel, other
  attributes or constants, or no match at all).

A value is as changed as its most changed operand (``worst``). A fix's places
are its FOLLOW and REWRITE values (``Place.kind`` holds the value, as fix
documents write it).
"""

from __future__ import annotations

import enum
from typing import Iterable


class Change(str, enum.Enum):
    SAME = "same"
    FOLLOW = "follow"
    REWRITE = "rewrite"

    @staticmethod
    def worst(changes: Iterable["Change"]) -> "Change":
        """The most changed of ``changes`` (SAME for none)."""
        return max(changes, key=_ORDER.index, default=Change.SAME)


_ORDER = [Change.SAME, Change.FOLLOW, Change.REWRITE]
