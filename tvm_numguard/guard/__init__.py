"""``numguard.guard``: check, and if need be switch off, the passes of every compile in a block."""

from .cache import CacheWarning
from .guard import ACTIONS, Guard, GuardWarning, NumericalError, NumericalRiskWarning, guard
from .report import GuardReport

__all__ = ["ACTIONS", "CacheWarning", "Guard", "GuardReport", "GuardWarning", "NumericalError",
           "NumericalRiskWarning", "guard"]
