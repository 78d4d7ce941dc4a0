"""Comparing an optimized build's outputs with the reference's.

The one place where the violation rule and the error metrics live. An element
violates when it differs by more than ``atol`` and more than ``rtol*|ref|``, or
is NaN/Inf where the reference is finite (XLA's and Polygraphy's rule). Its score
is ``|opt-ref| / max(atol, rtol*|ref|)``, so score > 1 exactly when it violates.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from .errors import InternalError
from .frozen import freeze_fields
from .numbers import plain, unplain
from .tolerance import Tolerance

@dataclasses.dataclass(frozen=True)
class OutputMetrics:
    """How one output of the optimized build differs from the reference's."""

    index: int
    shape: list
    dtype_ref: str
    dtype_opt: str
    rtol: float
    atol: float
    score: float
    violations: int
    max_abs: float
    max_rel: float
    max_ulp: float
    p99_abs: float
    min_atol: float  # smallest atol that passes at this rtol
    min_rtol: float  # smallest rtol that passes at this atol
    nan_ref: int
    inf_ref: int
    nan_opt: int
    inf_opt: int
    worst: list
    finding: Optional[str] = None  # "dtype changed", "shape changed"
    # the reference's largest value where the default atol dwarfed them all, and atol follows it (Tolerance.for_values)
    own_scale: Optional[float] = None

    def __post_init__(self):
        freeze_fields(self, "shape", "worst")

    @property
    def violated(self) -> bool:
        return self.score > 1.0

    def to_json(self) -> dict:
        return plain(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data) -> "OutputMetrics":
        return cls(**unplain(dict(data)))


@dataclasses.dataclass(frozen=True)
class Comparison:
    outputs: list

    def __post_init__(self):
        freeze_fields(self, "outputs")

    @property
    def score(self) -> float:
        return max((o.score for o in self.outputs), default=0.0)

    @property
    def violated(self) -> bool:
        return self.score > 1.0

    def to_json(self) -> list:
        return [o.to_json() for o in self.outputs]

    @classmethod
    def from_json(cls, data: list) -> "Comparison":
        return cls([OutputMetrics.from_json(o) for o in data])


def is_float(dtype) -> bool:
    """Floating point, numpy's own (kind "f") or an extended type numpy keeps
    as kind "V" (ml_dtypes' bfloat16 and float8 types, which TVM uses)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (dtype.kind == "V" and dtype.name.startswith(("bfloat", "float")))


def is_finite_outputs(outputs: Sequence[np.ndarray]) -> bool:
    return all(np.all(np.isfinite(np.asarray(o, dtype=np.float64))) for o in outputs if is_float(np.asarray(o).dtype))


def compare_outputs(ref: Sequence[np.ndarray], opt: Sequence[np.ndarray], tol: Tolerance, top_k: int = 5) -> Comparison:
    if len(ref) != len(opt):
        raise InternalError(f"the builds compared return {len(ref)} and {len(opt)} outputs")
    return Comparison([compare_output(i, r, o, tol, top_k) for i, (r, o) in enumerate(zip(ref, opt))])


def differences(ref: np.ndarray, opt: np.ndarray) -> tuple:
    """(ref, opt, |opt - ref|) in float64, with the non-finite rules applied:
    identical non-finite values are no difference; a non-finite value in the
    optimized build where the reference is finite is an infinite one."""
    r = np.asarray(ref).astype(np.float64)
    o = np.asarray(opt).astype(np.float64)
    r_fin, o_fin = np.isfinite(r), np.isfinite(o)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(o - r)
        same_nonfinite = (~r_fin) & ((np.isnan(r) & np.isnan(o)) | (r == o))
        diff = np.where(same_nonfinite, 0.0, diff)
        diff = np.where(r_fin & ~o_fin, np.inf, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
    return r, o, diff


def element_scores(r: np.ndarray, diff: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """``diff / max(atol, rtol*|ref|)``: above 1 exactly where an element violates."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        bound = np.maximum(atol, rtol * np.abs(r))
        score = np.where(bound > 0, diff / np.where(bound > 0, bound, 1.0), np.where(diff > 0, np.inf, 0.0))
    return np.where(np.isnan(score), np.inf, score)


def tolerances(index: int, ref: np.ndarray, tol: Tolerance) -> tuple:
    """(rtol, atol, the output's own scale or None) for output ``index`` whose reference is ``ref``."""
    if is_float(ref.dtype):
        return tol.for_values(index, ref.dtype, ref)
    return (*tol.for_output(index, ref.dtype), None)


