"""Shadow builds: compile under a gate, run, compare with the reference."""

from .build import Build, BuildRequest, compile_model, optional_events, run_build
from .compare import (
    Comparison,
    OutputMetrics,
    compare_outputs,
    is_finite_outputs,
)

__all__ = [
    "Build",
    "BuildRequest",
    "Comparison",
    "OutputMetrics",
    "compare_outputs",
    "compile_model",
    "is_finite_outputs",
    "optional_events",
    "run_build",
]
