"""A session's runs: the optimized build and the reference on each input, the
last few remembered, and their comparison.

What was computed for the last few input sets, newest first (``Recent``): the
one home of how much a session remembers (``REMEMBERED``) and of how it looks a
result up: by the identity of the build, and of the inputs or, where they are
another object, their bytes (``same``). A search's inputs are fresh arrays each
round; the witness the search reports is a frozen copy of the inputs it ran
(``locate.searches.SearchResult`` freezes them), and the few remembered are the
ones asked for again (a bisection asks for the witness's runs many times; the
witness is judged and reported after the search: without the bytes, each judge
ran both builds and the framework on it once more).

Whether a model ignores its inputs is told from the reference's runs a session
observes (``ConstancyWatch``).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Callable, Generic, Iterator, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar

import numpy as np

from ..base.errors import BuildError
from ..base.progress import Progress, stopped_at_limit, time_left, waiting
from .workers.pool import STOPPED_AT_LIMIT
from .observation import Observation
from ..base.errors import summarize_error
from .compile import Build, run_build
from ..base.compare import Comparison, compare_outputs, differences, is_finite_outputs
from ..base.tolerance import Tolerance
from .tasks import RunFailure, Started

if TYPE_CHECKING:
    from .run_worker import RunWorker


class BestSeen(NamedTuple):
    """The best-scored input observed, and its runs."""

    score: float
    reference: Started  # the reference's run on it
    optimized: tuple  # (optimized build, inputs, outputs), as ``optimized_outputs`` remembers runs


class Runs:
    """Runs of one model's builds on inputs named ``input_names``, compared
    within ``tol``. ``start_reference(inputs)`` starts the reference's run;
    ``reference_ready()`` raises if the reference does not build; ``attempts``
    shares runs of the pipeline as written and notes a worker's memory;
    ``progress()``: the session's progress now, told of every long wait (and
    carrying its time limit, which ends a wait on a worker)."""

    def __init__(self, input_names: Sequence[str], tol: Tolerance, start_reference: Callable[[Mapping], Started],
                 reference_ready: Callable[[], None], attempts, progress: Callable[[], Progress] = lambda: None):
        self._names, self.tol = list(input_names), tol
        self._start_reference, self._reference_ready, self._attempts = start_reference, reference_ready, attempts
        self._progress = progress
        self._ran: set = set()  # id() of the builds whose VM was made (their first run made it)
        self.optimized: Optional[Build] = None
        self.run_seconds = 0.0  # the longest run so far, its VM's creation included (what a worker may take)
        self.call_seconds = 0.0  # the longest call of a VM already made
        self.vm_seconds = 0.0  # the longest creation of a VM (a build recorded anew makes its own later)
        self._ref_runs: Recent[Started] = Recent()  # (inputs,) -> the reference's Started run
        # the best-scored input's runs, remembered past the last few (the search's
        # witness is judged and reported after it)
        self._best: Optional[BestSeen] = None
        self._opt_outputs: Recent[list] = Recent()  # (build, inputs) -> outputs
        self.invalid_samples: list = []  # a few inputs on which the reference is not finite
        # (optimized build, inputs) -> the builds that ran otherwise on them: asked once per witness (the
        # judge asks where the builds differ, a bisection before its first probe)
        self._determinism: Recent[tuple] = Recent()
        self.constancy = ConstancyWatch()
        # a RunWorker where this process runs no build (Workers.runs_in_workers)
        self.elsewhere: Optional[RunWorker] = None

    def use(self, optimized: Build) -> None:
        """``optimized`` is the pipeline as written from now on."""
        self.optimized = optimized

    def remembered(self) -> list:
        """(build, inputs, outputs) of the optimized runs remembered."""
        recent = [(build, inputs, outputs) for (build, inputs), outputs in self._opt_outputs]
        return recent + ([self._best.optimized] if self._best is not None else [])

    def run(self, build: Build, inputs: Mapping[str, np.ndarray]) -> list:
        """``build``'s outputs on ``inputs``: run here, or by ``elsewhere``
        (a ``RunWorker``) where this process runs no build; RunFailure where it fails."""
        start = time.perf_counter()
        runner = self.elsewhere.run if self.elsewhere is not None else self.run_here
        doing, estimate = self._describe(build)
        progress = self._progress()
        try:
            with waiting(progress, doing, estimate):
                outputs, vm_seconds, call_seconds = runner(build, inputs)
        except RunFailure as err:
            if str(err) == STOPPED_AT_LIMIT:
                stopped_at_limit(progress, doing)
            raise
        self._ran.add(id(build))
        self.run_seconds = max(self.run_seconds, time.perf_counter() - start)
        self.call_seconds = max(self.call_seconds, call_seconds)
        self.vm_seconds = max(self.vm_seconds, vm_seconds)
        return outputs

    def has_run(self, build: Build) -> bool:
        """Whether ``build`` ran already (its VM is made)."""
        return id(build) in self._ran

    def _describe(self, build: Build) -> tuple:
        """(what a run of ``build`` waits for, its estimate in seconds or None):
        a first run makes the build's VM, where TVM generates the kernels'
        machine code (minutes for float16 kernels on a CPU)."""
        which = "the optimized build" if build is self.optimized else "a build"
        if id(build) in self._ran:
            return f"a run of {which}", self.call_seconds or None
        planned = self.vm_seconds + self.call_seconds if self.call_seconds else None
        return f"TVM making {which}'s VM (its kernels' machine code) and running it", planned

    def run_here(self, build: Build, inputs: Mapping[str, np.ndarray]) -> tuple:
        """(outputs, seconds its VM took to make, seconds of the call) of ``build`` run in this process."""
        try:
            build.vm()  # made once, and timed, by the build
            called = time.perf_counter()
            outputs = run_build(build, self._names, inputs)
        except Exception as err:  # a VM error means: this build is unusable
            raise RunFailure(summarize_error(err)) from None
        return outputs, build.vm_seconds, time.perf_counter() - called

    def reference_outputs(self, inputs: Mapping[str, np.ndarray]) -> list:
        """The reference's outputs; the last few input sets are remembered."""
        return self._reference_result(self._reference_run(inputs))

    def _reference_run(self, inputs: Mapping[str, np.ndarray], again: bool = False) -> Started:
        """The reference's run on ``inputs``: the remembered one, or (``again``:
        always) one started now."""
        if not again:
            if self._best is not None and same(self._best.optimized[1], inputs):
                return self._best.reference
            remembered = self._ref_runs.find(inputs)
            if remembered is not None:
                return remembered
        started = self._start_reference(inputs)
        if not again:
            self._ref_runs.add((inputs,), started)
        return started

    def _reference_result(self, started: Started) -> list:
        self._reference_ready()  # a reference that does not build says so, not that a run failed
        progress = self._progress()
        doing = "the reference's run" + (" in its worker" if started.remote else "")
        with waiting(progress, doing, self.call_seconds or None):
            attempt = started.result(time_left(progress))
        if attempt.untestable == STOPPED_AT_LIMIT:
            stopped_at_limit(progress, doing)
        self._attempts.note_peak(attempt.peak_private_bytes)
        if not attempt.ok:
            raise BuildError(f"the reference build fails to run: {attempt.untestable}")
        assert attempt.outputs is not None  # an attempt that ran has its outputs
        return attempt.outputs[0]

    def optimized_outputs(self, inputs: Mapping[str, np.ndarray]) -> list:
        """The optimized build's outputs, the last few remembered (the search
        scores the witness, the report describes it: one run)."""
        for build, seen, outputs in self.remembered():
            if build is self.optimized and same(seen, inputs):
                return outputs
        assert self.optimized is not None, "no optimized build in use yet"
        try:
            outputs = self.run(self.optimized, inputs)
        except RunFailure as err:
            raise BuildError(f"the optimized build fails to run: {err}") from None
        self._opt_outputs.add((self.optimized, inputs), outputs)
        self._attempts.put(self.optimized, inputs, outputs)
        return outputs

    def compare(self, build: Build, inputs: Mapping[str, np.ndarray]) -> Comparison:
        """Compare ``build`` with the reference on ``inputs``."""
        out = self.optimized_outputs(inputs) if build is self.optimized else self.run(build, inputs)
        return self.compare_outputs(out, inputs)

    def compare_outputs(self, outputs: list, inputs: Mapping[str, np.ndarray]) -> Comparison:
        """Compare ``outputs`` (of some build, on ``inputs``) with the reference's."""
        return compare_outputs(self.reference_outputs(inputs), outputs, self.tol)

    def evaluate(self, inputs: Mapping[str, np.ndarray]) -> Optional[float]:
        """Score of the optimized build on ``inputs``; None when the reference is not finite."""
        return self.observe(inputs).score

    @property
    def outputs_constant(self) -> bool:
        """The reference gave the very same outputs on every valid input observed,
        and those inputs were not all the same."""
        return self.constancy.outputs_constant

    def observe(self, inputs: Mapping[str, np.ndarray]) -> Observation:
        """The optimized build's score on ``inputs`` (None when the reference is
        not finite), with the values behind it (for searches that aim at one element)."""
        started = self._reference_run(inputs)
        # the held worker runs the reference while this process runs the optimized build
        opt = self.optimized_outputs(inputs) if started.remote else None
        ref = self._reference_result(started)
        if not is_finite_outputs(ref):
            if len(self.invalid_samples) < 2:
                self.invalid_samples.append(inputs)
            return Observation(None)
        self.constancy.note(inputs, ref)
        opt = opt if opt is not None else self.optimized_outputs(inputs)
        comparison = compare_outputs(ref, opt, self.tol)
        score = math.inf if math.isnan(comparison.score) else comparison.score
        if self._best is None or score > self._best.score:
            self._best = BestSeen(score, started, (self.optimized, inputs, opt))
        if any(np.shape(r) != np.shape(o) for r, o in zip(ref, opt)):
            return Observation(comparison.score)
        pairs = [differences(r, o) for r, o in zip(ref, opt)]
        return Observation(comparison.score,
                           np.concatenate([p[0].ravel() for p in pairs]) if pairs else np.zeros(0),
                           np.concatenate([p[2].ravel() for p in pairs]) if pairs else np.zeros(0))

    def deterministic(self, inputs: Mapping[str, np.ndarray]) -> bool:
        """Do the optimized build and the reference each give bit-identical
        outputs when run on ``inputs`` again?"""
        return not self.nondeterministic_builds(inputs)

    def determinism_known(self, inputs: Mapping[str, np.ndarray]) -> bool:
        """Whether ``nondeterministic_builds`` answered for these very inputs and the optimized build."""
        return self._determinism.find(self.optimized, inputs) is not None

    def nondeterministic_builds(self, inputs: Mapping[str, np.ndarray]) -> tuple:
        """Which builds ("reference", "optimized") give other outputs when run on
        ``inputs`` again, asked once for these inputs (by identity) and this
        optimized build. A run remembered from the search is the first of each
        pair (on a big CNN a run costs seconds); a held reference's second run
        goes on beside this process's."""
        known = self._determinism.find(self.optimized, inputs)
        if known is not None:
            return known
        found = self._run_twice(inputs)
        self._determinism.add((self.optimized, inputs), found)
        return found

    def _run_twice(self, inputs: Mapping[str, np.ndarray]) -> tuple:
        first_ref = self._reference_run(inputs)
        second_ref = self._reference_run(inputs, again=True)
        assert self.optimized is not None, "no optimized build in use yet"
        first, second = self.optimized_outputs(inputs), self.run(self.optimized, inputs)
        optimized = all(same_bytes(a, b) for a, b in zip(first, second))
        pairs = zip(self._reference_result(first_ref), self._reference_result(second_ref))
        reference = all(same_bytes(a, b) for a, b in pairs)
        return tuple(name for name, same in (("reference", reference), ("optimized", optimized)) if not same)


