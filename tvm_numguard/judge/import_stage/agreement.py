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
  (its conditioning bound): how far the element's truth moves when the inputs move by a
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
from ...base.compare import compare_output, is_finite_outputs
from ...base.tolerance import Tolerance
from ...base.words import ImportVerdict
# the per-element rule's names, as the import stage's modules and tests read them here
from ..elements import CONDITIONING_RUNS, K, ElementJudgement, conditioning_scale, judge_elements, conditioning_bound

# what the import stage's verdict may be (base/words.ImportVerdict says each)
IMPORT_VERDICTS = tuple(v.value for v in ImportVerdict)
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


def compare_with_framework(index: int, framework: np.ndarray, tvm: np.ndarray, tol: Tolerance,
                           truth: Optional[np.ndarray] = None, bound: Optional[np.ndarray] = None,
                           judge: bool = True) -> OutputAgreement:
    """One output of TVM's reference (``tvm``) against the framework's, judged
    (with ``judge``, where it differs) against ``truth`` within ``bound``."""
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
    elements = judge_elements(framework, tvm, truth, tol, index, bound)
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
                                   truth: Optional[Sequence] = None, bound: Optional[Sequence] = None,
                                   judge: bool = True) -> list:
    """``compare_with_framework`` for each output the two have in common
    (``truth`` and ``bound``: one entry per output, None where there is none)."""
    def nth(values, i):
        return values[i] if values is not None and i < len(values) else None

    return [compare_with_framework(i, f, t, tol, nth(truth, i), nth(bound, i), judge)
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


__all__ = ["CONDITIONING_RUNS", "ElementJudgement", "conditioning_scale", "IMPORT_VERDICTS", "K", "OutputAgreement",
           "agreement_score", "compare_outputs_with_framework", "compare_with_framework", "conditioning_bound",
           "judge_elements"]
