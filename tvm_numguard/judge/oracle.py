"""The oracle's verdict: is a violation real, or only rounding the reference shares?

``classify(ref32, opt32, oracle64, tol)`` applies PyTorch's ``same()`` rule to
the elements that violate the tolerance (compare.py's rule): a violating
element whose optimized error against the oracle (the model built in float64,
float64.py) is not worse than ``k * err_ref + atol/10`` is benign; any other
violating element is a real violation. ``judge`` builds the oracle for a
session and returns an ``OracleJudgement``.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence, cast

import numpy as np

from ..base.frozen import freeze_fields
from ..base.numbers import plain, unplain
from ..base.errors import summarize_error
from ..build.runs import Recent
from ..base.compare import differences, element_scores, is_finite_outputs
from ..base.progress import afford, waiting
from ..base.words import PassVerdict, Stage, StageVerdict
from ..locate.bisect.driver import probe_parts
from ..base.tolerance import Tolerance
from ..ir.targets import local_target
from .float64 import Float64Build
from ..build.workers import WORKERS, ForkPool, available_cores
from ..build.workers import memory


# -- the benign rule ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class OracleVerdict:
    """One output: how many violating elements the oracle excuses."""

    index: int
    violations: int  # elements violating |opt-ref| > atol and > rtol*|ref|
    benign: int  # ... of which opt is not worse than ref against float64
    real: int  # ... of which it is
    max_err_ref: float
    max_err_opt: float
    k: float
    rtol: float
    atol: float

    @property
    def real_violation(self) -> bool:
        return self.real > 0

    @property
    def all_benign(self) -> bool:
        return self.violations > 0 and self.real == 0

    def to_json(self) -> dict:
        return plain({**dataclasses.asdict(self), "real_violation": self.real_violation})

    @classmethod
    def from_json(cls, data) -> "OracleVerdict":
        fields = unplain(dict(data))
        fields.pop("real_violation")  # a property: what real says
        return cls(**fields)


def classify_output(
    index: int, ref32: np.ndarray, opt32: np.ndarray, oracle64: np.ndarray, tol: Tolerance = Tolerance(), k: float = 2.0
) -> OracleVerdict:
    ref32, opt32, oracle64 = np.asarray(ref32), np.asarray(opt32), np.asarray(oracle64)
    rtol, atol = tol.for_output(index, ref32.dtype)
    g = oracle64.astype(np.float64)
    if ref32.shape != opt32.shape or ref32.shape != g.shape:
        n = int(max(ref32.size, opt32.size))
        return OracleVerdict(index, n, 0, n, float("inf"), float("inf"), k, rtol, atol)
    r, o, diff = differences(ref32, opt32)
    r_fin, o_fin = np.isfinite(r), np.isfinite(o)
    violating = element_scores(r, diff, rtol, atol) > 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        err_ref = np.abs(r - g)
        err_opt = np.abs(o - g)
        # a non-finite error is never excused on the optimized side
        err_opt = np.where(np.isnan(err_opt), np.inf, err_opt)
        err_ref = np.where(np.isnan(err_ref), np.inf, err_ref)
        ok = err_opt <= k * err_ref + atol / 10.0
        # the optimized build is non-finite where the reference is finite: never benign
        ok &= ~(r_fin & ~o_fin)
    benign = violating & ok
    n_viol = int(np.count_nonzero(violating))
    n_benign = int(np.count_nonzero(benign))
    return OracleVerdict(
        index=index,
        violations=n_viol,
        benign=n_benign,
        real=n_viol - n_benign,
        max_err_ref=float(np.max(err_ref)) if err_ref.size else 0.0,
        max_err_opt=float(np.max(err_opt)) if err_opt.size else 0.0,
        k=float(k),
        rtol=rtol,
        atol=atol,
    )


def classify(
    ref32: Sequence[np.ndarray] | np.ndarray,
    opt32: Sequence[np.ndarray] | np.ndarray,
    oracle64: Sequence[np.ndarray] | np.ndarray,
    tol: Tolerance = Tolerance(),
    k: float = 2.0,
) -> list:
    """Per-output verdicts (a single array is one output)."""
    if isinstance(ref32, np.ndarray):
        # one output: the three are arrays alike
        ref32, opt32, oracle64 = [ref32], [cast(np.ndarray, opt32)], [cast(np.ndarray, oracle64)]
    if not (len(ref32) == len(opt32) == len(oracle64)):
        raise ValueError(f"{len(ref32)} reference, {len(opt32)} optimized and {len(oracle64)} oracle outputs")
    return [classify_output(i, r, o, g, tol, k) for i, (r, o, g) in enumerate(zip(ref32, opt32, oracle64))]


def has_real_violation(verdicts: Sequence[OracleVerdict]) -> bool:
    return any(v.real_violation for v in verdicts)


@dataclasses.dataclass(frozen=True)
class OracleJudgement:
    """The oracle's answer on a witness: ``available`` False when the float64
    build could not be made (``reason``; then every violation counts as real)."""

    available: bool
    reason: str | None
    real_violation: bool
    kept_float32: list  # ops left in float32 (no float64 kernel)
    k: float
    outputs: list  # OracleVerdict per output

    def __post_init__(self):
        freeze_fields(self, "kept_float32", "outputs")

    def to_json(self) -> dict:
        return {"available": self.available, "reason": self.reason, "real_violation": self.real_violation,
                "kept_float32": list(self.kept_float32), "k": self.k, "outputs": [v.to_json() for v in self.outputs]}

    @classmethod
    def from_json(cls, data) -> Optional["OracleJudgement"]:
        if data is None:
            return None
        return cls(data["available"], data["reason"], data["real_violation"], list(data["kept_float32"]),
                   float(data["k"]), [OracleVerdict.from_json(v) for v in data["outputs"]])


# the cores a machine needs before the oracle gets a worker of its own beside a
# bisection, which builds at most two candidates at a time (a round and its
# lookahead). On this 2-core machine that worker only shares the same work out
# differently: SqueezeNet's bisect took 30.1 s (-j1) and 24.2 s (-j2) with it,
# 25.8 s and 22.2 s without; ResNet-50's 63-73 s against 65-67 s.
ORACLE_WORKER_CORES = 4


class OracleFailed(Exception):
    """The float64 build failed in the worker that made it (the message is its error's line)."""


class Oracle:
    """The oracle: TVM's float64 build of a session's model, made on first use
    (once) and run on inputs as asked, the last few remembered. It judges the
    pass question (benign or not) and is the import question's truth where
    the framework has no float64 kernels. ``outputs`` raises what building or
    running it raised.

    ``start(inputs, workers)`` makes the build and its run on ``inputs`` in a
    worker forked for it, so this process can bisect meanwhile (the culprit
    comes before the verdict, and on a machine with cores to spare the oracle
    costs no time); ``outputs(inputs)`` then waits for that answer, and
    ``close`` stops the worker. Other inputs are still run here."""

    _pending: Optional[tuple]  # (inputs, the worker's Pending answer, or None once collected)

    def __init__(self, session):
        self._session = session
        self._build: Optional[Float64Build] = None
        self._error: Optional[BaseException] = None
        self._runs: Recent[list] = Recent()  # (inputs,) -> outputs
        self._pool, self._pending, self._kept = None, None, []  # the worker's build: its pool, answer, kept ops

    @property
    def made(self) -> bool:
        """Has the float64 build been made (or tried)?"""
        return self._build is not None or self._error is not None or self._pending is not None

    @property
    def in_worker(self) -> bool:
        """Was the float64 build made in a worker (``start``)?"""
        return self._pending is not None

    def start(self, inputs: Mapping[str, np.ndarray], workers) -> bool:
        """Build and run on ``inputs`` in a worker; False (nothing started) where
        ``workers`` fork none, the machine has fewer than ORACLE_WORKER_CORES
        cores, or the build was made already."""
        if self.made or workers.mode != WORKERS or available_cores() < ORACLE_WORKER_CORES:
            return False
        model = self._session.model
        context = (model.mod, model.input_names(), local_target(self._session.config.target), inputs)
        self._pool = ForkPool(lambda: context, 1, memory.machine_bytes())
        self._pending = (inputs, self._pool.submit(
            _float64_outputs, lost=lambda why: (None, [], f"the float64 build's worker gave no answer: {why}")))
        return True

    def answered(self) -> bool:
        """Whether the worker ``start`` forked has answered (not waiting for it)."""
        return self._pending is not None and (self._pending[1] is None or self._pending[1].done())

    def close(self) -> None:
        if self._pool is not None:
            self._pool.stop()

    def _collect(self) -> None:
        """The worker's answer, once: its outputs remembered, or its error kept."""
        assert self._pending is not None  # a worker was asked
        inputs, pending = self._pending
        if pending is None:
            return
        outputs, self._kept, error = pending.result()
        self._pending = (inputs, None)
        self.close()
        if error is not None:
            self._error = OracleFailed(error)
        else:
            self._runs.add((inputs,), outputs)

    def outputs(self, inputs: Mapping[str, np.ndarray]) -> list:
        if self._pending is not None:
            self._collect()
        remembered = self._runs.find(inputs)
        if remembered is not None:
            return remembered
        if self._error is not None:
            raise self._error
        if self._build is None:
            model = self._session.model
            try:
                self._build = Float64Build(model.mod, model.input_names(),
                                           target=local_target(self._session.config.target))
            except Exception as err:  # an oracle is a help, not a requirement
                self._error = err
                raise
        outputs = self._build.run(inputs)
        self._runs.add((inputs,), outputs)
        return outputs

    @property
    def kept(self) -> list:
        """The ops left in float32 (no float64 kernel)."""
        return list(self._build.kept) if self._build is not None else list(self._kept)


def _float64_outputs(context: tuple) -> tuple:
    """In the oracle's worker: (outputs, kept ops, None), or (None, [], the error's line)."""
    mod, input_names, target, inputs = context
    try:
        build = Float64Build(mod, input_names, target=target)
        return build.run(inputs), list(build.kept), None
    except Exception as err:  # noqa: BLE001 - an oracle is a help, not a requirement: the parent says why
        return None, [], summarize_error(err)


def judge(session, witness: Mapping[str, np.ndarray], tol: Tolerance, k: float,
          oracle: Optional[Oracle] = None) -> OracleJudgement:
    """Compare both builds of ``session`` with a float64 build of its model on
    the witness (a BuildSession: its model, target and both builds' outputs);
    ``oracle``: that float64 build, when someone else may need it too."""
    oracle = oracle or Oracle(session)
    try:
        outputs = oracle.outputs(witness)
    except Exception as err:  # an oracle is a help, not a requirement
        return OracleJudgement(False, summarize_error(err), True, [], k, [])
    verdicts = classify(session.runs.reference_outputs(witness), session.runs.optimized_outputs(witness), outputs,
                        tol, k)
    return OracleJudgement(True, None, has_real_violation(verdicts), list(oracle.kept), k, verdicts)


@dataclasses.dataclass(frozen=True)
class PassAnswer:
    """The pass stage's answer: ``verdict`` (the optimized build against the
    reference on the witness, the oracle's word included), the oracle's
    ``judgement`` (None where it was not asked) and ``note``: why nothing is
    judged (``unjudged``)."""

    verdict: PassVerdict
    judgement: Optional[OracleJudgement] = None
    note: Optional[str] = None


def judge_pass(at, said) -> PassAnswer:
    """The pass stage on ``at``'s witness (a stages.Witnessed): the builds'
    comparison there, judged by the float64 oracle where they differ (benign
    where the optimized build is no worse than the reference); unjudged where
    a build gives other outputs on the same inputs (``said``'s determinism)
    or the reference is not finite."""
    session, witness, options = at.session, at.witness, at.options
    note = pass_note(session, witness, at.comparison, said.get(Stage.DETERMINISM))
    verdict = (PassVerdict.UNJUDGED if note else PassVerdict.VIOLATION if at.comparison.violated
               else PassVerdict.CLEAN)
    if verdict is not PassVerdict.VIOLATION:
        return PassAnswer(verdict, note=note)
    if at.before_oracle is not None:
        at.before_oracle(witness)
    if not options.oracle:
        return PassAnswer(verdict)
    oracle, progress = at.oracle, session.progress
    progress("the float64 oracle's answer from its worker" if oracle.in_worker else "building the float64 oracle")
    planned = sum(probe_parts(session))  # a build, its VM and a run, as the pipeline as written took
    if not oracle.in_worker:  # built here: not stopped once started
        afford(progress, planned, "the float64 oracle (a build, its VM and a run)")
    with waiting(progress, "the float64 oracle: TVM building the model in float64, making its VM and "
                 "running it on the witness", planned):
        judgement = judge(session, witness, session.tol, options.oracle_k, oracle)
    benign = judgement.available and not judgement.real_violation
    return PassAnswer(PassVerdict.BENIGN if benign else verdict, judgement)


def pass_note(session, witness, comparison, nondeterminism) -> Optional[str]:
    """Why the pass question is not judged on ``witness``, or None: a build
    gives other outputs on the same inputs (``nondeterminism``), or the
    builds differ where the reference is not finite."""
    if nondeterminism is not None:
        return f"{nondeterminism.builds_give()} other outputs on the same inputs"
    if comparison.violated and not is_finite_outputs(session.runs.reference_outputs(witness)):
        return ("TVM's reference is not finite on the witness: no pass is judged against it (the import "
                "question says where it goes wrong)")
    return None


def pass_answer(finding) -> PassAnswer:
    return PassAnswer(finding.verdict, finding.oracle, finding.pass_note)


def pass_verdict(answer: PassAnswer) -> StageVerdict:
    return StageVerdict(Stage.PASS, answer.verdict, at_fault=answer.verdict is PassVerdict.VIOLATION)


__all__ = [
    "OracleFailed",
    "OracleJudgement",
    "OracleVerdict",
    "Oracle",
    "classify",
    "classify_output",
    "has_real_violation",
    "judge",
    "judge_pass",
    "pass_answer",
    "pass_note",
    "pass_verdict",
    "PassAnswer",
]
