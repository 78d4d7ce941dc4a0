"""Pass instruments: record every pass event, gate a skip set."""

from .catalog import DEPENDS_ON, REQUIRED_PASSES, close_skip_set, is_required, is_wrapper
from .events import EventPath, PassEvent
from .gate import PassGate
from .recorder import PassRecorder

__all__ = [
    "DEPENDS_ON",
    "REQUIRED_PASSES",
    "close_skip_set",
    "EventPath",
    "PassEvent",
    "PassGate",
    "PassRecorder",
    "is_required",
    "is_wrapper",
]
