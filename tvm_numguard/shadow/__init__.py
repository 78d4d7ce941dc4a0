"""Shadow builds: compile under a gate, run, compare with the reference."""

from .build import Build, compile_model, optional_events, run_build, summarize_error
from ..tolerance import DEFAULT_TOLERANCES
from .compare import (
    Comparison,
    OutputMetrics,
    Tolerance,
    compare_outputs,
    is_finite_outputs,
)

__all__ = [
    "DEFAULT_TOLERANCES",
    "Build",
    "Comparison",
    "OutputMetrics",
    "Tolerance",
    "compare_outputs",
    "compile_model",
    "is_finite_outputs",
    "optional_events",
    "run_build",
    "summarize_error",
]
