"""Builds in worker processes: a crashing configuration is untestable, never fatal."""

from .service import IN_PROCESS, WORKERS, BuildService, Pending, Workers, available_cores, in_process
from .tasks import INPUT_MODULE, Attempt, ModuleRun, SkipRun

__all__ = ["IN_PROCESS", "WORKERS", "BuildService", "Pending", "Workers", "available_cores", "in_process",
           "INPUT_MODULE", "Attempt", "ModuleRun", "SkipRun"]
