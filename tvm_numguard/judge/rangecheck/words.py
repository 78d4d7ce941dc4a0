"""A range-check warning in words: one line, as progress and every report say it."""

from __future__ import annotations

KIND_WORDS = {
    "domain": "can leave its domain",
    "overflow": "can overflow",
    "approximation": "gets arguments where its approximation departs",
    "piecewise": "splits the range",
}


def number(v: float) -> str:
    return f"{v:.6g}"


def interval(pair) -> str:
    return f"[{number(pair[0])}, {number(pair[1])}]"


def warning_line(w: dict) -> str:
    """One warning (its document form) in a line: where, what, the interval, against which limit."""
    new = " (new: the pipeline brought it)" if w["new"] else ""
    return (f"{w['binding']} = {w['op']} {KIND_WORDS[w['kind']]}{new}: {w['dtype']} values in "
            f"{interval(w['interval'])}, limit: {w['limit']}")


__all__ = ["KIND_WORDS", "interval", "number", "warning_line"]
