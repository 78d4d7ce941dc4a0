"""Input searches: random, boundary, evolve (the default).

Each has ``name`` and ``run(evaluate, specs, ranges, seed, stop_at=None, budget=None)
-> SearchResult``, like SampleSearch. ``evaluate(inputs)`` returns a score (> 1 is a
violation) or None (invalid: the reference is not finite there). Every candidate
lies in [low, high] of its input and has the input's dtype (integer inputs hold
integers). Everything random comes from ``numpy.random.default_rng(seed)``, so the
same seed gives the same history and witness (for an evaluation budget; a seconds
limit beside it cuts the same sequence at a time-dependent point, which the
result's ``repeat_budget`` repeats).

The interface of an input search: it proposes candidates and sees their scores
through an ``evaluate`` callback, and returns a ``SearchResult``. ``evaluate``
may instead return an Observation, which adds what the builds computed;
searches that aim at single output elements use it, the others only read its
score. ``FixedInputs`` stands in for a search when the user gives the inputs.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
import time
import types
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ..base.errors import UsageError
from ..base.frozen import freeze_fields
from ..build.observation import Observation, score_of
from .aimed import Aim
from .budget import DEFAULT_BUDGET, Budget
from .cancellation import ZeroCrossing
from .edges import edge_candidates
from .ranges import InputRange

INVALID = -math.inf  # fitness of a candidate the reference cannot score


# -- the interface of a search --------------------------------------------

Inputs = dict  # input name -> numpy array
# what ended a search whose ranges hold one input (SearchResult.stopped_by): nothing else to try
ONE_POINT = "one point"


Evaluate = Callable[[Inputs], Union[Optional[float], Observation]]


@dataclasses.dataclass(frozen=True)
class SearchResult:
    best_inputs: Optional[Inputs]
    best_score: Optional[float]  # None: no valid input
    evaluations: int
    invalid: int
    history: list  # score per evaluation, None for invalid
    search: str  # the search that made it (searches.SEARCHES), or "given"
    # what ended the search: "evaluations", "time" (the seconds limit), "target score" or
    # ONE_POINT (the ranges hold one input, evaluated once)
    stopped_by: str = "evaluations"
    # the --budget that repeats exactly these inputs (None: a seconds-only budget cannot)
    repeat_budget: Optional[str] = None

    def __post_init__(self):
        freeze_fields(self, "best_inputs", "history")

    def to_json(self) -> dict:
        return {
            "search": self.search,
            "evaluations": self.evaluations,
            "invalid": self.invalid,
            "best_score": self.best_score,
            "stopped_by": self.stopped_by,
            "repeat_budget": self.repeat_budget,
        }

    @classmethod
    def from_json(cls, data) -> "SearchResult":
        """Read back from a document, which keeps no inputs (and history only where it lists it)."""
        return cls(None, float(data["best_score"]) if data["best_score"] is not None else None,
                   int(data["evaluations"]), int(data["invalid"]), list(data.get("history", [])),
                   data.get("search", data.get("strategy")),  # "strategy": reports before 0.2
                   data.get("stopped_by", "evaluations"), data.get("repeat_budget"))


class FixedInputs:
    """Use inputs the user gave (``--inputs witness.npz``) instead of searching."""

    name = "given"

    def __init__(self, inputs: Inputs):
        self.inputs = inputs

    def run(self, evaluate: Evaluate, specs, ranges, seed, stop_at=None, aim=None) -> SearchResult:
        score = score_of(evaluate(self.inputs))
        best = -1.0 if score is None else score
        return SearchResult(self.inputs if score is not None else None, best, 1, int(score is None), [score], self.name)


# -- candidates -----------------------------------------------------------

def conform(values, spec, r: InputRange) -> np.ndarray:
    """``values`` as an array of the input's shape and dtype, inside [low, high]."""
    values = np.broadcast_to(np.asarray(values, dtype=np.float64), spec.shape)
    if spec.is_integer:
        lo, hi = math.ceil(r.low), math.floor(r.high)
        return np.clip(np.rint(values), lo, hi).astype(spec.dtype)
    out = np.asarray(np.clip(values, r.low, r.high).astype(spec.dtype))
    # rounding to a narrower float can step just outside the range: step back in
    over, under = out > r.high, out < r.low
    if over.any() or under.any():
        out = out.copy()
        out[over] = np.nextafter(out[over], out.dtype.type(-np.inf))
        out[under] = np.nextafter(out[under], out.dtype.type(np.inf))
    return out


