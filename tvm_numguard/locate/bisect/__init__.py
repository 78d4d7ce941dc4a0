"""Bisection over pass events: the question, the strategies, the driver."""

from .question import BAD, GOOD, UNTESTABLE, Question, Verdict, WitnessQuestion
from .driver import STRATEGIES, Bisection, BisectionStopped, BisectResult, bisect_session
from .strategies import ddmin, linear_scan, prefix_bisect

__all__ = [
    "BAD",
    "GOOD",
    "STRATEGIES",
    "UNTESTABLE",
    "BisectResult",
    "BisectionStopped",
    "Bisection",
    "Question",
    "Verdict",
    "WitnessQuestion",
    "bisect_session",
    "ddmin",
    "linear_scan",
    "prefix_bisect",
]
