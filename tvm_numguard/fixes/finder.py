"""``numguard fix``: bisect, narrow each culprit, verify on a fresh search.

Rounds: the first is ``numguard bisect`` (the user's seed and budget). A clean
first round is "nothing to fix". Each culprit it blames is narrowed
(``narrowing.narrow_culprit``) and the fix so far applied to every later
round. Every later round is a **verification**: another seed, twice the
budget, the search aimed by the range check of the fixed pipeline. It is clean
and reaches no range-check warning the pipeline brings in: the fix is
verified. It is not: its witness joins the blamed culprit's witnesses and the
culprit is narrowed again (a culprit narrowed ``NARROW_ATTEMPTS`` times is
switched off instead); a culprit switched off and still blamed, or a violation
no pass is blamed for, ends the search unverified.

A search that meets TVM's import computing other numbers than the model's
framework keeps that finding (``FixOutcome.imports``: no pass fix mends a
frontend, it is reported beside the fix) and from then on asks the pass
question alone (``--no-framework``: the optimized build against TVM's
reference build): a witness of the import hides the pass's, and the pass is
fixed and verified against the reference. A first search that met only the
import is made again so.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Optional

from ..engine import engine
from ..build.session import RunContext
from ..ir.narrow import FixPlan
from ..locate.options import Options
from ..ir.pipeline import CompileConfig
from ..report.text import counted
from ..locate import parse_budget
from ..ir.narrow import Correspondence, rewrites
from .narrowing import Narrowing, culprit_modules, narrow_culprit

if TYPE_CHECKING:
    from ..judge.finding import Finding

NARROW_ATTEMPTS = 3  # narrowings of one culprit before it is switched off
MAX_ROUNDS = 8  # searches in all, the first included
SEED_STEP = 7919  # a verification's seed: the user's plus this, times the round


@dataclasses.dataclass
class FixOutcome:
    """What ``find_fix`` found: the first round's Finding (the bisection), the
    narrowing of each culprit (last one found wins), the last verification's
    Finding and whether it verified; ``reason`` when it did not."""

    first: Finding
    narrowings: dict  # event -> Narrowing, in the order found
    verification: Optional[Finding] = None
    verified: bool = False
    reason: str = ""
    rounds: int = 1
    reached: tuple = ()  # pipeline warnings (new) the last verification reached
    imports: Optional[Finding] = None  # the Finding where TVM's import differed from the framework

    @property
    def plan(self) -> FixPlan:
        return plan_of(self.narrowings)

    @property
    def nothing_to_fix(self) -> bool:
        """No pass to fix: nothing narrowed and no pass violation in the first search (an
        import finding, which no pass fix mends, may be there beside: ``imports``)."""
        return not self.narrowings and not self.first.violation


def plan_of(narrowings: dict, without: Optional[str] = None) -> FixPlan:
    """The fix the narrowings so far make (``without``: less that event's)."""
    return FixPlan(tuple(n.fix for event, n in narrowings.items() if event != without))


def verification_options(options: Options, round_: int) -> Options:
    """The options of verification round ``round_``: another seed, twice the budget."""
    return dataclasses.replace(options, seed=options.seed + SEED_STEP * round_, budget=doubled(options.budget))


def doubled(budget: str) -> str:
    """``budget`` (as ``--budget`` takes it) with twice the evaluations and twice the seconds."""
    if budget == "auto":
        return budget
    parsed = parse_budget(budget)
    parts = [str(2 * parsed.evaluations)] if parsed.evaluations is not None else []
    if parsed.seconds is not None:
        parts.append(f"{2 * parsed.seconds:g}s")
    return ",".join(parts)


def find_fix(model, config: CompileConfig, options: Options, context: RunContext = RunContext()) -> FixOutcome:
    """Bisect ``model`` under ``config`` and find the narrowest verified fix (see the module's docstring)."""
    return FixSearch(engine.as_model(model), config, options, context).run()


class FixSearch:
    """One ``numguard fix``: the narrowings so far and, per culprit, its
    witnesses and how often it was narrowed. ``round()`` runs the next search
    under the fix so far and ``decide``s on its Finding: the search ends
    (verified or why not) or the fix changes for the next round."""

    def __init__(self, model, config: CompileConfig, options: Options, context: RunContext):
        self.model, self.config, self.options, self.context = model, config, options, context
        self.narrowings: dict = {}  # event -> Narrowing, in the order found
        self.witnesses: dict = {}  # event -> the witnesses it was blamed on
        self.attempts: dict = {}  # event -> narrowings of it so far
        self.outcome: Optional[FixOutcome] = None
        self.imports = None  # the Finding where TVM's import differed: the pass question is asked alone since
        self.bisected = False  # whether the pass question's first search (the user's seed and budget) was made

    def run(self) -> FixOutcome:
        for round_ in range(MAX_ROUNDS):
            ending = self.round(round_)
            if ending is not None:
                self.made.verified, self.made.reason = ending
                return self.made
        self.made.reason = f"no fix verified in {MAX_ROUNDS} searches"
        return self.made

    @property
    def made(self) -> FixOutcome:
        """The outcome, which the first round makes."""
        assert self.outcome is not None, "the outcome is read before the first round made it"
        return self.outcome

    def round(self, round_: int) -> Optional[tuple]:
        """Search round ``round_``; (verified, reason) when the search ends, else None."""
        first = not self.bisected
        options = self.options if first else verification_options(self.options, round_)
        if self.imports is not None:  # no pass fix mends the import: the pass question alone, against the reference
            options = dataclasses.replace(options, framework=False)
        fixed = dataclasses.replace(self.config, fix=plan_of(self.narrowings) or None)
        if not first:
            self.context.progress(f"verifying the fix on a fresh search (seed {options.seed}, "
                                  f"budget {options.budget})")
        started = time.perf_counter()
        session, ranges = engine.open_session(self.model, fixed, options, self.context)
        with session:
            finding = engine.run_on(session, options, ranges, engine.Steps("fix"), started)
            if first:
                self.outcome = FixOutcome(finding, self.narrowings, imports=self.imports)
            self.made.rounds, self.made.verification = round_ + 1, None if first else finding
            return self.decide(finding, session, options.seed, first=first)

    def decide(self, finding, session, seed: int, first: bool) -> Optional[tuple]:
        """What a round's ``finding`` means: (verified, reason) or None (the fix
        changed: narrowed further, widened, or a culprit added)."""
        if finding.import_differs and self.imports is None:
            self.imports = self.made.imports = finding
            self.context.progress(f"{import_reason(finding, seed)}: reported beside the fix; the pass question is "
                                  "asked alone from here on, against TVM's reference build (--no-framework)")
            if not finding.violation:
                return None  # its witness may hide the pass's: the search is made again without the framework
        self.bisected = True
        reached = [] if first else _new_warnings_reached(finding)
        if not finding.violation and not reached:
            return True, ""  # clean: verified (nothing to fix in the first round)
        if not finding.violation:  # clean, but where the range check says the pipeline can break
            self.made.reached = tuple(w.warning.binding for w in reached)
            why = _widen(self.narrowings, session, self.config, reached)
            return (False, why) if why else None
        blamed = finding.bisection.blame().disable if finding.bisection is not None else ()
        if not blamed:
            return False, "the violation is not blamed on a pass event (the whole pipeline is needed for it)"
        stuck = [e for e in blamed if e in self.narrowings and self.narrowings[e].remedy == "off"]
        if stuck:
            return False, f"{stuck[0]} is switched off and a violation remains on seed {seed}"
        for event in blamed:
            self.witnesses.setdefault(event, []).append(finding.witness)
            self.attempts[event] = self.attempts.get(event, 0) + 1
            self.narrowings[event] = _remedy(session, self.config, self.narrowings, event, self.witnesses[event],
                                             self.attempts[event], finding, self.model)
        return None


def import_reason(finding, seed: int) -> str:
    """What a search met where TVM's import differs from the model: no pass fix mends a frontend."""
    origin = finding.imports.origin
    where = f" at {origin.node}" if origin is not None else ""
    return (f"TVM's import computes other numbers than the model's framework{where} on seed {seed}: "
            "no pass fix can mend the frontend")


def _remedy(session, config, narrowings, event, witnesses, attempt, finding, model) -> Narrowing:
    """``event``'s next remedy: narrowed again on every witness so far, or switched off after NARROW_ATTEMPTS."""
    base = dataclasses.replace(config, fix=plan_of(narrowings, without=event) or None)
    if attempt > NARROW_ATTEMPTS:
        previous = narrowings[event]
        return previous.switched_off(f"no narrow set verified in {NARROW_ATTEMPTS} narrowings")
    session.progress(f"narrowing {event} on {len(witnesses)} witness(es)")
    hints = _hints(finding)
    narrowing = narrow_culprit(session, base, event, witnesses, hints, model.provenance)
    done = (f"undone at {counted(len(narrowing.places), 'place')}" if narrowing.remedy == "narrow" else
            "switched off")
    session.progress(f"{event}: {done}, keeps {narrowing.kept} of {narrowing.rewrites} rewrites"
                     + (f" ({narrowing.reason})" if narrowing.reason else ""))
    return narrowing


def _hints(finding) -> tuple:
    """Value names the range check warned about and the witness reaches."""
    outcome = finding.range_check
    if outcome is None or outcome.result is None:
        return ()
    reached = set(outcome.reached)
    return tuple(w.warning.binding for w in outcome.result.warnings
                 if w.module == "pipeline" and w.warning.position in reached)


def _new_warnings_reached(finding) -> list:
    """The range check's warnings that the pipeline brings in (the model has no
    such warning there) and that the search's worst input reaches."""
    outcome = finding.range_check
    if outcome is None or outcome.result is None or finding.witness is None:
        return []
    reached = set(outcome.reached)
    return [w for w in outcome.result.warnings if w.module == "pipeline" and w.new and w.warning.position in reached]


def _widen(narrowings, session, config, reached) -> str:
    """A clean verification that reaches new range-check warnings: each narrowed
    culprit is also undone at the places those warnings are about; returns why
    that cannot be done ("" when it was)."""
    names = {w.warning.binding for w in reached}
    widened = False
    for event, previous in list(narrowings.items()):
        if previous.remedy != "narrow":
            continue
        base = dataclasses.replace(config, fix=plan_of(narrowings, without=event) or None)
        more = tuple(p for p in _places_warned(session, base, event, names) if p not in previous.places)
        if more:
            narrowings[event] = previous.undone_also_at(more)
            widened = True
    if not widened:
        return (f"the fixed build reaches range-check warnings ({', '.join(sorted(names))}) at no place "
                "a narrowed culprit rewrote")
    return ""


def _places_warned(session, config, event, names) -> tuple:
    """The places of ``event``'s rewrites whose value after it (or a cast of it) is named one of ``names``
    (the range check reads the module the pipeline made, which keeps the pass's names)."""
    before, after = culprit_modules(session, config, event)
    if before is None:
        return ()
    correspondence = Correspondence(before, after)
    graph = correspondence.graph_after
    warned = {graph.canon(n) for n in names if graph is not None and n in graph.nodes}
    return tuple(p for p, ok in rewrites(before, after)
                 if ok and p.binding is not None and correspondence.after_of.get(p.binding) in warned)
