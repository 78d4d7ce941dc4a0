"""Pass instruments: record every pass event, gate a skip set."""

from .catalog import DEPENDS_ON, REQUIRED_PASSES, close_skip_set, is_required, is_wrapper
from .events import EventPath, PassEvent
from .gate import EveryOptional, PassGate
from .recorder import PassRecorder

__all__ = [
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
