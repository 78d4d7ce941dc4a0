"""Does a model ignore its inputs? Told from the reference's runs a session observes."""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np


class ConstancyWatch:
    """Keeps the first valid (inputs, reference outputs) observed and whether any
    later input, and any later output, differed from them: a model whose
    outputs never change while its inputs do ignores its inputs."""

    def __init__(self):
        self._first: Optional[tuple] = None
        self.inputs_vary = False
        self.outputs_vary = False

    def note(self, inputs: Mapping[str, np.ndarray], outputs: list) -> None:
        """One valid observation: ``inputs`` and the reference's ``outputs`` on them."""
        if self._first is None:
            self._first = (inputs, outputs)
            return
        if self.inputs_vary and self.outputs_vary:  # settled: no more byte comparisons per evaluation
            return
        first_inputs, first_outputs = self._first
        self.inputs_vary = self.inputs_vary or any(not same_bytes(inputs[k], first_inputs[k]) for k in inputs)
        self.outputs_vary = self.outputs_vary or any(not same_bytes(a, b) for a, b in zip(outputs, first_outputs))

    @property
    def outputs_constant(self) -> bool:
        """The very same outputs on every valid input observed, and those inputs
        were not all the same (a range of one point proves nothing)."""
        return self.inputs_vary and not self.outputs_vary


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical: same shape, dtype and bytes (NaNs included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