def one_point(specs, ranges: Mapping[str, InputRange]) -> Optional[dict]:
    """The one candidate of ranges that hold one value of each input's dtype (``--low 1 --high 1``;
    [1, 1 + 1e-9] of a float32 too, which rounds both ends to 1), else None."""
    point = {}
    for spec in specs:
        r = ranges[spec.name]
        low, high = conform(r.low, spec, r), conform(r.high, spec, r)
        if low.tobytes() != high.tobytes():
            return None
        point[spec.name] = low
    return point


def special_values(spec, r: InputRange) -> list:
    """Ends, middle, zero, +-1, tiny and huge magnitudes that lie in the range."""
    lo, hi, width = r.low, r.high, r.high - r.low
    wanted = [lo, hi, 0.0, 1.0, -1.0, 1e-6, -1e-6, 0.9 * hi, 0.9 * lo,
              lo + 0.5 * width, lo + 0.01 * width, hi - 0.01 * width]
    out = []
    for v in wanted:
        if lo <= v <= hi:
            v = float(conform(v, _Scalar(spec), r))
            if v not in out:
                out.append(v)
    return out


class _Scalar:
    """A spec of shape () with the dtype of ``spec``."""

    def __init__(self, spec):
        self.shape, self.dtype, self.is_integer = (), spec.dtype, spec.is_integer


def uniform(spec, r: InputRange, gen: np.random.Generator) -> np.ndarray:
    if spec.is_integer:
        lo, hi = math.ceil(r.low), math.floor(r.high)
        return gen.integers(lo, hi + 1, size=spec.shape).astype(spec.dtype)
    return conform(gen.uniform(r.low, r.high, size=spec.shape), spec, r)


def random_candidate(specs, ranges, gen) -> dict:
    return {s.name: uniform(s, ranges[s.name], gen) for s in specs}


def boundary_candidates(specs, ranges, gen, mixed: int = 8, high_first: bool = False) -> list:
    """Candidates made of special values: every input at the range's low end,
    then at its high end (``high_first``: the largest magnitudes first, where
    overflow is the threat), then one candidate per kind of edge inside the range
    (``edges.py``: exact ties, exp-like thresholds of the input's float, powers of
    two, integers), then four kinds interleaved so that any prefix of the
    list has some of each:
      - every input at one special value;
      - every input *nearly* constant: a special value plus a relative jitter of
        1e-3 (degenerate inputs: a normalization's variance cancels there);
      - elements drawn from the specials (``mixed`` of these);
      - with several inputs, one input at a special value, the others at their middle.
    """
    specials = {s.name: special_values(s, ranges[s.name]) for s in specs}
    if high_first:  # stable: among equal magnitudes the order stays
        specials = {name: sorted(values, key=lambda v: -abs(v)) for name, values in specials.items()}
    middle = {s.name: conform((ranges[s.name].low + ranges[s.name].high) / 2, s, ranges[s.name]) for s in specs}
    count = max(len(v) for v in specials.values())

    def pick(s, k):
        return specials[s.name][min(k, len(specials[s.name]) - 1)]

    def jittered(s, k):
        r, v = ranges[s.name], pick(s, k)
        scale = 1e-3 * max(abs(v), 1e-3 * (r.high - r.low))
        return conform(v + gen.normal(0.0, scale, size=s.shape), s, r)

    constant = [{s.name: conform(pick(s, k), s, ranges[s.name]) for s in specs} for k in range(count)]
    nearly = [{s.name: jittered(s, k) for s in specs} for k in range(count)]
    drawn = [{s.name: conform(gen.choice(specials[s.name], size=s.shape), s, ranges[s.name]) for s in specs}
             for _ in range(mixed)]
    alone = []
    if len(specs) > 1:
        alone = [{**middle, s.name: conform(v, s, ranges[s.name])} for s in specs for v in specials[s.name]]
    edges = edge_candidates(specs, ranges, gen, conform)  # ties, thresholds, powers of two, integers (edges.py)
    out, seen = [], set()
    for group in [constant[:2], edges] + list(itertools.zip_longest(constant[2:], nearly, drawn, alone)):
        for cand in group:
            if cand is None:
                continue
            key = tuple(a.tobytes() for a in cand.values())
            if key not in seen:
                seen.add(key)
                out.append(cand)
    return out