# input sets remembered: a search's last round and the witness fit, and
# a session holds at most this many outputs of each build in memory
REMEMBERED = 4

V = TypeVar("V")


def same(a, b) -> bool:
    """``a is b``, or two input sets (mappings of arrays) with the same names,
    and arrays of the same dtypes, shapes and bytes (-0.0 is not 0.0, a NaN is
    its own bits): what a build computes from one it computes from the other."""
    if a is b:
        return True
    if not (isinstance(a, Mapping) and isinstance(b, Mapping)) or a.keys() != b.keys():
        return False
    return all(same_bytes(a[name], b[name]) for name in a)


class Recent(Generic[V]):
    """Values keyed by a tuple of objects, compared with ``same`` (identity,
    or an input set's bytes); adding one past ``REMEMBERED`` forgets the oldest."""

    def __init__(self):
        self._items: list = []  # (key, value), newest first

    def find(self, *key) -> Optional[V]:
        """The value added with these objects (or input sets of the same bytes) as its key, or None."""
        for seen, value in self._items:  # the very objects first: a search asks for the inputs it just made
            if len(seen) == len(key) and all(a is b for a, b in zip(seen, key)):
                return value
        for seen, value in self._items:
            if len(seen) == len(key) and all(same(a, b) for a, b in zip(seen, key)):
                return value
        return None

    def add(self, key: Tuple, value: V) -> None:
        self._items = [(tuple(key), value)] + self._items[:REMEMBERED - 1]

    def __iter__(self) -> Iterator[Tuple[tuple, V]]:
        return iter(list(self._items))


