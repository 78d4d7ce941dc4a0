"""The framework beside a session: its runs on the inputs the search tries,
and its judgement of the witness."""

from __future__ import annotations

import math
from typing import Mapping, Optional

import numpy as np

from ..framework import FrameworkError, NoFramework
from ..search.sampling import Observation
from ..shadow.compare import compare_outputs, is_finite_outputs
from ..shadow.recent import Recent
from ..shadow.oracle import Oracle
from ..targets import local_target
from .agreement import CONDITIONING_RUNS, agreement_score, compare_outputs_with_framework, perturbed, spread_of
from .judgement import ImportJudgement
from .localize import first_difference
from .precision import narrow_dtype, precision_fix, widened_entries


def oracle_truth(oracle, inputs, note: str = "TVM's float64 build is the truth") -> tuple:
    """(the oracle's outputs on ``inputs``, their name, ``note``: why they are the
    truth), or (None, None, why there is none): then every difference counts against TVM."""
    try:
        return oracle.outputs(inputs), "TVM's float64 build", note
    except Exception as err:  # no truth at all
        return None, None, f"{note}, and it cannot be made either ({type(err).__name__})"


class FrameworkWatch:
    """``framework`` (a Framework, or a NoFramework) beside ``session``: the
    search scores an input by the worse of the pass question (the session's
    builds) and the import question (TVM's reference against the framework),
    with the same budget. A framework that fails on an input is set aside for
    the rest of the run (``failure`` says why): the check goes on without it.
    An input where the two differ counts only where TVM is the side at fault
    (the truth is asked then, rarely): the search looks for TVM's errors, not
    the framework's. ``oracle``: TVM's float64 build, the truth where the
    framework has no float64 kernels."""

    def __init__(self, framework, session, oracle: Oracle):
        self.framework, self.session, self.oracle = framework, session, oracle
        self.failure: Optional[str] = framework.reason if isinstance(framework, NoFramework) else None
        self._outputs = Recent()  # (inputs,) -> the framework's outputs

    @property
    def active(self) -> bool:
        return self.failure is None

    def outputs(self, inputs: Mapping[str, np.ndarray]) -> Optional[list]:
        """The framework's float32 outputs on ``inputs`` (None once it has failed)."""
        if not self.active:
            return None
        remembered = self._outputs.find(inputs)
        if remembered is not None:
            return remembered
        try:
            outputs = self.framework.run(inputs)
        except FrameworkError as err:
            self.failure = str(err)
            self.session.progress(f"{self.framework.name} set aside: {err}")
            return None
        self._outputs.add((inputs,), outputs)
        return outputs

    def observe(self, inputs: Mapping[str, np.ndarray]) -> Observation:
        """The session's observation, its score raised to the import question's where that is worse."""
        seen = self.session.runs.observe(inputs)
        theirs = self.outputs(inputs)
        if theirs is None or (seen.score is None and not is_finite_outputs(theirs)):
            return seen  # outside the model's domain for its framework too
        # where TVM's reference is not finite and the framework is, the import is at fault
        score = self.import_score(inputs, theirs)
        if seen.score is None:
            return Observation(score)
        return seen if score <= seen.score else Observation(score, seen.reference, seen.error)

    def import_score(self, inputs: Mapping[str, np.ndarray], theirs: list) -> float:
        """The import question's score on ``inputs``: how far TVM's reference is
        from the framework, 0 where they differ but not by TVM's fault."""
        mine = self.session.runs.reference_outputs(inputs)
        score = agreement_score(theirs, mine, self.session.tol)
        if score <= 1.0 or len(theirs) != len(mine):
            return math.inf if math.isnan(score) else score
        at_fault = self._tvm_at_fault(inputs, theirs, mine)
        return score if at_fault is None or at_fault else 0.0

    def judge(self, witness: Mapping[str, np.ndarray]) -> ImportJudgement:
        """The import stage on ``witness``."""
        theirs = self.outputs(witness)
        if theirs is None:
            return ImportJudgement(self.framework.name, "unchecked", reason=self.failure,
                               lowering=self.lowering(witness))
        tol = self.session.tol
        mine = self.session.runs.reference_outputs(witness)
        if agreement_score(theirs, mine, tol) <= 1.0:
            return ImportJudgement(self.framework.name, "agree", lowering=self.lowering(witness),
                               outputs=compare_outputs_with_framework(theirs, mine, tol))
        truth, name, note = self.truth(witness)
        outputs = compare_outputs_with_framework(theirs, mine, tol, truth, self.spread(witness, truth))
        at_fault = len(theirs) != len(mine) or any(o.tvm_at_fault for o in outputs)
        reason = f"TVM's import returns {len(mine)} outputs, the model {len(theirs)}" if len(theirs) != len(mine) \
            else None
        check = ImportJudgement(self.framework.name, "import" if at_fault else "benign", reason, name, note, outputs,
                            lowering=self.lowering(witness))
        if at_fault and reason is None:
            self.session.progress("TVM's import differs from the model's framework: finding the first node")
            check.origin, check.origin_note = first_difference(self.session.model, self.framework, witness,
                                                               local_target(self.session.config.target), tol)
            self._explain(check, witness)
        return check

    def _explain(self, check: ImportJudgement, witness) -> None:
        """An import difference that is not TVM's fault after all: a discontinuous
        operator that flips on agreeing inputs (benign), or float16 computed
        where the framework computes float32 (precision, with its verified fix)."""
        origin = check.origin
        if origin is not None and origin.discontinuous:
            check.verdict = "benign"
            check.reason = (f"{origin.node} is discontinuous ({origin.op}): its inputs agree within the "
                            "tolerance, and a rounding-sized difference flips its result")
            return
        model = self.session.model
        checks = [(witness, self._accepts(witness))] + [(seen, self._accepts(seen)) for (seen,), _ in self._outputs
                                                       if seen is not witness]
        widened = precision_fix(model, local_target(self.session.config.target), origin.binding if origin else None, checks)
        if widened:
            check.verdict = "precision"
            check.widened = widened_entries(model, widened)
            what = ", ".join(e["label"] for e in check.widened[:3]) + (" ..." if len(widened) > 3 else "")
            check.reason = (f"TVM computes {what} in the model's {narrow_dtype(model)}, the framework in float32: "
                            f"with {'it' if len(widened) == 1 else 'them'} kept in float32 TVM agrees with the "
                            f"framework on {len(checks)} input set(s)")

    def _accepts(self, inputs):
        """A check of a widened build's outputs on ``inputs``: not at fault against the framework."""
        def accepts(outputs) -> bool:
            theirs = self.outputs(inputs)
            if theirs is None or len(outputs) != len(theirs):
                return False
            if agreement_score(theirs, outputs, self.session.tol) <= 1.0:
                return True
            return self._tvm_at_fault(inputs, theirs, outputs) is False  # no truth: not accepted
        return accepts

    def _tvm_at_fault(self, inputs, theirs: list, mine: list) -> Optional[bool]:
        """Is TVM (``mine``) at fault against the framework (``theirs``) on ``inputs``,
        judged against the truth within its spread? None: there is no truth."""
        truth, _, _ = self.truth(inputs)
        if truth is None:
            return None
        outputs = compare_outputs_with_framework(theirs, mine, self.session.tol, truth, self.spread(inputs, truth))
        return any(o.tvm_at_fault for o in outputs)

    def spread(self, inputs, truth) -> Optional[list]:
        """The truth's own movement when the inputs move by input-rounding amounts
        (``agreement.perturbed``), per output; None without a truth."""
        if truth is None:
            return None
        runs = []
        for seed in range(CONDITIONING_RUNS):
            moved, _, _ = self.truth(perturbed(inputs, seed))
            if moved is not None:
                runs.append(moved)
        return spread_of(truth, runs) if runs else None

    def truth(self, inputs) -> tuple:
        """(float64 outputs or None, which run they are, why not the framework's)."""
        try:
            return self.framework.truth(inputs), f"{self.framework.name} in float64", None
        except FrameworkError as err:
            return oracle_truth(self.oracle, inputs, f"{err}; TVM's float64 build is the truth")

    def lowering(self, witness) -> Optional[float]:
        """How far TVM's float32 reference is from TVM's own float64 build, where that was made."""
        if not self.oracle.made:
            return None
        try:
            outputs = self.oracle.outputs(witness)
        except Exception:  # the float64 build failed: nothing to say about lowering
            return None
        # the float64 values rounded to float32: the reference's own tolerance applies
        rounded = [o.astype(np.float32) if o.dtype == np.float64 else o for o in outputs]
        return compare_outputs(rounded, self.session.runs.reference_outputs(witness), self.session.tol).score
