"""Bisection over pass events: the checker, the searches, the driver."""

from .checker import BAD, GOOD, UNTESTABLE, Checker, Verdict, WitnessChecker
from .driver import STRATEGIES, Bisection, BisectResult, bisect_session
from .strategies import ddmin, linear_scan, prefix_bisect

__all__ = [
    "BAD",
    "GOOD",
    "STRATEGIES",
    "UNTESTABLE",
    "BisectResult",
    "Bisection",
    "Checker",
    "Verdict",
    "WitnessChecker",
    "bisect_session",
    "ddmin",
    "linear_scan",
    "prefix_bisect",
]
