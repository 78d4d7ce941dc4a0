"""Does TVM compute what the model's framework computes? One witness, three
computations: TVM's reference build (float32), the framework (float32) and the
truth (the model in float64: the framework's own where it has the kernels,
else TVM's float64 build).

For each output the framework stands where the reference stands in a pass
check: TVM's reference is compared with it under the tolerance
(``shadow/compare.py``'s rule). A violating element is TVM's fault when its
error against the truth is beyond the tolerance of the truth (a float32
result within the tolerance of the exact answer is a right answer, however
much closer the framework's is) and more than ``K`` times the framework's
worst error on that output (plus atol/10, as in the oracle's rule): TVM lost
five bits more than the framework. Two float32 implementations that sum in
another order differ by less: TVM's convolution loops against ONNX Runtime's
blocked kernels were measured at 2 to 17 times the framework's error on the
onnx wheel's CNNs (benchmarks/corpus_sweep.py --framework), an import that
computes another formula at thousands of times, or NaN. A different number of
outputs, or another shape, is TVM's fault with no truth needed: the model
defines its outputs' shapes.

Nor is TVM at fault within the output's **conditioning** on the witness
(``spread``): how far the truth itself moves when the inputs move by a few
float32 roundings (``CONDITIONING_ULPS``). A LayerNorm of a constant row is
0 exactly, yet any correctly rounded float32 implementation may return
rounding amplified by 1/sqrt(eps) there (TVM -1.7e-4 where ONNX Runtime
happened to return exactly 0); one framework's lucky exact result is no
evidence against TVM.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ..numbers import plain, unplain
from ..shadow.compare import compare_output, differences, element_scores, is_finite_outputs
from ..tolerance import Tolerance

# what the import stage's verdict may be
# "benign" as the pass question's; "precision": TVM computes in the model's narrow dtype what the
# framework computes wider, and agrees once those operators are kept in float32 (not TVM's fault)
IMPORT_VERDICTS = ("agree", "import", "precision", "benign", "unchecked")
K = 32.0  # TVM is at fault where its error is over K times the framework's worst (five bits)
# the inputs move by up to this many float32 units of rounding when the conditioning is measured:
# the same five bits K allows between two implementations
CONDITIONING_ULPS = 32.0
CONDITIONING_RUNS = 4  # perturbed truth runs: the spread is their worst movement


@dataclasses.dataclass
class OutputAgreement:
    """One output on the witness: TVM's reference against the framework."""

    index: int
    shape_tvm: list
    shape_framework: list
    score: float  # the tolerance rule, the framework as the reference side
    violations: int  # elements beyond the tolerance
    tvm_worse: Optional[int]  # ... of which TVM is worse against the truth (None: no truth)
    max_abs: float
    max_err_tvm: Optional[float]  # against the truth
    max_err_framework: Optional[float]
    worst: dict  # the worst element: index, tvm, framework (and truth)

    @property
    def differs(self) -> bool:
        return self.score > 1.0

    @property
    def tvm_at_fault(self) -> bool:
        """TVM's import is to blame here: another shape, or worse against the truth (or no truth)."""
        if self.shape_tvm != self.shape_framework:
            return True
        return self.differs and (self.tvm_worse is None or self.tvm_worse > 0)

    def to_json(self) -> dict:
        return plain(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data) -> "OutputAgreement":
        return cls(**unplain(dict(data)))


def compare_with_framework(index: int, framework: np.ndarray, tvm: np.ndarray, tol: Tolerance,
                           truth: Optional[np.ndarray] = None, spread: Optional[np.ndarray] = None) -> OutputAgreement:
    """One output of TVM's reference (``tvm``) against the framework's, judged
    against ``truth`` (float64) where there is one, within ``spread`` (the
    truth's own movement under input rounding, where measured)."""
    framework, tvm = np.asarray(framework), np.asarray(tvm)
    metrics = compare_output(index, framework, tvm, tol, top_k=1)
    worst = metrics.worst[0] if metrics.worst else {}
    element = {"index": worst.get("index"), "tvm": worst.get("opt"), "framework": worst.get("ref")}
    if framework.shape != tvm.shape:
        return OutputAgreement(index, list(tvm.shape), list(framework.shape), float("inf"), int(framework.size),
                               None, float("inf"), None, None, element)
    tvm_worse = err_tvm = err_framework = None
    if truth is not None and metrics.violated and np.shape(truth) == framework.shape:
        at_fault, err_tvm, err_framework = tvm_at_fault(framework, tvm, truth, tol, index, spread)
        tvm_worse = int(np.count_nonzero(at_fault))
        if element["index"] is not None:
            element["truth"] = float(np.asarray(truth, dtype=np.float64)[tuple(element["index"])])
    return OutputAgreement(index, list(tvm.shape), list(framework.shape), metrics.score, metrics.violations,
                           tvm_worse, metrics.max_abs, err_tvm, err_framework, element)


