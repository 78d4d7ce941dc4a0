"""TirPipelineOutput: the module the TIR pipeline returned, for a build's fingerprint.

``tvm.tirx.build`` runs ``tirx.BindTarget``, then the TIR pipeline as one
top-level pass call, then TVM's own host/device split and finalization on
parts of the module. The module that top-level call returned is therefore the
whole lowered TIR as the pipeline made it; what follows depends only on it and
on the TVM version. The builder enables the instrument for the TIR phase only.
"""

from __future__ import annotations

from typing import Optional

import tvm

from ..relax_ir import pristine
from .events import EventPath


@tvm.instrument.pass_instrument
class TirPipelineOutput:
    """``module``: a pristine copy of what the first top-level pass after
    ``tirx.BindTarget`` returned in the TIR phase (None before that)."""

    def __init__(self):
        self.path = EventPath()
        self.active = False
        self.bound = False
        self.module: Optional[tvm.IRModule] = None

    def set_phase(self, phase: str) -> None:
        self.path.set_phase(phase)
        self.active = phase == "tir"

    def should_run(self, mod, info):
        self.path.propose(info.name, info.opt_level)
        return True

    def run_before_pass(self, mod, info):
        self.path.enter(info.name, info.opt_level)

    def run_after_pass(self, mod, info):
        event = self.path.leave(info.name)
        if not self.active or event is None or event.depth != 0:
            return
        if event.name == "tirx.BindTarget":
            self.bound = True
        elif self.bound and self.module is None:
            self.module = pristine(mod)
