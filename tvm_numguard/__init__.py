"""tvm_numguard: find, explain and switch off the TVM pass that changes a model's numbers."""

__version__ = "0.1.0"

from .api import Options, bisect, list_passes, search  # noqa: E402
from .errors import NumguardError  # noqa: E402
from .guard import GuardReport, NumericalError, NumericalRiskWarning, guard  # noqa: E402
from .model import InputSpec, Model, load_model  # noqa: E402
from .pipeline import CompileConfig  # noqa: E402
from .report import Report  # noqa: E402
from .trace.tracer import trace  # noqa: E402

__all__ = [
    "CompileConfig",
    "GuardReport",
    "NumericalError",
    "NumericalRiskWarning",
    "InputSpec",
    "Model",
    "NumguardError",
    "Options",
    "Report",
    "bisect",
    "guard",
    "list_passes",
    "search",
    "load_model",
    "trace",
]