class ConstancyWatch:
    """Keeps the first valid (inputs, reference outputs) observed and whether any
    later input, and any later output, differed from them: a model whose
    outputs never change while its inputs do ignores its inputs."""

    def __init__(self):
        self._first: Optional[tuple] = None
        self.inputs_vary = False
        self.outputs_vary = False

    def note(self, inputs: Mapping[str, np.ndarray], outputs: list) -> None:
        """One valid observation: ``inputs`` and the reference's ``outputs`` on them."""
        if self._first is None:
            self._first = (inputs, outputs)
            return
        if self.inputs_vary and self.outputs_vary:  # settled: no more byte comparisons per evaluation
            return
        first_inputs, first_outputs = self._first
        self.inputs_vary = self.inputs_vary or any(not same_bytes(inputs[k], first_inputs[k]) for k in inputs)
        self.outputs_vary = self.outputs_vary or any(not same_bytes(a, b) for a, b in zip(outputs, first_outputs))

    @property
    def outputs_constant(self) -> bool:
        """The very same outputs on every valid input observed, and those inputs
        were not all the same (a range of one point proves nothing)."""
        return self.inputs_vary and not self.outputs_vary


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical: same shape, dtype and bytes (NaNs included), compared in place (no copies)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    x, y = (np.ascontiguousarray(v).reshape(-1).view(np.uint8) for v in (a, b))
    # fresh inputs differ in their first bytes: no pass over the whole array for them
    return bool(np.array_equal(x[:64], y[:64]) and np.array_equal(x, y))
