"""The framework beside a session: its runs on the inputs the search tries,
and its judgement of the witness."""

from __future__ import annotations

import math
from typing import Mapping, Optional

import numpy as np

from ..framework import FrameworkError, NoFramework
from ..framework.runtimes import InputsRefused
from ...base.progress import afford, waiting
from ...base.words import ImportVerdict, Stage, StageVerdict
from ...locate.bisect.driver import probe_parts
from ...build.observation import Observation
from ...locate.searches import random_candidate
from ...base.compare import compare_outputs, is_finite_outputs
from ...build.runs import Recent
from ..oracle import Oracle
from ...ir.targets import local_target
from .agreement import (CONDITIONING_RUNS, K, agreement_score, compare_outputs_with_framework, conditioning_scale,
                        judge_elements, conditioning_bound)
from .flips import explain_flips
from .judgement import ImportJudgement
from .first_node import Located, first_difference, folded_origin, is_discontinuous, origin_at
from ..components import NodeCase, place, place_fault
from ...base.progress import Detail
from .local_node import local_fault
from .amplified import amplified_nodes
from ..numbers import FRESH_INPUTS, MAX_ROUNDS, UNPROVEN_JUMP_SCORE
from .precision import explain_precision, narrow_dtype, widened_entries

PAST_A_JUMP = "past a jump"
_NARROW = ("float16", "bfloat16")


def oracle_truth(oracle, inputs, note: str = "TVM's float64 build is the truth") -> tuple:
    """(the oracle's outputs on ``inputs``, their name, ``note``), or (None, None, why
    there is none). For questions between TVM's own builds only (a target against
    llvm): the oracle shares TVM's import, so it never judges the import."""
    try:
        return oracle.outputs(inputs), "TVM's float64 build", note
    except Exception as err:  # no truth at all
        return None, None, f"{note}, and it cannot be made either ({type(err).__name__})"


# the import question on a witness where the framework's outputs are not finite (a search never scores one)
NOT_FINITE_REASON = ("the framework's outputs are not finite (NaN/Inf) on the witness: the input is outside what the "
                     "model computes, and it says nothing of TVM's import (as the search counts it: invalid)")


