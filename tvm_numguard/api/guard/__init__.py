"""``numguard.guard``: judge, and if need be switch off, the passes of every compile in a block."""

from .cache import CacheWarning
from .guard import Guard, GuardWarning, NumericalError, NumericalRiskWarning, guard
from .guard_report import GuardReport
from .settings import ACTIONS, GuardSettings

__all__ = ["ACTIONS", "CacheWarning", "Guard", "GuardReport", "GuardSettings", "GuardWarning", "NumericalError",
           "NumericalRiskWarning", "guard"]
