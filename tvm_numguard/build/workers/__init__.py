"""A generic pool of forked worker processes: a task that kills its worker is lost, never the run."""

from .pool import IN_PROCESS, WORKERS, ForkPool, Pending, Workers, available_cores, can_fork

__all__ = ["IN_PROCESS", "WORKERS", "ForkPool", "Pending", "Workers", "available_cores", "can_fork"]
