"""Aiming at cancellation: drive one reference output element to zero.

A pass's error is worst, relative to the tolerance, where the reference output
is near zero while the terms that make it are not (catastrophic cancellation:
the optimized build's error in those terms survives, the tolerance's
``rtol*|ref|`` part vanishes). Uniform samples rarely land there; a root search
does, in a few evaluations.

Given two evaluated candidates on which one output element of the reference
has opposite signs, the segment between them (inside the box, so inside the
range) crosses zero for that element; regula falsi (Illinois variant) along the
segment finds the crossing. The element aimed at is the one with the largest
absolute error on the best candidate that some other candidate can bracket.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


class ZeroCrossing:
    """One instance per search run: remembers which elements it has aimed at."""

    def __init__(self, steps: int = 8):
        self.steps = steps
        self.tried: set = set()

    def bracket(self, archive: Sequence[tuple]):
        """(best, other, element) to aim at, or None.

        ``archive`` holds (fitness, candidate, Observation) triples; only those
        with reference values count."""
        seen = [t for t in archive if t[2] is not None and t[2].reference is not None]
        if len(seen) < 2:
            return None
        best = max(seen, key=lambda t: t[0])
        ref, err = best[2].reference, best[2].error
        others = [t for t in seen if t[1] is not best[1] and t[2].reference.shape == ref.shape]
        if not others or ref.size == 0:
            return None
        refs = np.stack([t[2].reference for t in others])
        opposite = (np.sign(refs) * np.sign(ref)) < 0
        reachable = opposite.any(axis=0) & np.isfinite(err)
        if self.tried:
            reachable[list(self.tried)] = False
        if not reachable.any():
            return None
        element = int(np.argmax(np.where(reachable, err, -1.0)))
        self.tried.add(element)
        rows = np.flatnonzero(opposite[:, element])
        other = others[int(rows[np.argmin(np.abs(refs[rows, element]))])]
        return best, other, element

    def search(self, run, specs, ranges, archive: Sequence[tuple], conform) -> list:
        """Evaluate points on the segment best -> other until the element's
        reference value is (nearly) zero; returns their (fitness, cand, obs)."""
        aim = self.bracket(archive)
        if aim is None:
            return []
        (_, xa, oa), (_, xb, ob), e = aim
        start = {s.name: np.asarray(xa[s.name], dtype=np.float64) for s in specs}
        delta = {s.name: np.asarray(xb[s.name], dtype=np.float64) - start[s.name] for s in specs}
        t0, g0, t1, g1 = 0.0, float(oa.reference[e]), 1.0, float(ob.reference[e])
        small = 1e-7 * max(abs(g0), abs(g1))
        kept = 0  # +1: the last two steps kept t1's side, -1: t0's
        out = []
        for _ in range(self.steps):
            if run.done() or t1 - t0 < 1e-12:
                break
            t = t0 - g0 * (t1 - t0) / (g1 - g0)
            if not (t0 < t < t1) or not math.isfinite(t):
                t = 0.5 * (t0 + t1)
            cand = {s.name: conform(start[s.name] + t * delta[s.name], s, ranges[s.name]) for s in specs}
            scored = run.observe(cand)
            out.append(scored)
            obs = scored[2]
            if obs is None or obs.reference is None or obs.reference.shape != oa.reference.shape:
                break
            g = float(obs.reference[e])
            if abs(g) <= small:
                break
            if np.sign(g) == np.sign(g0):
                t0, g0 = t, g
                if kept == 1:
                    g1 /= 2  # Illinois: the kept end moves no more; weaken it
                kept = 1
            else:
                t1, g1 = t, g
                if kept == -1:
                    g0 /= 2
                kept = -1
        return out
