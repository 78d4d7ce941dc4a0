"""Does TVM compute what the model's framework computes? One witness, three
computations: TVM's reference build, the framework, and the truth (the model
in float64, computed without TVM: ``framework/``).

Every rule is per element: an element is excused only by its own truth error
and its own conditioning, never by a bound taken over a whole output (an
output that concatenates pixels and scores would otherwise excuse a wrong score
by the pixels' rounding).

For each output TVM's reference is compared with the framework under the
tolerance (``base/compare.py``'s score, the framework's value in the place
the pass question gives the reference's). A violating element is TVM's fault when:

- its error against the truth is beyond the tolerance of the truth (a result
  within the tolerance of the exact answer is a right answer, however much
  closer the framework's is);
- it is more than ``K`` times the framework's own error at that element (plus
  atol/10, as in the oracle's rule): TVM lost five bits more than the
  framework there. Two float32 implementations that sum in another order
  differ by less (TVM's convolution loops against ONNX Runtime's blocked
  kernels: 2 to 17 times); an import that computes another formula differs by
  thousands of times, or NaN;
- and it is beyond that element's **conditioning** on the witness
  (``spread``): how far the element's truth moves when the inputs move by a
  few roundings of the float the output is computed in
  (``CONDITIONING_ROUNDINGS``). A LayerNorm of a constant row
  is 0 exactly, yet any correctly rounded float32 implementation may return
  rounding amplified by 1/sqrt(eps) there; one framework's lucky exact
  result is no evidence against TVM.

An element with no finite truth (no independent float64 run reaches its
output, or the truth is NaN there) cannot be judged: it is counted
``unjudged``, never excused. A different number of outputs, or another shape,
is TVM's fault with no truth needed: the model defines its outputs' shapes.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ...base.frozen import freeze_fields
from ...base.numbers import plain, unplain
from ...base.compare import compare_output, differences, element_scores, is_finite_outputs
from ...base.tolerance import Tolerance

# what the import stage's verdict may be: "benign" as the pass question's; "precision": TVM
# computes in the model's narrow dtype what the framework computes wider, and agrees once those
# operators are kept in float32; "unjudged": they differ and no independent truth says who is right
IMPORT_VERDICTS = ("agrees", "import", "precision", "benign", "unjudged", "unanswered")
K = 32.0  # TVM is at fault where its error is over K times the framework's at that element (five bits)
# the inputs move by up to this many roundings of the float an output is computed in when its
# conditioning is measured: in float32 the same five bits K allows between two implementations;
# in float16 and bfloat16 two, since every intermediate value of such a model is rounded that
# coarsely (a one-ulp change of a softmax's float16 argument moves its result by 0.4%)
CONDITIONING_ROUNDINGS = {"float64": 32.0, "float32": 32.0, "float16": 2.0, "bfloat16": 2.0}
_EPSILON = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
# moved truth runs (Framework.moved_truth): an element's spread is measured over them. Each run moves an
# element by a random share of its sensitivity; with 8 the chance that all 8 moves are under a
# tenth of it is 1e-8
CONDITIONING_RUNS = 8
# an element's spread, in root mean squares of its movement over those runs (``spread_of``)
SPREAD_SIGMAS = 3.0


@dataclasses.dataclass(frozen=True)
class OutputAgreement:
    """One output on the witness: TVM's reference against the framework.
    ``tvm_worse``: violating elements that are TVM's fault (None: no truth was
    asked); ``unjudged``: violating elements with no finite truth; ``worst``:
    the element reported (the worst one at fault, else the worst violating):
    its index, TVM's and the framework's values, and where judged the truth
    and each side's error against it (``err_tvm``, ``err_framework``)."""

    index: int
    shape_tvm: list
    shape_framework: list
    score: float  # the tolerance rule, scaled by the framework's value
    violations: int  # elements beyond the tolerance
    tvm_worse: Optional[int]
    max_abs: float
    worst: dict
    unjudged: int = 0

    def __post_init__(self):
        freeze_fields(self, "shape_tvm", "shape_framework", "worst")

    @property
    def differs(self) -> bool:
        return self.score > 1.0

    @property
    def tvm_at_fault(self) -> bool:
        """TVM's import is to blame here: another shape, or elements worse against the truth."""
        if self.shape_tvm != self.shape_framework:
            return True
        return self.differs and bool(self.tvm_worse)

    @property
    def not_judged(self) -> bool:
        """It differs, and some of its differing elements have no truth to judge them by."""
        return self.differs and self.unjudged > 0

    def to_json(self) -> dict:
        return plain(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data) -> "OutputAgreement":
        return cls(**unplain(dict(data)))


@dataclasses.dataclass(frozen=True)
class ElementJudgement:
    """Per element of one output: where TVM is at fault, where nothing can judge."""

    at_fault: np.ndarray  # bool mask
    unjudged: np.ndarray  # bool mask: violating, with no finite truth
    err_tvm: np.ndarray  # |TVM - truth| (inf where TVM is not finite)
    err_framework: np.ndarray


def judge_elements(framework: np.ndarray, tvm: np.ndarray, truth: Optional[np.ndarray], tol: Tolerance,
                   index: int = 0, spread: Optional[np.ndarray] = None) -> ElementJudgement:
    """Each element of one output (same shapes): violating the tolerance
    against the framework, and then at fault or unjudged against ``truth``
    (float64; None: no truth for this output) within ``spread`` (the truth's
    own movement under input rounding, per element; None: not measured)."""
    rtol, atol = tol.for_output(index, np.asarray(framework).dtype)
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
    if spread is not None and np.shape(spread) == exact.shape:
        at_fault &= err_tvm > np.asarray(spread, dtype=np.float64)
    return ElementJudgement(at_fault, violating & ~judged, err_tvm, err_fw)


