"""What a run reports to and where its builds are made, with one default each."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from ..base.progress import Progress, silent
from .workers import Workers


@dataclasses.dataclass(frozen=True)
class RunContext:
    """The hooks of one run and its workers.

    ``progress(message)`` sees phase messages and details (``progress.Detail``);
    ``on_build(build)`` sees every compile (a ``Build``, or a worker's
    ``RemoteBuild``); ``on_witness(inputs)`` sees a violation's witness as
    soon as it is known, before bisection (a report writer keeps it even if
    the run is stopped); ``workers``: where builds that may crash are made
    (default: one worker process per core).
    """

    progress: Callable[[str], None] = silent
    on_build: Optional[Callable] = None
    on_witness: Optional[Callable[[dict], None]] = None
    workers: Workers = Workers()

    @classmethod
    def of(cls, progress: Progress = None, on_build: Optional[Callable] = None,
           on_witness: Optional[Callable[[dict], None]] = None, workers: Optional[Workers] = None) -> "RunContext":
        """A context from a caller's optional hooks (None: the default)."""
        return cls(progress or silent, on_build, on_witness, workers or Workers())

    def in_process(self) -> "RunContext":
        """The same hooks, every build made in this process."""
        return dataclasses.replace(self, workers=Workers(jobs=0))

    def quiet(self) -> "RunContext":
        """The same workers, no hooks (a worker's: its parent reports)."""
        return RunContext(workers=self.workers)
