"""Input search: which inputs in the user's range to try.

A search strategy proposes candidates and sees their scores through an
``evaluate`` callback (score > 1 is a violation, None an invalid candidate:
the reference itself is not finite there). This module has the first strategy:
the range's boundary values, then seeded uniform samples.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from .ranges import InputRange

Inputs = dict  # input name -> numpy array
Evaluate = Callable[[Inputs], Optional[float]]


@dataclasses.dataclass
class SearchResult:
    best_inputs: Optional[Inputs]
    best_score: float
    evaluations: int
    invalid: int
    history: list  # score per evaluation, None for invalid
    strategy: str

    def to_json(self) -> dict:
        return {
            "strategy": self.strategy,
            "evaluations": self.evaluations,
            "invalid": self.invalid,
            "best_score": self.best_score,
        }


def fill(spec, value: float) -> np.ndarray:
    return np.full(spec.shape, value, dtype=spec.dtype)


def uniform(spec, rng: InputRange, gen: np.random.Generator) -> np.ndarray:
    if spec.is_integer:
        lo, hi = int(np.ceil(rng.low)), int(np.floor(rng.high))
        return gen.integers(lo, hi + 1, size=spec.shape).astype(spec.dtype)
    values = gen.uniform(rng.low, rng.high, size=spec.shape)
    return np.clip(values.astype(spec.dtype), rng.low, rng.high)


def boundary_candidates(specs: Sequence, ranges: Mapping[str, InputRange]) -> list:
    """Every input at its low bound, at its high bound, and at zero when inside."""
    out = []
    for pick in ("low", "high", "zero"):
        cand = {}
        for spec in specs:
            r = ranges[spec.name]
            if pick == "zero":
                value = 0.0 if r.low <= 0.0 <= r.high else None
            else:
                value = getattr(r, pick)
            if value is None:
                break
            if spec.is_integer:
                value = np.ceil(value) if pick == "low" else np.floor(value)
            cand[spec.name] = fill(spec, value)
        else:
            out.append(cand)
    return out


class SampleSearch:
    """Boundary values, then seeded uniform samples; stops early at ``stop_at``."""

    name = "sample"

    def __init__(self, samples: int = 8):
        self.samples = samples

    def run(self, evaluate: Evaluate, specs: Sequence, ranges: Mapping[str, InputRange], seed: int,
            stop_at: Optional[float] = None) -> SearchResult:
        gen = np.random.default_rng(seed)
        candidates = boundary_candidates(specs, ranges)
        candidates += [{s.name: uniform(s, ranges[s.name], gen) for s in specs} for _ in range(self.samples)]
        result = SearchResult(None, -1.0, 0, 0, [], self.name)
        for cand in candidates:
            score = evaluate(cand)
            result.evaluations += 1
            result.history.append(score)
            if score is None:
                result.invalid += 1
                continue
            if score > result.best_score:
                result.best_score, result.best_inputs = score, cand
            if stop_at is not None and score > stop_at:
                break
        return result


class FixedInputs:
    """Use inputs the user gave (``--inputs witness.npz``) instead of searching."""

    name = "given"

    def __init__(self, inputs: Inputs):
        self.inputs = inputs

    def run(self, evaluate: Evaluate, specs, ranges, seed, stop_at=None) -> SearchResult:
        score = evaluate(self.inputs)
        best = -1.0 if score is None else score
        return SearchResult(self.inputs if score is not None else None, best, 1, int(score is None), [score], self.name)