class FrameworkWatch:
    """``framework`` (a Framework, or a NoFramework) beside ``session``: the
    search scores an input by the worse of the pass question (the session's
    builds) and the import question (TVM's reference against the framework),
    with the same budget. A framework that fails on an input is set aside for
    the rest of the run (``failure`` says why): the check goes on without it.
    An input where the two differ counts only where TVM is the side at fault
    (the truth is asked then, rarely): the search looks for TVM's errors, not
    the framework's. ``oracle``: TVM's float64 build, for the lowering stage
    only; ``ranges``: the inputs' ranges, for the fresh inputs a widening
    is verified on."""

    def __init__(self, framework, session, oracle: Oracle, ranges: Optional[Mapping] = None):
        self.framework, self.session, self.oracle, self.ranges = framework, session, oracle, ranges
        self.failure: Optional[str] = framework.reason if isinstance(framework, NoFramework) else None
        self._outputs: Recent[list] = Recent()  # (inputs,) -> the framework's outputs
        self._tol = None
        self._discontinuous: Optional[bool] = None
        # why the model's float64 truth stands in for the framework's own run (None: the framework runs it)
        self.stand_in: Optional[str] = None
        self.refused = False  # the framework refused the inputs themselves (a size the model fixes)

    @property
    def active(self) -> bool:
        return self.failure is None

    @property
    def tol(self):
        """The import question's tolerance: each output's follows the narrowest float the
        model itself computes it in (judge/framework/history.py), never TVM's import (a converter
        that narrows would loosen the tolerance that should catch it); by the outputs'
        own dtypes where the framework cannot say."""
        return self._tol if self._tol is not None else self.session.tol.plain()

    def _learn_tolerance(self, inputs) -> None:
        if self._tol is None:
            try:
                self._tol = self.session.tol.through(self.framework.float_history(inputs)[1])
            except Exception:  # noqa: BLE001 - the outputs' own dtypes then, the strict choice
                self._tol = self.session.tol.plain()

    def outputs(self, inputs: Mapping[str, np.ndarray]) -> Optional[list]:
        """The framework's float32 outputs on ``inputs`` (None once it has failed)."""
        if not self.active:
            return None
        remembered = self._outputs.find(inputs)
        if remembered is not None:
            return remembered
        try:
            outputs = self.framework.run(inputs) if self.stand_in is None else self._truth_rounded(inputs)
        except FrameworkError as err:
            outputs = self._stand_in(inputs, err)
            if outputs is None:
                return None
        self._learn_tolerance(inputs)
        self._outputs.add((inputs,), outputs)
        return outputs

    def _stand_in(self, inputs, err: FrameworkError) -> Optional[list]:
        """Where the framework cannot run the model (ONNX Runtime has no kernel for a node's dtype: a
        float16 ScatterElements with reduction add), the model node by node in float64, rounded to the
        model's dtypes, stands in for its run; None (and the framework set aside) where that fails too."""
        why = f"{self.framework.name} cannot run the model: {err}"
        if isinstance(err, InputsRefused):  # inputs the model does not take: nothing answers for them
            self.failure, self.refused = str(err), True
            self.session.progress(f"{self.framework.name} set aside: {err}")
            return None
        try:
            outputs = self._truth_rounded(inputs)
        except FrameworkError as truth_err:
            self.failure = f"{why}; nor does any float64 run reach its outputs: {truth_err}"
            self.session.progress(f"{self.framework.name} set aside: {self.failure}")
            return None
        self.stand_in = why
        self.session.progress(f"{why}; its node-by-node float64 truth, rounded to the model's dtypes, stands in")
        return outputs

    @property
    def stand_in_note(self) -> Optional[str]:
        """What the report says where the model's float64 truth stood in for the framework's own run."""
        if self.stand_in is None:
            return None
        return f"{self.stand_in}; the model's node-by-node float64 truth, rounded to its dtypes, stood in for it"

    def _truth_rounded(self, inputs) -> list:
        """The truth on ``inputs`` in the dtypes TVM's reference returns (FrameworkError where an output has none)."""
        truth = self.framework.truth(inputs)
        reference = self.session.runs.reference_outputs(inputs)
        if any(t is None for t in truth) or len(truth) != len(reference):
            raise FrameworkError("no float64 run reaches every output")
        return [np.asarray(t).astype(np.asarray(r).dtype) for t, r in zip(truth, reference)]

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
        score = agreement_score(theirs, mine, self.tol)
        if score <= 1.0 or len(theirs) != len(mine):
            return math.inf if math.isnan(score) else score
        blamed = self._differs(inputs, theirs, mine)
        if blamed is PAST_A_JUMP:  # kept for the judge to prove node by node, never a certain violation
            return min(score, UNPROVEN_JUMP_SCORE)
        return score if blamed else 0.0

    def differs_on(self, inputs: Mapping[str, np.ndarray]) -> bool:
        """Does TVM's reference differ from the framework on ``inputs`` beyond the tolerance?"""
        theirs = self.outputs(inputs)
        return theirs is not None and agreement_score(theirs, self.session.runs.reference_outputs(inputs),
                                                      self.tol) > 1.0

    def judge(self, witness: Mapping[str, np.ndarray]) -> ImportJudgement:
        """The import stage on ``witness``."""
        theirs = self.outputs(witness)
        lowering = self.lowering(witness)
        if theirs is None:
            # a framework that runs nothing of the model, and no float64 truth: nothing says TVM is right
            verdict = "unanswered" if isinstance(self.framework, NoFramework) or self.refused else "unjudged"
            return ImportJudgement(self.framework.name, ImportVerdict(verdict), reason=self.failure, lowering=lowering)
        tol = self.tol
        mine = self.session.runs.reference_outputs(witness)
        narrowed = narrowed_outputs(theirs, mine)
        if narrowed and agreement_score(theirs, mine, tol) <= 1.0:  # a finding of its own, whatever the numbers
            return ImportJudgement(self.framework.name, ImportVerdict.IMPORT, narrowed, lowering=lowering,
                                   outputs=tuple(compare_outputs_with_framework(theirs, mine, tol, judge=False)))
        if not is_finite_outputs(theirs):  # agreement_score says 0 there: not an agreement, no answer
            return ImportJudgement(self.framework.name, ImportVerdict.UNANSWERED, lowering=lowering,
                                   reason=NOT_FINITE_REASON,
                                   outputs=tuple(compare_outputs_with_framework(theirs, mine, tol, judge=False)))
        if agreement_score(theirs, mine, tol) <= 1.0:
            return ImportJudgement(self.framework.name, ImportVerdict.AGREES, lowering=lowering,
                                   reason=self.stand_in_note,
                                   outputs=tuple(compare_outputs_with_framework(theirs, mine, tol, judge=False)))
        if len(theirs) != len(mine):
            return ImportJudgement(self.framework.name, ImportVerdict.IMPORT,
                                   f"TVM's import returns {len(mine)} outputs, the model {len(theirs)}",
                                   lowering=lowering)
        truth, name, note = self.truth(witness)
        bound = self.conditioning_bounds(witness, truth)
        outputs = compare_outputs_with_framework(theirs, mine, tol, truth, bound)
        verdict = ("import" if any(o.tvm_at_fault for o in outputs)
                   else "unjudged" if any(o.not_judged for o in outputs) else "benign")
        said = dict(framework=self.framework.name, truth=name, truth_note=self.stand_in_note or note, outputs=outputs,
                    lowering=lowering)
        if verdict == "benign" and any(o.tvm_at_fault
                                       for o in compare_outputs_with_framework(theirs, mine, tol, truth)):
            local = self._local_fault(witness, said)  # the conditioning bound excuses: it must hold node by node too
            if local is not None:
                return local
        if verdict == "benign":
            return ImportJudgement(verdict=ImportVerdict(verdict), reason=BENIGN_REASON, **said)
        if verdict == "unjudged":
            said["reason"] = f"no independent float64 truth reaches the differing elements ({note or 'none'})"
        return self._explain(verdict, witness, theirs, mine, truth, bound, said)

    def _explain(self, verdict, witness, theirs, mine, truth, bound, said: dict) -> ImportJudgement:
        """Name the first differing node; excuse it only with proof: a flip
        (``flips.py``), or precision verified on the differing value's chain."""
        self.session.progress("TVM's import differs from the model's framework: finding the first node")
        tol = self.tol
        located = self._located(witness)
        origin, origin_note = first_difference(located, located.expected, tol)
        flips: tuple = ()
        if origin is not None and origin.discontinuous:
            outcome = explain_flips(located, origin, tol.plain(), tol, mine, _at_fault(theirs, mine, truth, bound,
                                                                                      tol, unjudged=True))
            flips = outcome.flips
            if outcome.explained:
                what = ", ".join(f"{f.node} ({f.elements} element(s))" for f in flips)
                return ImportJudgement(verdict=ImportVerdict.BENIGN, flips=flips, reason=(
                    f"a discontinuous node flips: {what}; its inputs agree within the tolerance, the framework's "
                    "own operator on TVM's inputs gives TVM's result, and with that result the model agrees"), **said)
            origin, origin_note = outcome.origin, outcome.why or origin_note
        if origin is not None and not flips and located.error is None:
            placed = self._placed(located, verdict, origin_note, said)
            if placed is not None:
                return placed
            self.session.progress(f"the precision stage (up to {MAX_ROUNDS} rounds of a plain build and runs): "
                                  f"does TVM agree with the first differing node, {origin.node}, kept in float32?")
            with waiting(self.session.progress, "the precision stage: TVM's import rebuilt with the differing values "
                         "kept in float32, and run"):
                outcome, searched, fresh = self._precision(origin, witness, located)
            if outcome.explained:
                widened = widened_entries(self.session.model, outcome.widened)
                labels = list(dict.fromkeys(e.label for e in widened))  # a node's conversion may make several
                what = ", ".join(labels[:3]) + (" ..." if len(labels) > 3 else "")
                said.update(origin=origin, origin_note=origin_note)
                return ImportJudgement(verdict=ImportVerdict.PRECISION, widened=widened,
                                       verified_on=outcome.verified_on, reason=(
                    f"TVM computes {what} in the model's {narrow_dtype(self.session.model)}, the framework in "
                    f"float32: with {'it' if len(widened) == 1 else 'them'} kept in float32 TVM agrees with the "
                    f"framework on {outcome.verified_on} input set(s): the witness, {searched} of the search's last "
                    f"inputs and {fresh} fresh ones of the range"), **said)
            origin = outcome.origin
            if said.get("placement") is not None and said["placement"].exonerated:  # every differing node is
                amplified = self._amplified(located, theirs, _at_fault(theirs, mine, truth, bound, tol), said)
                if amplified is not None:  # ... beyond its own tolerance: one within it a later node amplifies
                    return amplified
                return ImportJudgement(verdict=ImportVerdict.BENIGN, reason=EXONERATED_REASON, origin=origin,
                                       origin_note=origin_note, **said)
        said.update(origin=origin, origin_note=origin_note, flips=flips)
        return ImportJudgement(verdict=verdict, **said)

    def _placed(self, located: Located, verdict: str, origin_note, said: dict) -> Optional[ImportJudgement]:
        """The first differing node a part of TVM computes differently on its own inputs
        (``judge/components``: conversion, legalization, code generation), as the verdict
        naming that node; None where every differing node is exonerated (``said`` then
        holds the last placement, for the report) or none could be placed."""
        self.session.progress("placing the difference: which part of TVM computes which node differently")
        with waiting(self.session.progress, "the difference's placement: each differing node's kernels built again "
                     "alone, and its operators evaluated by numpy and PyTorch"):
            placement, placements = place_fault(located, self.tol, lambda line: self.session.progress(Detail(line)))
        if placement is None or not placement.at_fault:  # exonerated, or not judged: precision may yet explain it
            if placements:
                said["placement"] = placements[-1] if placement is None else placement
            return None
        tol = located.tolerance_of(placement.key, self.tol)
        folded = placement.key in self.session.model.folded and placement.key not in located.named
        origin = (folded_origin if folded else origin_at)(located, placement.key, tol)
        return ImportJudgement(verdict=ImportVerdict(verdict), origin=origin, origin_note=origin_note,
                               placement=placement, **said)

    def _amplified(self, located: Located, theirs: list, masks: list, said: dict) -> Optional[ImportJudgement]:
        """Where every node that differs beyond its own tolerance is exonerated: the first node whose
        difference, within its own tolerance, a later node amplifies into the elements at fault, and a
        component computes differently at the tolerance the outputs imply there (``amplified.py``), as
        the verdict naming it; None where none is."""
        self.session.progress("every node that differs beyond its tolerance is exonerated: asking the nodes "
                              "within it whose difference a later node amplifies")
        for found in amplified_nodes(located, self.tol.plain(), self.tol, theirs, masks):
            case = NodeCase.of(located, found.key, found.tol)
            if case is None:
                continue
            self.session.progress(Detail(f"  placing the difference at {case.label}, amplified {found.gain:.3g} "
                                         "times: conversion, legalization, code generation"))
            placement = place(case)
            if placement.at_fault:
                return ImportJudgement(verdict=ImportVerdict.IMPORT, origin=origin_at(located, found.key, found.tol),
                                       origin_note=found.note(case.label),
                                       **{**said, "placement": placement})
        return None

    def _local_fault(self, witness, said: dict) -> Optional[ImportJudgement]:
        """Where only the conditioning excuses the outputs: the first differing node at fault on its own
        inputs (``local_node.py``) as an import verdict; None where none is."""
        self.session.progress("the outputs' difference is within their conditioning: judging each differing node "
                              "on its own inputs")
        located = self._located(witness)
        origin, judged = local_fault(located, self.tol)
        if origin is None:  # a discontinuous node too, each on its own inputs by every component's truth
            return self._placed(located, "import", None, said)
        note = (f"every output's difference is within its conditioning on the witness, but {origin.node} computes "
                f"differently on its own inputs: against its float64 truth there, beyond {K:g} times the framework's "
                f"error and its own conditioning bound ({judged} differing node(s) judged alone)")
        case = NodeCase.of(located, origin.key, self.tol)
        placement = place(case) if case is not None else None
        return ImportJudgement(verdict=ImportVerdict.IMPORT, origin=origin, origin_note=note, placement=placement,
                               **said)

    def _located(self, witness) -> Located:
        """TVM's and the framework's values of every node on ``witness``: a plain build of TVM's
        import, its VM and a run, planned as the build as written took, said while it lasts."""
        progress, planned = self.session.progress, sum(probe_parts(self.session))
        afford(progress, planned, "the first node's plain build of TVM's import (a build, its VM and a run)")
        with waiting(progress, "the first node: TVM's import built plainly and run with every kernel's value kept, "
                     "beside the framework's values", planned):
            return Located(self.session.model, self.framework, witness, local_target(self.session.config.target))

    def _precision(self, origin, witness, located: Located):
        """The precision stage's PrecisionOutcome from ``origin`` on, verified on the
        witness, the inputs the search ran and fresh ones; with how many of the last two."""
        model = self.session.model
        # a binding made inside a node's conversion is declared as that node's output is
        keys = {p.label: p.key for p in model.provenance.values() if p.key and not p.inside}

        def declared_narrow(binding: str) -> bool:
            found = model.provenance.get(binding)
            key = (found.key or keys.get(found.label)) if found is not None else None
            value = located.expected.get(key) if key else None
            return value is not None and np.asarray(value).dtype.name in _NARROW

        searched = [seen for (seen,), _ in self._outputs if seen is not witness]
        fresh = self._fresh_inputs()
        trials = [(each, self._accepts(each)) for each in [witness] + searched + fresh]
        return explain_precision(located, origin, self.tol.plain(), trials, declared_narrow), len(searched), len(fresh)

    def _fresh_inputs(self) -> list:
        """FRESH_INPUTS inputs drawn uniformly from the ranges (seeded: the same each run)."""
        if not self.ranges:
            return []
        gen = np.random.default_rng(20261127)
        return [random_candidate(self.session.model.inputs, self.ranges, gen) for _ in range(FRESH_INPUTS)]

    def _accepts(self, inputs):
        """A check of a widened build's outputs on ``inputs``: not differing from the framework by TVM's fault."""
        def accepts(outputs) -> bool:
            theirs = self.outputs(inputs)
            if theirs is None or len(outputs) != len(theirs):
                return False
            if agreement_score(theirs, outputs, self.tol) <= 1.0:
                return True
            return self._differs(inputs, theirs, outputs) in (False, PAST_A_JUMP)
        return accepts

    def _differs(self, inputs, theirs: list, mine: list):
        """Does TVM (``mine``) differ from the framework (``theirs``) on ``inputs``
        where nothing excuses it: at fault against the truth, or with no truth?
        PAST_A_JUMP where only the conditioning bound excuses it and the model has a
        discontinuous operator: a jump at an exact tie is no rounding, so that takes proof."""
        truth, _, _ = self.truth(inputs)
        blamed = lambda outputs: any(o.tvm_at_fault or o.not_judged for o in outputs)  # noqa: E731
        # the conditioning bound only excuses: measured (8 more runs of the truth) only where something is at
        # fault without it
        if not blamed(compare_outputs_with_framework(theirs, mine, self.tol, truth)):
            return False
        bounds = self.conditioning_bounds(inputs, truth)
        if blamed(compare_outputs_with_framework(theirs, mine, self.tol, truth, bounds)):
            return True
        # the conditioning bound excuses it; across a discontinuous operator (an exact tie of a rounding) that takes the
        # proof the judge asks for node by node (``judge``): the search keeps such inputs, below a certain score
        return PAST_A_JUMP if self.discontinuous else False

    @property
    def discontinuous(self) -> bool:
        """Whether the model computes a discontinuous operator (first_node.DISCONTINUOUS, a cast to an integer)."""
        if self._discontinuous is None:
            self._discontinuous = any(is_discontinuous(p.op, "float32") or p.op == "relax.astype"
                                      for p in self.session.model.provenance.values())
        return self._discontinuous

    def conditioning_bounds(self, inputs, truth) -> Optional[list]:
        """The truth's own movement when the inputs move by a few roundings of the
        float each output is computed in (``Framework.moved_truth``), per output and
        element; None without a truth."""
        if truth is None or all(t is None for t in truth):
            return None
        history = self.tol.history or (None,) * len(truth)
        scales = [conditioning_scale(history[i] if i < len(history) else None) for i in range(len(truth))]
        bounds: list = [None] * len(truth)
        for scale in sorted(set(scales)):
            runs = []
            for seed in range(CONDITIONING_RUNS):
                try:
                    runs.append(self.framework.moved_truth(inputs, seed, scale))
                except FrameworkError:  # this run moved out of the model's domain: the others measure
                    continue
            measured = conditioning_bound(truth, runs) if runs else [None] * len(truth)
            for i, wanted in enumerate(scales):
                if wanted == scale:
                    bounds[i] = measured[i]
        return bounds

    def truth(self, inputs) -> tuple:
        """(float64 outputs, None for an output no independent run reaches, or None
        where none does; which run they are; why not the framework's whole float64 copy)."""
        try:
            outputs = self.framework.truth(inputs)
        except FrameworkError as err:
            return None, None, f"no independent truth: {err}"
        return outputs, self.framework.truth_name, self.framework.truth_note

    def lowering(self, witness) -> Optional[float]:
        """How far TVM's float32 reference is from TVM's own float64 build, where that was made."""
        if not self.oracle.made:
            return None
        try:
            outputs = self.oracle.outputs(witness)
        except Exception:  # the float64 build failed: nothing to say about lowering
            return None
        # the float64 values rounded to the reference's own dtypes: its own tolerance applies
        reference = self.session.runs.reference_outputs(witness)
        rounded = [o.astype(np.asarray(r).dtype) if o.dtype == np.float64 and np.asarray(r).dtype.kind == "f" else o
                   for o, r in zip(outputs, reference)]
        return compare_outputs(rounded, reference, self.tol).score


