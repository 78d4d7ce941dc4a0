"""inf and NaN in JSON: the one home of how numguard writes and reads them.

JSON has no inf or NaN; reports write them as the strings "inf", "-inf" and
"nan" (the schema's ``num``). Everything that writes a number into a document
goes through ``plain``; everything that reads one back, through
``from_json_number``. A measurement that was not made (a run time of a build
that does not build) is null instead: ``measured``/``unmeasured``.
"""

from __future__ import annotations

import math
from typing import Optional, overload

import numpy as np

NON_FINITE = ("inf", "-inf", "nan")


def to_json_number(value):
    """A float as JSON takes it: finite floats stay, inf/NaN become strings."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


@overload
def from_json_number(value: None) -> None: ...


@overload
def from_json_number(value: object) -> float: ...


def from_json_number(value) -> Optional[float]:
    """A number read from a document back to a float ("inf" -> inf); None stays None."""
    if value is None:
        return None
    return float(value)  # float("inf"), float("-inf") and float("nan") parse


def measured(value) -> Optional[float]:
    """A measurement as a document holds it: NaN (not measured: a build that
    does not build has no run time) is null, a number stays a number."""
    return None if value is None or value != value else float(value)


def unmeasured(value) -> float:
    """``measured`` undone: null back to NaN."""
    return float("nan") if value is None else float(value)


def plain(value):
    """A JSON-safe copy of ``value``: numpy scalars to Python, inf/NaN to strings,
    tuples to lists, dict keys to strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return to_json_number(value)
    return value


def unplain(value):
    """``plain`` undone: the strings "inf", "-inf" and "nan" back to floats, in
    lists and dicts too (a document's other strings are never those three)."""
    if isinstance(value, dict):
        return {k: unplain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unplain(v) for v in value]
    return float(value) if isinstance(value, str) and value in NON_FINITE else value


def exceeds(score, limit: float = 1.0) -> bool:
    """``score > limit`` for a score as a document holds it ("inf" counts, "nan" does not)."""
    return score is not None and from_json_number(score) > limit