def compare_output(index: int, ref: np.ndarray, opt: np.ndarray, tol: Tolerance, top_k: int = 5) -> OutputMetrics:
    ref, opt = np.asarray(ref), np.asarray(opt)
    rtol, atol, own_scale = tolerances(index, ref, tol)
    finding = None
    if ref.dtype != opt.dtype:
        finding = f"dtype changed: {ref.dtype} -> {opt.dtype}"
    if ref.shape != opt.shape:
        finding = f"shape changed: {list(ref.shape)} -> {list(opt.shape)}"
        return _shape_mismatch(index, ref, opt, rtol, atol, finding)
    r, o, diff = differences(ref, opt)
    score = element_scores(r, diff, rtol, atol)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rel = np.where(np.abs(r) > 0, diff / np.abs(r), np.where(diff > 0, np.inf, 0.0))
    flat_score = score.ravel()
    violations = int(np.count_nonzero(flat_score > 1.0))
    finite_diff = diff[np.isfinite(diff)]
    over_r = diff > rtol * np.abs(r)
    over_a = diff > atol
    min_atol = float(np.max(diff[over_r])) if np.any(over_r) else 0.0
    min_rtol = float(np.max(rel[over_a])) if np.any(over_a) else 0.0
    worst = _worst(flat_score, top_k, ref.shape, r, o, diff, rel)
    return OutputMetrics(
        index=index,
        shape=list(ref.shape),
        dtype_ref=str(ref.dtype),
        dtype_opt=str(opt.dtype),
        rtol=rtol,
        atol=atol,
        score=float(np.max(flat_score)) if flat_score.size else 0.0,
        violations=violations,
        max_abs=float(np.max(diff)) if diff.size else 0.0,
        max_rel=float(np.max(rel)) if rel.size else 0.0,
        max_ulp=ulp_distance(ref, opt),
        p99_abs=float(np.percentile(finite_diff, 99)) if finite_diff.size else 0.0,
        min_atol=min_atol,
        min_rtol=min_rtol,
        nan_ref=int(np.count_nonzero(np.isnan(r))),
        inf_ref=int(np.count_nonzero(np.isinf(r))),
        nan_opt=int(np.count_nonzero(np.isnan(o))),
        inf_opt=int(np.count_nonzero(np.isinf(o))),
        worst=worst,
        finding=finding,
        own_scale=own_scale,
    )


def _worst(flat_score, top_k: int, shape, r, o, diff, rel) -> list:
    """The ``top_k`` elements with the highest scores (none of score 0), as the report lists them."""
    worst = []
    order: "np.ndarray | list" = (np.argsort(-flat_score, kind="stable")[:min(top_k, flat_score.size)]
                                  if flat_score.size else [])
    for flat in order:
        if flat_score[flat] == 0:
            break
        worst.append({"index": [int(i) for i in np.unravel_index(int(flat), shape)], "ref": float(r.ravel()[flat]),
                      "opt": float(o.ravel()[flat]), "abs": float(diff.ravel()[flat]),
                      "rel": float(rel.ravel()[flat]), "score": float(flat_score[flat])})
    return worst


def ulp_distance(ref: np.ndarray, opt: np.ndarray) -> float:
    """Largest distance in units in the last place of the reference's dtype."""
    if not is_float(ref.dtype) or ref.size == 0:
        return float(np.max(np.abs(ref.astype(np.float64) - opt.astype(np.float64)))) if ref.size else 0.0
    ints: dict[int, type[np.signedinteger]] = {2: np.int16, 4: np.int32, 8: np.int64}
    itype = ints.get(ref.dtype.itemsize)
    if itype is None:
        return float("nan")
    with np.errstate(invalid="ignore", over="ignore"):
        o = opt.astype(ref.dtype)
    both = np.isfinite(ref) & np.isfinite(o)
    if not np.all(both):
        return float("inf")

    def ordered(a):
        i = a.view(itype).astype(np.int64)
        # map sign-magnitude floats onto a monotone integer line
        return np.where(i < 0, np.iinfo(itype).min - i, i)

    return float(np.max(np.abs(ordered(ref) - ordered(o))))


def _count(test, values: np.ndarray) -> int:
    """How many elements pass ``test`` (np.isnan, np.isinf); 0 for non-float values."""
    return int(np.count_nonzero(test(values.astype(np.float64)))) if is_float(values.dtype) else 0


def _shape_mismatch(index, ref, opt, rtol, atol, finding) -> OutputMetrics:
    inf = float("inf")
    return OutputMetrics(
        index=index, shape=list(ref.shape), dtype_ref=str(ref.dtype), dtype_opt=str(opt.dtype),
        rtol=rtol, atol=atol, score=inf, violations=int(ref.size), max_abs=inf, max_rel=inf,
        max_ulp=inf, p99_abs=inf, min_atol=inf, min_rtol=inf,
        nan_ref=_count(np.isnan, ref), inf_ref=_count(np.isinf, ref),
        nan_opt=_count(np.isnan, opt), inf_opt=_count(np.isinf, opt),
        worst=[], finding=finding,
    )
