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
from .base import EventInstrument


@tvm.instrument.pass_instrument
class TirPipelineOutput(EventInstrument):
    """``module``: a pristine copy of what the first top-level pass after
    ``tirx.BindTarget`` returned in the TIR phase (None before that)."""

    def __init__(self):
        super().__init__()
        self.active = False
        self.bound = False
        self.module: Optional[tvm.IRModule] = None

    def set_phase(self, phase: str) -> None:
        super().set_phase(phase)
        self.active = phase == "tir"

    def left(self, event, mod):
        if not self.active or event.depth != 0:
            return
        if event.name == "tirx.BindTarget":
            self.bound = True
        elif self.bound and self.module is None:
            self.module = pristine(mod)
