"""The per-element rule, applied to one value a component computed against its truth.

The same rule as the import question's (``judge/elements.judge_elements``):
an element is at fault where it is beyond the tolerance of its truth, over
``K`` times as far off as an honest implementation of the same float there,
and beyond the truth's own movement under a few roundings of its arguments
(its conditioning bound) and, for an operator that sums, beyond the error any
order of its sum may make (its summation bound, ``judge/summation.py``). An
operator that is exact on its inputs (a rounding, a comparison, a maximum) has
no conditioning bound: on the same inputs it must give the same result.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np

from ...base.tolerance import Tolerance
from ..framework.runtimes import moved
from ..elements import CONDITIONING_RUNS, conditioning_scale, judge_elements, conditioning_bound
from ..summation import MEASURED_REDUCTIONS, is_mean, magnitudes_of, relax_reduction_bound, relax_terms, summation_bound
from .meaning import Attrs


@dataclasses.dataclass(frozen=True)
class Fault:
    """Where ``mine`` is at fault: how many elements, and the worst of them
    (index, TVM's value, the honest implementation's, the truth)."""

    elements: int
    worst: dict

    @property
    def found(self) -> bool:
        return self.elements > 0


def fault_of(honest, mine, truth, tol: Tolerance, bound=None) -> Fault:
    """``mine`` against ``truth`` (float64), with ``honest`` the same computation done
    honestly in ``mine``'s float; shapes must agree (another shape is at fault everywhere)."""
    honest, mine = np.asarray(honest), np.asarray(mine)
    truth = np.asarray(truth, dtype=np.float64) if np.asarray(truth).dtype.kind in "fiub" else np.asarray(truth)
    if mine.shape != truth.shape:
        return Fault(int(max(mine.size, 1)), {"index": None, "shape_tvm": list(mine.shape),
                                               "shape_truth": list(truth.shape)})
    if mine.dtype.kind in "iub" or truth.dtype.kind not in "fc":
        wrong = np.asarray(mine != truth.astype(mine.dtype)) if mine.dtype.kind in "iub" else np.zeros(mine.shape, bool)
        return _fault(wrong, np.abs(mine.astype(np.float64) - truth.astype(np.float64)), honest, mine, truth)
    elements = judge_elements(honest.astype(mine.dtype) if honest.dtype != mine.dtype else honest, mine, truth,
                              tol, 0, bound)
    return _fault(elements.at_fault, elements.err_tvm, honest, mine, truth)


def _fault(mask, err, honest, mine, truth) -> Fault:
    count = int(np.count_nonzero(mask))
    if not count:
        return Fault(0, {})
    at = np.unravel_index(int(np.argmax(np.where(mask, np.nan_to_num(err, posinf=np.finfo(np.float64).max), -1.0))),
                          mask.shape)
    number = lambda a: float(np.asarray(a, dtype=np.float64)[at]) if np.shape(a) == mask.shape else None  # noqa: E731
    return Fault(count, {"index": [int(i) for i in at], "tvm": number(mine), "honest": number(honest),
                         "truth": number(truth)})


def _conditioning_bound_over(evaluate: Callable[[Sequence], np.ndarray], values: Sequence, truth: np.ndarray,
                dtype: str) -> Optional[np.ndarray]:
    """How far ``evaluate`` (float64) moves when its float arguments move by the
    roundings of ``dtype`` the conditioning allows, per element (None where it fails)."""
    scale = conditioning_scale(dtype)
    runs = []
    for seed in range(CONDITIONING_RUNS):
        rng = np.random.default_rng(seed)
        moved_values = [_moved(v, rng, scale) for v in values]
        try:
            out = evaluate(moved_values)
        except Exception:  # noqa: BLE001 - a moved argument outside the operator's domain: the others measure
            continue
        runs.append([np.asarray(out[0] if isinstance(out, tuple) else out, dtype=np.float64)])
    if not runs:
        return None
    return conditioning_bound([np.asarray(truth, dtype=np.float64)], runs)[0]


def honest_bound(meaning, values: Sequence, truth: np.ndarray, dtype: str) -> Optional[np.ndarray]:
    """How far an honest implementation of ``meaning`` in ``dtype`` may be from ``truth`` on
    ``values`` (float64), per element: its conditioning bound, and where it sums, its summation
    bound (``judge/summation.py``); None for an operator exact on its inputs."""
    if meaning.exact:
        return None
    bound = _conditioning_bound_over(lambda v: meaning.evaluate(v), values, truth, dtype)
    attrs = Attrs(meaning.attrs)
    parts = [bound, relax_reduction_bound(meaning.op, values, attrs, dtype)]  # a reduction's plain loop, a norm's sums
    terms = relax_terms(meaning.op, values, truth, attrs)
    if terms is not None:
        magnitudes, squares = (_first_of(meaning.evaluate(magnitudes_of(list(values), power))) for power in (1, 2))
        if magnitudes.shape == np.shape(truth):
            # a reduction over its inputs has its plain loop measured (relax_reduction_bound): no one-way part
            measured = meaning.op in MEASURED_REDUCTIONS
            parts.append(summation_bound(magnitudes, terms, dtype, None if measured else truth, squares,
                                         is_mean(meaning.op)))
    held = [np.asarray(p, dtype=np.float64) for p in parts if p is not None and np.shape(p) == np.shape(truth)]
    return np.fmax.reduce(held) if held else None


def _first_of(value) -> np.ndarray:
    return np.asarray(value[0] if isinstance(value, tuple) else value, dtype=np.float64)


def _moved(value, rng, scale: float):
    if isinstance(value, (list, tuple)):
        return [_moved(v, rng, scale) for v in value]
    return moved(value, rng, scale) if isinstance(value, np.ndarray) else value


__all__ = ["Fault", "fault_of", "honest_bound"]