# -- bookkeeping ----------------------------------------------------------

class _Run:
    """Evaluates candidates, records history and best, knows when to stop."""

    def __init__(self, name: str, evaluate: Evaluate, budget: Budget, stop_at: Optional[float], aim: Aim = Aim()):
        self.evaluate, self.budget, self.stop_at, self.aim = evaluate, budget, stop_at, aim
        # what the search finds as it goes; the SearchResult, frozen, is made of it at the end (``run``)
        self.result = types.SimpleNamespace(best_inputs=None, best_score=-1.0, evaluations=0, invalid=0, history=[],
                                            search=name, stopped_by="evaluations", repeat_budget=None)
        self.started = time.perf_counter()

    def found(self) -> bool:
        return self.stop_at is not None and self.result.best_score > self.stop_at

    def done(self, budget: Optional[Budget] = None) -> bool:
        return self.found() or (budget or self.budget).exhausted(self.result.evaluations, self.started)

    def progress(self) -> float:
        return self.budget.progress(self.result.evaluations, self.started)

    def score(self, cand: dict) -> float:
        """Fitness of ``cand``: its score, or INVALID."""
        return self.observe(cand)[0]

    def observe(self, cand: dict) -> tuple:
        """(fitness, cand, Observation or None). Below a violation the fitness is
        the larger of the score and the aim's second fitness (how close the
        reference comes to the warned dtype's limit): the score alone is flat
        below an overflow. The result records the score itself."""
        outcome = self.evaluate(cand)
        observation = outcome if isinstance(outcome, Observation) else None
        score = score_of(outcome)
        if score is not None and math.isnan(score):
            score = math.inf  # a comparison that itself broke down is not a clean result
        res = self.result
        res.evaluations += 1
        res.history.append(score)
        if score is None:
            res.invalid += 1
            return INVALID, cand, None
        if score > res.best_score or res.best_inputs is None:
            res.best_score, res.best_inputs = score, cand
        if score <= 1.0 and observation is not None and self.aim.targets:
            return max(score, self.aim.secondary(observation)), cand, observation
        return score, cand, observation

    def score_all(self, candidates, budget: Optional[Budget] = None) -> list:
        """(fitness, candidate, observation) for candidates in order, until done."""
        scored = []
        for cand in candidates:
            if self.done(budget):
                break
            scored.append(self.observe(cand))
        return scored


class _Search:
    name = "?"
    aims = True  # whether it takes the range check's aim (random stays the unaimed baseline)

    def __init__(self, budget: Budget = DEFAULT_BUDGET):
        self.budget = budget

    def run(self, evaluate: Evaluate, specs: Sequence, ranges: Mapping[str, InputRange], seed: int,
            stop_at: Optional[float] = None, budget: Optional[Budget] = None, aim: Aim = Aim()) -> SearchResult:
        """``aim``: where the static range check points (aimed.py); random ignores it."""
        run = _Run(self.name, evaluate, budget or self.budget, stop_at, aim if self.aims else Aim())
        point = one_point(specs, ranges)
        if point is not None:  # every candidate would be this one: evaluated once, not once per draw
            run.observe(point)
            run.result.stopped_by = ONE_POINT
            return SearchResult(**vars(run.result))
        self.search(run, list(specs), ranges, np.random.default_rng(seed))
        done = run.result.evaluations
        run.result.stopped_by = "target score" if run.found() else run.budget.stopped_by(done)
        repeat = run.budget.repeat(done)
        run.result.repeat_budget = None if repeat is None else str(repeat)
        return SearchResult(**vars(run.result))

    def search(self, run: _Run, specs, ranges, gen) -> None:
        raise NotImplementedError


