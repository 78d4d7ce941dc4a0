"""Aiming the search with the static range check: where to look first, and a
second fitness where the score is flat.

A violation that lives in a small part of the range (an overflow band of
``exp``, the all-high corner of a float16 convolution, some inputs high and
others low, nearly constant inputs under a float16 normalization) is rarely
met by uniform samples. ``numguard check`` says which operators of the
optimized module can misbehave and which corner or band of each input drives
them there (``rangecheck.drivers``). An ``Aim`` turns that into:

  - ``candidates``: for each warning (the worst first), every input at its
    corner (for a ``mixed`` corner, elements at the end their weight's sign
    asks for when the check knows it, else drawn from both ends), then nearly
    constant inputs at levels inside the band (the band's far end first), then
    uniform samples inside the band;
  - ``threat``: whether overflow is what the warnings fear (the boundary
    candidates then try high magnitudes first);
  - ``secondary(observation)``: how close the reference's outputs come to the
    warned dtype's limit, on a log scale in [0, 1): below a violation the
    score is flat, the magnitude is not.

An Aim holds numbers only (no TVM objects): a search run in a worker gets it
as it is. ``Aim()`` aims at nothing (a model the check had nothing to say
about); the search then is what it was.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Optional

import numpy as np

OVERFLOW_KINDS = ("overflow", "approximation")
LEVELS = (1.0, 0.5, 0.0)  # where in the band the nearly-constant candidates sit, from the far end
JITTER = 1e-3  # the relative spread of a nearly-constant input


@dataclasses.dataclass(frozen=True)
class Target:
    """One warning, as the search sees it: per input, its corner, band and
    (for a mixed corner the check could resolve) the elements' ends (+1 high, -1 low)."""

    kind: str
    dtype: str
    corners: Mapping[str, str]
    bands: Mapping[str, tuple]
    patterns: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

    @property
    def fears_overflow(self) -> bool:
        return self.kind in OVERFLOW_KINDS or (self.kind == "domain"
                                               and any(c == "high" for c in self.corners.values()))


@dataclasses.dataclass(frozen=True)
class Aim:
    targets: tuple = ()

    @classmethod
    def of_check(cls, result) -> "Aim":
        """The aim of a CheckResult: its pipeline warnings, worst first (the model's
        own warnings mark where the reference is not finite: nothing to aim at)."""
        targets = []
        for w in result.concerning("pipeline"):
            if not w.drivers:
                continue
            targets.append(Target(w.warning.kind, w.warning.dtype,
                                  {n: d.corner for n, d in w.drivers.items()},
                                  {n: (d.band.lo, d.band.hi) for n, d in w.drivers.items()},
                                  {n: d.pattern for n, d in w.drivers.items() if d.pattern is not None}))
        return cls(tuple(targets))

    @property
    def threat(self) -> Optional[str]:
        """"overflow" when a warning fears large magnitudes, else None."""
        return "overflow" if any(t.fears_overflow for t in self.targets) else None

    @property
    def limit(self) -> float:
        """The smallest largest-finite value of the warned dtypes (float32's without warnings)."""
        limits = [float(np.finfo(np.dtype(t.dtype)).max) for t in self.targets
                  if t.dtype in ("float16", "float32", "float64")]
        return min(limits) if limits else float(np.finfo(np.float32).max)

    def secondary(self, observation) -> float:
        """log(1 + max |reference|) / log(1 + limit), in [0, 1); 0 without outputs."""
        ref = getattr(observation, "reference", None)
        if ref is None or not np.size(ref):
            return 0.0
        finite = np.abs(ref[np.isfinite(ref)])
        if not finite.size:
            return 0.0
        return min(0.999, math.log1p(float(finite.max())) / math.log1p(self.limit))

    def candidates(self, specs, ranges, gen, conform) -> list:
        """The aimed candidates, in the order they should be tried."""
        out = []
        for target in self.targets:
            out.append({s.name: self._corner(target, s, ranges[s.name], gen, conform) for s in specs})
            for level in LEVELS:
                out.append({s.name: self._nearly(target, s, ranges[s.name], level, gen, conform) for s in specs})
            out.append({s.name: self._inside(target, s, ranges[s.name], gen, conform) for s in specs})
        return out

    @staticmethod
    def _band(target: Target, name: str, r) -> tuple:
        return target.bands.get(name, (r.low, r.high))

    def _corner(self, target, spec, r, gen, conform):
        corner = target.corners.get(spec.name, "both")
        if corner == "mixed":
            pattern = target.patterns.get(spec.name)
            if pattern is None or pattern.size != int(np.prod(spec.shape, dtype=np.int64)):
                pattern = gen.choice([-1.0, 1.0], size=spec.shape)
            return conform(np.where(np.reshape(pattern, spec.shape) > 0, r.high, r.low), spec, r)
        end = r.low if corner == "low" else r.high
        return conform(end, spec, r)

    def _nearly(self, target, spec, r, level: float, gen, conform):
        lo, hi = self._band(target, spec.name, r)
        far = lo if target.corners.get(spec.name) == "low" else hi
        near = hi if far == lo else lo
        v = far + (near - far) * (1.0 - level)
        scale = JITTER * max(abs(v), JITTER * (r.high - r.low))
        if hi > lo:  # a narrow band keeps its candidates: the jitter stays inside it
            scale = min(scale, (hi - lo) / 8)
        values = v + gen.normal(0.0, scale, size=spec.shape)
        return conform(np.clip(values, lo, hi) if hi > lo else values, spec, r)

    def _inside(self, target, spec, r, gen, conform):
        lo, hi = self._band(target, spec.name, r)
        return conform(gen.uniform(lo, hi, size=spec.shape) if hi > lo else np.full(spec.shape, lo), spec, r)
