"""Where a session's reference build lives, and where its runs are made.

The reference skips every optional event. Its gate decides that as the
events come (``compile_model(reference=True)``), so it needs nothing from the
pipeline as written: in worker mode a worker of its own (``hold``) builds it
while the numguard process builds that pipeline, and from then on runs it
beside this process's runs of the optimized build; a crash there is an error,
not the end of the process. Elsewhere it is built and run in this process.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

import numpy as np

from ..base.progress import waiting
from .workers import WORKERS, Workers
from .workers import memory
from .compile import Build, BuildRequest, compile_model
from .tasks import BuildService, ReferenceRun, Started, in_process
from .vm_link import Linking


class Reference:
    """The reference of one BuildSession."""

    def __init__(self, session):
        self._session = session
        self._worker: Optional[BuildService] = None  # the worker holding it (``hold``)
        self._made: Optional[Started] = None  # ... its build of it
        self._here: Optional[Build] = None  # made in this process
        self._owner = 0  # the process that forked the worker (a process forked later has a copy of this)
        self.held = False  # whether a worker of its own made and ran it (the report says so)

    def hold(self, workers: Workers) -> None:
        """In worker mode: fork the worker and start its build now."""
        if workers.mode != WORKERS or self._worker is not None:
            return
        self._owner = os.getpid()
        # the reference is as needed as this process's own builds (it was one of them): it
        # takes no share of --max-memory, which bounds the configurations a bisection tries
        self._worker = BuildService(self._session, workers, workers.build_timeout, jobs=1,
                                    cap=memory.machine_bytes())
        self._made = self._worker.submit(ReferenceRun(()))
        self.held = True

    def building(self) -> bool:
        """Whether the held worker is still making it."""
        return self._made is not None and not self._made.done()

    def made(self, skip: frozenset) -> Optional[str]:
        """Made, here or by the held worker (waited for, and counted once as
        one of the session's builds, skipping ``skip``): None, or why it fails."""
        if self._made is None:
            return self.here().error
        optimized = self._session.optimized
        return self._session.take(self._made, skip=skip, doing="the reference's build (every optional pass "
                                  "skipped) and its VM, made in a worker of its own",
                                  estimate=optimized.seconds if optimized is not None else None).untestable

    def here(self) -> Build:
        """The reference made in this process, once (in a worker: the held one's)."""
        session = self._session
        if self._here is None:
            with waiting(session.progress, "TVM compiling the reference (every optional pass skipped)"):
                # linked alone, as a user may be given it; its kernels serve the builds after it
                self._here = compile_model(session.model.mod, session.config, BuildRequest(reference=True),
                                           linking=Linking(session.kernels, alone=True))
            session.memo.note(self._here)
            if session.optional:  # a bisection's request for every optional event skipped is this build
                session.memo.remember(session.reference_skip, self._here)
        return self._here

    def start(self, inputs: Mapping[str, np.ndarray]) -> Started:
        """A run on ``inputs``: started now by the held worker, or made here when its result is asked for."""
        task = ReferenceRun((inputs,))
        if self._worker is not None and os.getpid() == self._owner:
            return self._worker.submit(task)
        return in_process(task, self._session)

    def stop(self) -> None:
        """Stop the held worker (later runs are made here; ``made`` still tells how its build went)."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