def _random_until(run: _Run, specs, ranges, gen, budget: Optional[Budget] = None) -> list:
    scored = []
    while not run.done(budget):
        scored.append(run.observe(random_candidate(specs, ranges, gen)))
    return scored


class RandomSearch(_Search):
    """Seeded uniform samples in the range until the budget is spent."""

    name = "random"
    aims = False

    def search(self, run, specs, ranges, gen):
        _random_until(run, specs, ranges, gen)


class BoundarySearch(_Search):
    """Special values (ends, zero, +-1, tiny, huge), per input and mixed; then random."""

    name = "boundary"

    def search(self, run, specs, ranges, gen):
        run.score_all(run.aim.candidates(specs, ranges, gen, conform))
        run.score_all(boundary_candidates(specs, ranges, gen, high_first=run.aim.threat == "overflow"))
        _random_until(run, specs, ranges, gen)


class EvolveSearch(_Search):
    """Boundary + random seeding, then a (mu+lambda) evolutionary search over all inputs.

    Children come from tournament-selected parents by per-element crossover and
    mutation: gaussian noise (scale relative to the range width, decaying over the
    budget) on all or some elements, or a contiguous block set to a special value or
    shifted. Parents and children compete for the next generation (elitism).
    A mutation may also set some elements to the range's low or high end (mixed
    corners: some elements high, others low). Every ``aim_every``-th round,
    when ``evaluate`` returns Observations, a zero-crossing search
    (cancellation.py) aims at one output element instead; not where the range
    check fears overflow, which a zero crossing does not reach.

    Seeding, in order: the range check's aimed candidates (aimed.py; at most
    ``aimed`` of the budget), at least ``MIN_BOUNDARY`` boundary candidates
    whatever the budget (high magnitudes first where overflow is the threat),
    then uniform samples up to ``seeding`` of the budget.
    """

    name = "evolve"
    MIN_BOUNDARY = 8
    # the tuning (a subclass may change it): seeding and aimed are shares of the budget;
    # mu parents, lam children a round, a mutation's scale from sigma_start down to
    # sigma_end as the budget is spent, tournaments of this size, the zero-crossing
    # search every aim_every rounds
    seeding, aimed = 0.2, 0.3
    mu, lam = 4, 8
    sigma_start, sigma_end = 0.1, 0.001
    tournament, aim_every = 3, 2

    def search(self, run, specs, ranges, gen):
        pool = run.score_all(run.aim.candidates(specs, ranges, gen, conform), run.budget.part(self.aimed))
        boundary = max(self.MIN_BOUNDARY, _share(run.budget, self.seeding / 2))
        pool += run.score_all(boundary_candidates(specs, ranges, gen, high_first=run.aim.threat == "overflow"),
                              _more(run, boundary))
        pool += _random_until(run, specs, ranges, gen, _more(run, _share(run.budget, self.seeding / 2)))
        self.specials = {s.name: special_values(s, ranges[s.name]) for s in specs}
        population = _best(pool, self.mu)
        recent = collections.deque((t for t in pool if t[2] is not None), maxlen=16)
        crossing = ZeroCrossing()
        aim_every = 0 if run.aim.threat == "overflow" else self.aim_every
        rounds = 0
        while not run.done():
            if not population or population[0][0] == INVALID:
                population = _best(population + _random_until(run, specs, ranges, gen, _more(run, 1)), self.mu)
                continue
            rounds += 1
            scored = []
            if aim_every and rounds % aim_every == 0:
                scored = crossing.search(run, specs, ranges, population + list(recent), conform)
            if not scored:
                children = [self.child(population, specs, ranges, gen, run.progress()) for _ in range(self.lam)]
                scored = run.score_all(children)
            recent.extend(t for t in scored if t[2] is not None)
            population = _best(population + scored, self.mu)

    def child(self, population, specs, ranges, gen, progress: float) -> dict:
        first = self.select(population, gen)
        cand = dict(first)
        if len(population) > 1 and gen.random() < 0.3:
            other = self.select(population, gen)
            cand = {s.name: np.where(gen.random(s.shape) < 0.5, first[s.name], other[s.name]) for s in specs}
        sigma = self.sigma_start * (self.sigma_end / self.sigma_start) ** progress
        for s in self.mutated(specs, gen):
            cand[s.name] = self.mutate(cand[s.name], s, ranges[s.name], sigma, gen)
        return cand

    def select(self, population, gen) -> dict:
        picks = gen.integers(0, len(population), size=min(self.tournament, len(population)))
        return population[int(picks.min())][1]  # population is sorted best first

    def mutated(self, specs, gen) -> list:
        """Which inputs to mutate: each with probability 1/n, at least one."""
        chosen = [s for s in specs if gen.random() < 1.0 / len(specs)]
        return chosen or [specs[int(gen.integers(len(specs)))]]

    def step(self, sigma: float, gen) -> float:
        """A relative mutation scale: log-uniform from sigma_end/10 up to 3 * sigma."""
        low, high = math.log(self.sigma_end / 10), math.log(3 * sigma)
        return math.exp(gen.uniform(low, high))

    def mutate(self, x, spec, r: InputRange, sigma: float, gen) -> np.ndarray:
        width = r.high - r.low
        flat = np.asarray(x, dtype=np.float64).reshape(-1).copy()
        n = flat.size
        if n == 0:
            return x
        kind = gen.random()
        if kind < 0.6:  # gaussian, on all elements or a random subset, at a random scale
            scale = self.step(sigma, gen) * width
            if spec.is_integer:
                scale = max(scale, 0.5)
            mask = gen.random(n) < float(gen.choice([1.0, 0.1, 1.0 / n]))
            if not mask.any():
                mask[int(gen.integers(n))] = True
            flat[mask] += gen.normal(0.0, scale, size=int(mask.sum()))
        elif kind < 0.7:  # a mixed corner: some elements to the low end, others to the high end
            mask = gen.random(n) < float(gen.choice([1.0 / n, 0.1, 0.5]))
            flat[mask] = np.where(gen.random(int(mask.sum())) < 0.5, r.low, r.high)
        else:  # a contiguous block: set to one special value, or shifted
            size = int(gen.integers(1, max(1, n // 4) + 1))
            start = int(gen.integers(0, n - size + 1))
            block = slice(start, start + size)
            if kind < 0.88:
                flat[block] = float(gen.choice(self.specials[spec.name]))
            else:
                flat[block] += gen.normal(0.0, max(sigma * width, 0.5 if spec.is_integer else 0.0))
        return conform(flat.reshape(spec.shape), spec, r)


def _best(scored: list, k: int) -> list:
    """The ``k`` best (fitness, candidate, observation) triples, best first; ties keep order (stable)."""
    return sorted(scored, key=lambda fc: -fc[0])[:k]


def _more(run: _Run, count: int) -> Budget:
    """``count`` more evaluations, within the run's own limits (its plan, its deadline, its stop)."""
    more = run.result.evaluations + max(1, count)
    if run.budget.evaluations is not None:
        more = min(more, run.budget.evaluations)
    stop = run.budget.stop
    return Budget(max(1, more), run.budget.seconds, stop=None if stop is None else min(stop, max(1, more)))


def _share(budget: Budget, fraction: float) -> int:
    """How many evaluations ``fraction`` of the plan is (a seconds-only plan: a nominal 10)."""
    return max(1, int(round((budget.evaluations or 10) * fraction)))


SEARCHES = {"random": RandomSearch, "boundary": BoundarySearch, "evolve": EvolveSearch}


def make_search(name: str, **kw):
    """``make_search("evolve", budget=parse_budget("500,60s"))``."""
    if name not in SEARCHES:
        raise UsageError(f"unknown search '{name}'; choose one of {', '.join(SEARCHES)}")
    return SEARCHES[name](**kw)
