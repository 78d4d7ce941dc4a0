"""Narrowing one culprit: the fewest places where undoing its rewrite makes the
build clean on the witnesses.

``narrow_culprit`` reads what the culprit event rewrote (``narrow.rewrites``),
then asks ``CleanWith`` (builds the pipeline with the culprit undone at a set
of places, runs it on every witness) the questions of Zeller's delta debugging
(``bisect.strategies.ddmin``) over the places that can be undone alone, the
places its hints name first (the range check's warnings the witness reaches:
Polygraphy's ``debug precision`` starts its bisection at layers the same way).
It never decides on a dict: the answer is a ``Narrowing``.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Mapping, Optional, Sequence

from ..locate.bisect.driver import probe_parts
from ..locate.bisect.strategies import ddmin
from ..ir.instrument.recorder import EventSnapshot
from ..ir.narrow import CulpritFix, FixPlan, Place, rewrites
from ..ir.narrow.change import Change
from ..ir.pipeline import CompileConfig
from ..base.progress import Detail, afford, duration, waiting
from ..build.compile import BuildRequest, compile_model

# builds one culprit's delta debugging may ask for (each place set is one build)
MAX_TESTS = 48


@dataclasses.dataclass(frozen=True)
class Narrowing:
    """A culprit's fix (``fix``: what a FixPlan carries, its event, remedy and
    places) and how it was found: the ``rewrites`` the pass made (places
    whose computation it changed) and the ``follows`` (places it only moved
    to another dtype); remedy ``off`` when no narrow set clears the witnesses
    (``reason`` says why); ``tests``: builds asked for."""

    fix: CulpritFix
    rewrites: int
    follows: int = 0
    reason: str = ""
    tests: int = 0
    complete: bool = True  # delta debugging ended inside its test budget

    @property
    def event(self) -> str:
        return self.fix.event

    @property
    def remedy(self) -> str:
        return self.fix.remedy

    @property
    def places(self) -> tuple:
        return self.fix.places

    def switched_off(self, reason: str) -> "Narrowing":
        return dataclasses.replace(self, fix=self.fix.switched_off(), reason=reason)

    def undone_also_at(self, places: tuple) -> "Narrowing":
        return dataclasses.replace(self, fix=dataclasses.replace(self.fix, places=self.places + tuple(places)))

    @property
    def kept(self) -> int:
        """The rewrites the fix keeps: all but the undone ones (none with the pass off)."""
        undone = len([p for p in self.places if p.kind == Change.REWRITE])
        return self.rewrites - undone if self.remedy == "narrow" else 0

    def to_json(self) -> dict:
        return {"event": self.event, "remedy": self.remedy, "rewrites": self.rewrites, "kept": self.kept,
                "follows": self.follows,
                "places": [p.to_json() for p in self.places] if self.remedy == "narrow" else [],
                "reason": self.reason, "tests": self.tests, "complete": self.complete}

    @classmethod
    def from_json(cls, data) -> "Narrowing":
        return cls(CulpritFix.from_json(data), int(data["rewrites"]), int(data.get("follows", 0)),
                   data.get("reason", ""), int(data.get("tests", 0)), bool(data.get("complete", True)))


class CleanWith:
    """``clean(places)``: does the pipeline, with ``event`` undone at ``places``
    (on top of ``config``'s own fix), give what the reference gives on every
    witness? A build that fails, or a fix that does not apply, is not clean.
    Each test is said (``n of at most``), planned against the session's time
    limit (from the build as written, then from the tests so far) and said
    while it lasts."""

    def __init__(self, session, config: CompileConfig, event: str, witnesses: Sequence[Mapping]):
        self.session, self.config, self.event, self.witnesses = session, config, event, list(witnesses)
        self.answers: dict = {}
        self.spent = 0.0  # seconds the tests so far took

    def config_with(self, places: Sequence[Place]) -> CompileConfig:
        plan = (self.config.fix or FixPlan()).with_culprit(CulpritFix(self.event, "narrow", tuple(places)))
        return dataclasses.replace(self.config, fix=plan)

    def __call__(self, places: Sequence[Place]) -> bool:
        key = frozenset(places)
        if key not in self.answers:
            self.answers[key] = self._ask(places)
        return self.answers[key]

    @property
    def tests(self) -> int:
        return len(self.answers)

    def planned(self) -> float:
        """Seconds the next test is planned to take: what the tests so far took
        on average, or before the first a build, its VM and a run per witness."""
        if self.answers:
            return self.spent / len(self.answers)
        return verification_time(self.session, len(self.witnesses))

    def _ask(self, places) -> bool:
        progress, number, planned = self.session.progress, len(self.answers) + 1, self.planned()
        progress(Detail(f"narrowing {self.event}: test {number} of at most {MAX_TESTS + 2}, "
                        f"undone at {len(places)} place(s) (~{duration(planned)} each)"))
        afford(progress, planned, f"narrowing test {number} (a build and {len(self.witnesses)} runs)")
        started = time.perf_counter()
        with waiting(progress, f"narrowing test {number}: a build with {self.event} undone at {len(places)} "
                     f"place(s), its VM and {len(self.witnesses)} runs", planned):
            build = self.session.memo.configured(self.config_with(places))
            clean = build.ok and not build.fix_problems and \
                not any(self.session.runs.compare(build, w).violated for w in self.witnesses)
        self.spent += time.perf_counter() - started
        return clean


def culprit_modules(session, config: CompileConfig, event: str) -> tuple:
    """(module the event received, module it returned) in a build of ``config``."""
    snapshot = EventSnapshot(event)
    build_s = session.optimized.seconds if session.optimized is not None else None
    if build_s is not None:
        afford(session.progress, build_s, f"reading what {event} rewrote (a build)")
    with waiting(session.progress, f"TVM building the pipeline to read what {event} rewrote", build_s):
        build = compile_model(session.model.mod, config, BuildRequest(instruments=(snapshot,)))
    session.memo.note(build)
    return snapshot.before, snapshot.after


def narrow_culprit(session, config: CompileConfig, event: str, witnesses: Sequence[Mapping],
                   hints: Sequence[str] = (), provenance: Optional[Mapping] = None) -> Narrowing:
    """The narrowest remedy of ``event`` that clears ``witnesses`` in builds of
    ``config`` (whose fix must not name ``event``); ``hints``: value names
    (the range check's) whose places are tried first; ``provenance``: the model's
    ``provenance.Provenance`` by binding name, to name each place in the user's model."""
    with waiting(session.progress, f"narrowing {event}"):  # one heartbeat for all its tests
        return _narrowed(session, config, event, witnesses, hints, provenance)


def _narrowed(session, config: CompileConfig, event: str, witnesses: Sequence[Mapping], hints: Sequence[str],
              provenance: Optional[Mapping]) -> Narrowing:
    before, after = culprit_modules(session, config, event)
    if before is None or after is None:
        return Narrowing(CulpritFix(event, "off"), 0, reason="the build never ran this pass event")
    found = [(_named(p, provenance or {}), ok) for p, ok in rewrites(before, after)]
    counts: dict[str, Any] = {"rewrites": len([p for p, _ in found if p.kind == Change.REWRITE]),
              "follows": len([p for p, _ in found if p.kind == Change.FOLLOW])}
    candidates = [p for p, ok in found if ok]
    stuck = len(found) - len(candidates)
    clean = CleanWith(session, config, event, witnesses)
    if not candidates:
        return Narrowing(CulpritFix(event, "off"), **counts, reason="no place the pass acted on can be undone alone")
    if not clean(candidates):
        why = f"undoing all {len(candidates)} places that can be undone alone leaves the violation"
        return Narrowing(CulpritFix(event, "off"), **counts, tests=clean.tests,
                         reason=why + (f" ({stuck} more cannot be undone alone)" if stuck else ""))
    hinted = [p for p in candidates if p.binding in set(hints)]
    items = hinted if hinted and clean(hinted) else candidates
    places, complete = ddmin(items, clean, max_tests=MAX_TESTS)
    narrowing = Narrowing(CulpritFix(event, "narrow", tuple(places)), **counts, tests=clean.tests,
                          complete=complete)
    if narrowing.kept == 0 and counts["rewrites"]:  # the pass off is as narrow, and simpler to apply
        return narrowing.switched_off(f"every one of its {counts['rewrites']} rewrites must be undone")
    return narrowing


def _named(place: Place, provenance: Mapping) -> Place:
    """``place`` with where it is in the user's model, where the import says."""
    made_by = provenance.get(place.binding) if place.binding else None
    if made_by is None or (made_by.op is not None and made_by.op != place.op):
        return place
    return dataclasses.replace(place, provenance=made_by.text())


def narrow_all(session, events, trials, progress) -> tuple:
    """(build, FixPlan, None) with each of ``events`` narrowed on ``trials`` (a
    guard's witness and fresh inputs) and the fixed build verified on them;
    (None, None, why) where a culprit has no narrow remedy or the narrowed build
    does not verify (the guard then switches the culprits off and says why)."""
    plan = FixPlan()
    for event in events:
        progress(f"narrowing {event}: where must it be kept from acting?")
        found = narrow_culprit(session, dataclasses.replace(session.config, fix=plan or None), event, trials,
                               provenance=session.model.provenance)
        if found.remedy != "narrow":
            return None, None, f"{event}: {found.reason or 'no narrower set of places verified'}"
        plan = plan.with_culprit(found.fix)
    planned = verification_time(session, len(trials))
    afford(progress, planned, f"verifying the narrow fix (a build and {len(trials)} runs)")
    with waiting(progress, f"the narrowed build, its VM and {len(trials)} runs to verify it", planned):
        build = session.memo.configured(dataclasses.replace(session.config, fix=plan))
        if not build.ok or build.fix_problems:
            return None, None, f"the narrowed build fails: {build.error or '; '.join(build.fix_problems)}"
        if not all(session.runs.compare(build, x).score <= 1.0 for x in trials):
            return None, None, "the narrowed build differs on the inputs it was verified on"
    return build, plan, None


def verification_time(session, inputs: int) -> float:
    """Seconds a build verified on ``inputs`` input sets is planned to take: a
    build, its VM and a run each, as the pipeline as written took."""
    build_s, vm_s, call_s = probe_parts(session)
    return build_s + vm_s + inputs * call_s


def switched_off(session, events, trials, progress) -> tuple:
    """(build, skip set) with ``events`` skipped (closed over the catalog's
    dependencies), where that build matches the reference on every one of
    ``trials``; (None, skip set) where it does not or fails to build."""
    skip = session.close(events)
    planned = verification_time(session, len(trials))
    afford(progress, planned, f"verifying the build with the culprit off (a build and {len(trials)} runs)")
    with waiting(progress, f"the build with the culprit off, its VM and {len(trials)} runs to verify it", planned):
        build = session.build(skip)
        if build.ok and all(session.runs.compare(build, x).score <= 1.0 for x in trials):
            return build, skip
    return None, skip