def _at_fault(theirs: list, mine: list, truth, bound, tol, unjudged: bool = False) -> list:
    """Per output, the elements at TVM's fault on the witness (``unjudged``: and those no truth judges)."""
    judged = (judge_elements(f, m, t, tol, i, s) for i, (f, m, t, s) in
              enumerate(zip(theirs, mine, truth or [None] * len(mine), bound or [None] * len(mine))))
    return [e.at_fault | e.unjudged if unjudged else e.at_fault for e in judged]


def narrowed_outputs(theirs: list, mine: list) -> Optional[str]:
    """Where TVM returns an output in a narrower float than the model (float32 for a float64 model):
    what it computed in, said as a finding (None: none narrowed)."""
    widths = {"bfloat16": 16, "float16": 16, "float32": 32, "float64": 64}
    found = [f"output {i}: TVM computes it in {np.asarray(m).dtype}, the model is {np.asarray(t).dtype}"
             for i, (t, m) in enumerate(zip(theirs, mine))
             if widths.get(np.asarray(m).dtype.name, 0) < widths.get(np.asarray(t).dtype.name, 0)
             and np.asarray(m).dtype.kind == "f"]
    return "; ".join(found) + " (a narrowed output)" if found else None


EXONERATED_REASON = ("every node where TVM differs from the framework computes, on TVM's own values of its arguments, "
                     "what the model's node does: its conversion, its kernels and their code generation each agree "
                     "with their own truth, so the difference is rounding that accumulates, not a part of TVM at fault")
BENIGN_REASON = ("at every differing element, TVM is within the tolerance of the float64 truth, within that "
                 "element's conditioning (its inputs' and its sums' roundings), or not over 32 times as far off as "
                 "the framework")


def judge_import(at, said) -> Optional[ImportJudgement]:
    """The import stage on ``at``'s witness (a stages.Witnessed): the
    framework's float64 truth and its conditioning run the model node by node
    (minutes); None with ``--no-framework``."""
    watch = at.watch
    if watch is None:
        return None
    with waiting(at.session.progress, f"{watch.framework.name} judging TVM's import on the witness (its float64 "
                 "truth)"):
        return watch.judge(at.witness)


def import_answer(finding) -> Optional[ImportJudgement]:
    return finding.imports


def import_verdict(answer: Optional[ImportJudgement]) -> StageVerdict:
    word = answer.verdict if answer is not None else ImportVerdict.UNANSWERED
    return StageVerdict(Stage.IMPORT, word, at_fault=answer is not None and answer.differs)