def compare_with_framework(index: int, framework: np.ndarray, tvm: np.ndarray, tol: Tolerance,
                           truth: Optional[np.ndarray] = None, spread: Optional[np.ndarray] = None,
                           judge: bool = True) -> OutputAgreement:
    """One output of TVM's reference (``tvm``) against the framework's, judged
    (with ``judge``, where it differs) against ``truth`` within ``spread``."""
    framework, tvm = np.asarray(framework), np.asarray(tvm)
    metrics = compare_output(index, framework, tvm, tol, top_k=1)
    element = element_at(metrics.worst[0]["index"] if metrics.worst else None, framework, tvm)
    if framework.shape != tvm.shape:
        return OutputAgreement(index, list(tvm.shape), list(framework.shape), float("inf"), int(framework.size),
                               None, float("inf"), element)
    if not (judge and metrics.violated):
        return OutputAgreement(index, list(tvm.shape), list(framework.shape), metrics.score, metrics.violations,
                               None, metrics.max_abs, element)
    if truth is not None and np.shape(truth) != framework.shape:
        truth = None  # a truth of another shape judges nothing
    elements = judge_elements(framework, tvm, truth, tol, index, spread)
    element = _reported_element(framework, tvm, truth, elements, element)
    return OutputAgreement(index, list(tvm.shape), list(framework.shape), metrics.score, metrics.violations,
                           int(np.count_nonzero(elements.at_fault)), metrics.max_abs, element,
                           int(np.count_nonzero(elements.unjudged)))


def element_at(index: Optional[list], framework, tvm) -> dict:
    """The element ``index`` of an output (None: no element differs), as the
    import stage says it: TVM's value and the framework's."""
    if index is None:
        return {"index": None, "tvm": None, "framework": None}
    at = tuple(index)
    return {"index": list(index), "tvm": float(np.asarray(tvm, dtype=np.float64)[at]),
            "framework": float(np.asarray(framework, dtype=np.float64)[at])}


def _reported_element(framework, tvm, truth, elements: ElementJudgement, fallback: dict) -> dict:
    """The element a report shows: the worst one at fault (by TVM's error), else ``fallback``."""
    if not np.any(elements.at_fault):
        if truth is None or fallback.get("index") is None:
            return fallback
        at = tuple(fallback["index"])
    else:
        masked = np.where(elements.at_fault, elements.err_tvm, -1.0)
        at = np.unravel_index(int(np.argmax(masked)), masked.shape)
    element = {"index": [int(i) for i in at], "tvm": float(np.asarray(tvm, dtype=np.float64)[at]),
               "framework": float(np.asarray(framework, dtype=np.float64)[at])}
    if truth is not None:
        element.update(truth=float(np.asarray(truth, dtype=np.float64)[at]),
                       err_tvm=float(elements.err_tvm[at]), err_framework=float(elements.err_framework[at]))
    return element


def compare_outputs_with_framework(framework: Sequence[np.ndarray], tvm: Sequence[np.ndarray], tol: Tolerance,
                                   truth: Optional[Sequence] = None, spread: Optional[Sequence] = None,
                                   judge: bool = True) -> list:
    """``compare_with_framework`` for each output the two have in common
    (``truth`` and ``spread``: one entry per output, None where there is none)."""
    def nth(values, i):
        return values[i] if values is not None and i < len(values) else None

    return [compare_with_framework(i, f, t, tol, nth(truth, i), nth(spread, i), judge)
            for i, (f, t) in enumerate(zip(framework, tvm))]


def agreement_score(framework: Sequence[np.ndarray], tvm: Sequence[np.ndarray], tol: Tolerance) -> float:
    """How far TVM's reference is from the framework (above 1: beyond the
    tolerance; infinite for another number of outputs or another shape). Where
    the framework's own outputs are not finite the input says nothing of TVM's
    import (as an input where the reference is not finite says nothing of a
    pass): 0."""
    if len(framework) != len(tvm):
        return float("inf")
    if not is_finite_outputs(framework):
        return 0.0
    scores = [compare_output(i, f, t, tol, top_k=0).score for i, (f, t) in enumerate(zip(framework, tvm))]
    return max(scores, default=0.0)


def conditioning_scale(dtype) -> float:
    """How far (relative) inputs move to measure the conditioning of an output computed in ``dtype``."""
    name = str(dtype) if dtype is not None else "float32"
    name = name if name in _EPSILON else "float32"
    return _EPSILON[name] / 2.0 * CONDITIONING_ROUNDINGS[name]


def spread_of(truth: Sequence, runs: Sequence[Sequence]) -> list:
    """Per output and per element, how far the truth moves under the perturbed
    ``runs``: SPREAD_SIGMAS times its root mean square movement over them, and
    no less than its worst one (None for an output without a truth). The runs
    sample a distribution; a correct implementation's error is one more draw
    of it, and the largest of CONDITIONING_RUNS draws is under two of its
    sigmas: a bound there would blame about one element in two hundred of a
    correct float16 MatMul chain. An element where some run gives no finite
    value is measured by the others."""
    spreads = []
    for i, exact in enumerate(truth):
        if exact is None:
            spreads.append(None)
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
        spreads.append(np.fmax(worst, SPREAD_SIGMAS * rms))
    return spreads


__all__ = ["CONDITIONING_RUNS", "ElementJudgement", "conditioning_scale", "IMPORT_VERDICTS", "K", "OutputAgreement", "agreement_score",
           "compare_outputs_with_framework", "compare_with_framework", "judge_elements", "spread_of"]
