"""Asking the model's own framework whether it runs an input at the ends of its range."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ...locate.searches import random_candidate
from . import open_framework
from .runtimes import Framework, FrameworkError


class EndsProbe:
    """``probe(name, "low" | "high")``: does the model's framework run input
    ``name`` at that end of its range (every element of it there, the other
    inputs drawn from their ranges)? Without a framework: no. The framework is
    opened on the first question (most ranges never need one)."""

    def __init__(self, model, ranges: Mapping):
        self._model, self._ranges = model, ranges
        self._framework = None

    def __call__(self, name: str, end: str) -> bool:
        if self._framework is None:
            self._framework = open_framework(self._model.framework_source, self._model.input_names())
        if not isinstance(self._framework, Framework):
            return False
        inputs = random_candidate(self._model.inputs, self._ranges, np.random.default_rng(0))
        given = self._ranges[name]
        value = np.ceil(given.low) if end == "low" else np.floor(given.high)
        inputs[name] = np.full(np.shape(inputs[name]), value).astype(np.asarray(inputs[name]).dtype)
        try:
            self._framework.run(inputs)
        except FrameworkError:
            return False
        return True


__all__ = ["EndsProbe"]
