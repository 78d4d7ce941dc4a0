"""The per-element rule every truth of the judge applies: where a computed value is at fault against its truth.

An element is at fault where its error against its truth is beyond the
tolerance of the truth, over ``K`` times an honest implementation's error at
that element (the framework's, or the operator computed by numpy in the same
float), and beyond the element's own conditioning (its conditioning bound: how far the
truth moves when its inputs move by a few roundings). The import question
(``import_stage/agreement.py``) applies it to the model's outputs, the
components (``components/rule.py``) to one node's values; its numbers are
in ``numbers.py``, each with its reason.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ..base.compare import differences, element_scores
from ..base.tolerance import Tolerance
from .numbers import CONDITIONING_ROUNDINGS, CONDITIONING_RUNS, K, CONDITIONING_SIGMAS

_EPSILON = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


@dataclasses.dataclass(frozen=True)
class ElementJudgement:
    """Per element of one output: where TVM is at fault, where nothing can judge."""

    at_fault: np.ndarray  # bool mask
    unjudged: np.ndarray  # bool mask: violating, with no finite truth
    err_tvm: np.ndarray  # |TVM - truth| (inf where TVM is not finite)
    err_framework: np.ndarray


def judge_elements(framework: np.ndarray, tvm: np.ndarray, truth: Optional[np.ndarray], tol: Tolerance,
                   index: int = 0, bound: Optional[np.ndarray] = None) -> ElementJudgement:
    """Each element of one output (same shapes): violating the tolerance
    against the framework, and then at fault or unjudged against ``truth``
    (float64; None: no truth for this output) within ``bound`` (the truth's
    own movement under input rounding, per element; None: not measured)."""
    rtol, atol, _ = tol.for_values(index, np.asarray(framework).dtype, framework)
    fw, mine, diff = differences(framework, tvm)
    violating = element_scores(fw, diff, rtol, atol) > 1.0
    if truth is None:
        nothing = np.full(fw.shape, np.inf)
        return ElementJudgement(np.zeros(fw.shape, bool), violating, nothing, nothing)
    exact = np.asarray(truth, dtype=np.float64)
    judged = np.isfinite(exact)
    with np.errstate(invalid="ignore", over="ignore"):
        err_tvm = np.where(np.isnan(np.abs(mine - exact)), np.inf, np.abs(mine - exact))
        err_fw = np.where(np.isnan(np.abs(fw - exact)), np.inf, np.abs(fw - exact))
    worse = err_tvm > K * err_fw + atol / 10.0
    off_truth = element_scores(exact, err_tvm, rtol, atol) > 1.0
    # an infinite truth judges only where the framework reaches it and TVM does not
    infinite = np.isinf(exact) & (fw == exact) & (mine != exact)
    judged |= infinite
    at_fault = violating & ((np.isfinite(exact) & worse & off_truth) | infinite)
    if bound is not None and np.shape(bound) == exact.shape:
        at_fault &= err_tvm > np.asarray(bound, dtype=np.float64)
    return ElementJudgement(at_fault, violating & ~judged, err_tvm, err_fw)


def conditioning_scale(dtype) -> float:
    """How far (relative) inputs move to measure the conditioning of an output computed in ``dtype``."""
    name = str(dtype) if dtype is not None else "float32"
    name = name if name in _EPSILON else "float32"
    return _EPSILON[name] / 2.0 * CONDITIONING_ROUNDINGS[name]


def conditioning_bound(truth: Sequence, runs: Sequence[Sequence]) -> list:
    """Per output and per element, how far the truth moves under the perturbed
    ``runs``: CONDITIONING_SIGMAS times its root mean square movement over them, and
    no less than its worst one (None for an output without a truth). The runs
    sample a distribution; a correct implementation's error is one more draw
    of it, and the largest of CONDITIONING_RUNS draws is under two of its
    sigmas: a bound there would blame about one element in two hundred of a
    correct float16 MatMul chain. An element where some run gives no finite
    value is measured by the others."""
    bounds: list = []
    for i, exact in enumerate(truth):
        if exact is None:
            bounds.append(None)
            continue
        exact = np.asarray(exact, dtype=np.float64)
        worst, squares, counted = np.zeros(exact.shape), np.zeros(exact.shape), np.zeros(exact.shape)
        for run in runs:
            moved = run[i] if i < len(run) else None
            if moved is None or np.shape(moved) != exact.shape:
                continue
            with np.errstate(invalid="ignore", over="ignore"):
                movement = np.abs(np.asarray(moved, dtype=np.float64) - exact)
            finite = np.isfinite(movement)
            movement = np.where(finite, movement, 0.0)
            worst = np.fmax(worst, movement)
            with np.errstate(over="ignore"):
                squares += movement ** 2
            counted += finite
        with np.errstate(invalid="ignore", over="ignore"):
            rms = np.sqrt(squares / np.maximum(counted, 1))
        bounds.append(np.fmax(worst, CONDITIONING_SIGMAS * rms))
    return bounds


__all__ = ["CONDITIONING_ROUNDINGS", "CONDITIONING_RUNS", "ElementJudgement", "K", "CONDITIONING_SIGMAS",
           "conditioning_scale", "judge_elements", "conditioning_bound"]
