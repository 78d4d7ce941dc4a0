"""Pass instruments: record every pass event, gate a skip set."""

from .catalog import DEPENDS_ON, REQUIRED_PASSES, close_skip_set, is_required, is_wrapper
from .events import EventPath, PassEvent, disabled_pass_reaches
from .gate import EveryOptional, PassGate
from .recorder import PassRecorder

__all__ = [
    "disabled_pass_reaches",
    "DEPENDS_ON",
    "REQUIRED_PASSES",
    "close_skip_set",
    "EventPath",
    "EveryOptional",
    "PassEvent",
    "PassGate",
    "PassRecorder",
    "is_required",
    "is_wrapper",
]