def compare_outputs_with_framework(framework: Sequence[np.ndarray], tvm: Sequence[np.ndarray], tol: Tolerance,
                                   truth: Optional[Sequence[np.ndarray]] = None,
                                   spread: Optional[Sequence[np.ndarray]] = None) -> list:
    """``compare_with_framework`` for each output the two have in common."""
    def nth(values, i):
        return values[i] if values is not None and i < len(values) else None

    return [compare_with_framework(i, f, t, tol, nth(truth, i), nth(spread, i))
            for i, (f, t) in enumerate(zip(framework, tvm))]


def tvm_at_fault(framework: np.ndarray, tvm: np.ndarray, truth: np.ndarray, tol: Tolerance, index: int = 0,
                 spread: Optional[np.ndarray] = None) -> tuple:
    """(mask of the elements where TVM is at fault, TVM's and the framework's
    worst error against the truth): beyond the tolerance of the framework and
    of the truth, over K times the framework's worst error, and beyond the
    truth's own ``spread`` under input rounding (where given)."""
    rtol, atol = tol.for_output(index, np.asarray(framework).dtype)
    fw, mine, diff = differences(framework, tvm)
    exact = np.asarray(truth, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err_tvm = np.where(np.isnan(np.abs(mine - exact)), np.inf, np.abs(mine - exact))
        err_fw = np.where(np.isnan(np.abs(fw - exact)), np.inf, np.abs(fw - exact))
    worst_tvm = float(np.max(err_tvm)) if err_tvm.size else 0.0
    worst_fw = float(np.max(err_fw)) if err_fw.size else 0.0
    worse = err_tvm > K * worst_fw + atol / 10.0
    beyond = element_scores(fw, diff, rtol, atol) > 1.0
    off_truth = element_scores(exact, err_tvm, rtol, atol) > 1.0
    at_fault = beyond & worse & off_truth
    if spread is not None and np.shape(spread) == np.shape(exact):
        at_fault &= err_tvm > np.asarray(spread, dtype=np.float64)
    return at_fault, worst_tvm, worst_fw


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


def perturbed(inputs: dict, seed: int) -> dict:
    """``inputs`` with every float moved by up to CONDITIONING_ULPS float32
    roundings (relative, random sign and size; integers kept)."""
    rng = np.random.default_rng(seed)
    eps = float(np.finfo(np.float32).eps) / 2.0 * CONDITIONING_ULPS
    out = {}
    for name, value in inputs.items():
        value = np.asarray(value)
        if value.dtype.kind != "f":
            out[name] = value
            continue
        moved = value.astype(np.float64) * (1.0 + rng.uniform(-eps, eps, size=value.shape))
        out[name] = moved  # the truth takes float64 inputs
    return out


def spread_of(truth: Sequence[np.ndarray], runs: Sequence[Sequence[np.ndarray]]) -> list:
    """Per output, how far the truth moved over the perturbed ``runs``: the
    worst movement of any element, the bound for every element of that output.
    Rounding errors inside an implementation add up coherently (a LayerNorm of a
    constant row errs by one rounding times 1/sqrt(eps), the same for the whole
    row, and a matmul after it sums that), where random input perturbations
    partly cancel: an elementwise bound would be too tight by about sqrt(n)."""
    spreads = []
    for i, exact in enumerate(truth):
        exact = np.asarray(exact, dtype=np.float64)
        worst = 0.0
        for run in runs:
            moved = np.asarray(run[i], dtype=np.float64)
            if moved.shape == exact.shape and moved.size:
                with np.errstate(invalid="ignore"):
                    worst = max(worst, float(np.nanmax(np.abs(moved - exact))))
        spreads.append(np.full(exact.shape, worst))
    return spreads


__all__ = ["CONDITIONING_RUNS", "IMPORT_VERDICTS", "perturbed", "spread_of", "OutputAgreement", "agreement_score", "compare_outputs_with_framework",
           "compare_with_framework"]
