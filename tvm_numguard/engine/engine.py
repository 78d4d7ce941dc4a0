"""One run of numguard, told top-down: prepare the builds, search, judge each stage, locate the culprit.

The area above the judge, the search and the builds: nothing below it calls
up into it. ``run`` is one run as a reader follows it: ``open_session``
prepares the builds (the pipeline as written, the reference), the searches
look for the inputs where they differ (``search_range``), ``judge`` asks each
stage of the witness (``judge/stages.STAGES``: determinism, pass, import,
target, lowering), a violation is bisected (``bisect_finding``), the
command's own step follows (``Steps.then``: trace's per-pass table), and
``finish`` counts the builds. Every command runs this sequence with its own
``Steps``: bisect, search and trace through ``run``; fix, the guard and
regress, which prepare their sessions their own way, through ``run_on``;
what they return is a Finding. Nothing here prints: long work
reports through ``progress(message)`` (a ``progress.Detail`` message is below
phase level).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import time
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..locate.bisect import Bisection, BisectionStopped, BisectResult, bisect_session
from ..locate.bisect.driver import bisection_plan
from ..locate.bisect.breaking_pass import bisect_build_failure
from ..base.errors import (FixError, InvalidReferenceError, PipelineBreaksError, PipelineBuildError, RangeError,
                           summarize_error)
from ..judge.finding import BuildCount, Finding, ModelInfo, RangeCheckOutcome, SearchOutcome
from ..ir.model import Model, load_model
from ..judge.rangecheck import check_domains
from ..judge.rangecheck.check import RangeCheck
from ..judge.rangecheck.indices import check_index_ranges, integer_note
from ..locate.options import Options
from ..ir.pipeline import CompileConfig
from ..base.progress import Detail, waiting
from ..base.words import Stage
from ..locate import FixedInputs, make_search, parse_budget, resolve_ranges, score_of
from ..locate.searches import ONE_POINT
from ..locate.aimed import Aim
from ..ir.targets import CUDA_STARTED, cuda_started_here, local_target, parse_target, require_device
from ..judge.framework import open_framework
from ..judge.framework.probe import EndsProbe
from ..judge import oracle as oracles
from ..judge.oracle import Oracle
from ..build.session import BuildSession
from ..judge.import_stage import FrameworkWatch
from ..judge.stages import Witnessed, judge_stages
from ..build.session import RunContext

# A search for a witness to bisect stops once a violation is this many times the
# tolerance: far past rounding noise, a certain violation, and a bisection needs
# one certain witness, not the worst (``numguard search`` looks for the worst).
CERTAIN_SCORE = 10.0


@dataclasses.dataclass(frozen=True)
class Steps:
    """What a command sets of the one sequence (``run``, ``run_on``): its name
    in the Finding, the searches (None: the options' input searches), the
    budget to record (None: the options'), whether a violation is bisected,
    whether the Finding lists every search's result, and ``then``, a step of
    the command's own after judging (trace's per-pass table), given the
    session and the Finding, returning the Finding."""

    command: str
    searches: Optional[tuple] = None
    budget: Optional[str] = None
    bisect: bool = True
    every_search: bool = False
    then: Optional[Callable[[BuildSession, Finding], Finding]] = None


def run(model, config: CompileConfig, options: Options, context: RunContext, steps: Steps, *,
        inputs: Optional[Mapping[str, np.ndarray]] = None) -> Finding:
    """One run on ``model``, top-down, as ``steps`` say (``inputs``: those alone, no search)."""
    started = time.perf_counter()
    session, ranges = open_session(model, config, options, context)  # the builds: as written, the reference
    with session:
        if inputs is not None:
            steps = dataclasses.replace(steps, searches=(FixedInputs(coerce_given_inputs(session.model, inputs)),))
        return run_on(session, options, ranges, steps, started)


def run_on(session: BuildSession, options: Options, ranges, steps: Steps, started: float) -> Finding:
    """The sequence on a prepared session (``open_session``'s, or one a command
    prepared its own way: the guard's, regress's): search, judge each stage,
    locate, the command's own step, the builds counted; ``started``: when the
    run began (``time.perf_counter()``)."""
    searches = steps.searches if steps.searches is not None else input_searches(options)
    finding = search_and_judge(session, options, ranges, searches, steps.command, budget=steps.budget,
                               bisect=steps.bisect, every_search=steps.every_search)
    if steps.then is not None:
        finding = steps.then(session, finding)
    return finish(finding, session, started)  # the builds counted, how they were made


def as_model(model) -> Model:
    """A Model, or what ``load_model`` takes (a path, an IRModule)."""
    return model if isinstance(model, Model) else load_model(model)


def open_session(model, config: CompileConfig, options: Options, context: RunContext = RunContext(),
                 record: bool = True) -> tuple:
    """(prepared BuildSession, ranges): the model loaded, its ranges resolved
    (a bad range fails before any build), both builds made; ``context``: the
    run's hooks and how the builds after those two are made."""
    model = as_model(model)
    target = parse_target(config.target)
    require_device(target)  # one line where the target's device is missing, before any build
    if target.is_gpu and cuda_started_here():  # a caller's own GPU work came first: no worker could use the GPU
        context.progress(CUDA_STARTED)
    context = dataclasses.replace(context, workers=context.workers.for_target(target.is_gpu))
    if config.fix and config.fix_model and config.fix_model != model.sha256:
        raise FixError(f"the fix {config.fix_file or ''} was made for another model "
                       f"(sha256 {config.fix_model[:12]}...), "
                       f"not {model.source} (sha256 {model.sha256[:12]}...): make one for this model with numguard fix")
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    # a range past an index operator's bounds is the user's mistake, unless the model's own framework runs it
    check_index_ranges(model, ranges, EndsProbe(model, ranges) if options.framework else None)
    for line in integer_note(model.inputs, ranges):
        context.progress(line)
    session = BuildSession(model, config, options.tolerance, context)
    try:
        session.prepare(record=record)
        if session.built.fix_problems:
            raise FixError(f"the fix {config.fix_file or ''} does not apply to this model and pipeline: "
                           + "; ".join(session.built.fix_problems))
    except PipelineBuildError:
        with session:
            raise_build_failure(session)
    except BaseException:  # the worker holding the reference goes with the session
        session.shutdown()
        raise
    return session, ranges


def raise_build_failure(session: BuildSession) -> None:
    """The pipeline as written did not build in ``session``: bisect which pass
    breaks it and raise that as a finding (PipelineBreaksError), not as bad input."""
    failure = bisect_build_failure(session)
    who = (f"pass {failure.culprit} breaks the build" if failure.culprit
           else "the model does not build even with every optional pass skipped")
    raise PipelineBreaksError(f"the pipeline '{failure.pipeline}' does not build this model: {who}: {failure.error}",
                              failure, session.config, session.model)


def diagnose_build(model, config: CompileConfig, context: RunContext = RunContext()) -> None:
    """Build ``config``'s pipeline on ``model``; where it does not build, raise the
    bisected PipelineBreaksError (``numguard check``, which builds nothing itself)."""
    with BuildSession(as_model(model), config, context=context) as session:
        try:
            session.prepare_optimized(record=False)
        except PipelineBuildError:
            raise_build_failure(session)


def input_searches(options: Options, budget=None) -> list:
    """The options' input searches, each with ``budget`` (default: the options')."""
    budget = budget if budget is not None else parse_budget(options.budget)
    return [make_search(name, budget=budget) for name in options.searches]


def watch_framework(session: BuildSession, options: Options, oracle: Oracle,
                    ranges=None) -> Optional[FrameworkWatch]:
    """The model's framework beside ``session`` (None with ``--no-framework``);
    ``oracle``: TVM's float64 build (the lowering stage); ``ranges``: the inputs'."""
    if not options.framework:
        return None
    framework = open_framework(session.model.framework_source, session.model.input_names())
    watch = FrameworkWatch(framework, session, oracle, ranges)
    session.progress(f"framework: {framework.name}" if watch.active else f"no framework: {watch.failure}")
    return watch


def search_range(session: BuildSession, search, ranges, seed: int, stop_at: Optional[float] = None,
                 aim: Aim = Aim(), watch: Optional[FrameworkWatch] = None):
    """Run ``search`` over the range against the session; a SearchResult
    (ended early once a score passes ``stop_at``); ``aim``: the range check's;
    ``watch``: the framework, whose difference from TVM's reference the search
    looks for too."""
    progress = session.progress
    budget = getattr(search, "budget", None)
    progress(f"searching the range for inputs where the builds differ ({search.name}"
             + (f", budget {budget})" if budget is not None else ")"))
    framework = watch is not None and watch.active
    observe = watch.observe if watch is not None and framework else session.runs.observe
    # one heartbeat for the whole search: runs of a second or two each, 25 between two lines, are no silence
    with waiting(progress, f"the {search.name} search"):
        result = search.run(_reporting(observe, session, framework), session.model.inputs, ranges, seed,
                            stop_at=stop_at, aim=aim)
    best = "none valid" if result.best_score is None else f"best score {result.best_score:.3g}"
    why = {"time": ", stopped by the time limit", "target score": ", stopped early: a certain violation",
           ONE_POINT: ": the range holds one input"}.get(
        getattr(result, "stopped_by", ""), "")
    progress(Detail(f"  {search.name}: {result.evaluations} inputs evaluated, {best}{why}"))
    return result


def range_check(session: BuildSession, ranges) -> tuple:
    """(RangeCheck or None, RangeCheckOutcome): ``numguard check`` on the session's
    model and pipeline, its warnings about the pipeline told as progress. The
    check is advice: one it cannot make (a pipeline that fails before
    legalizing) leaves the search unaimed, and says why."""
    from ..judge.rangecheck.check import warning_line

    progress = session.progress
    try:
        checker = RangeCheck(session.model, session.config)
        result = checker.run(ranges)
    except Exception as err:  # TVM raises many types; the search goes on unaimed
        progress(f"range check skipped: {summarize_error(err)}")
        return None, RangeCheckOutcome(error=summarize_error(err))
    for w in result.concerning("pipeline"):
        progress(f"check: {warning_line(w.to_json())}")
    return checker, RangeCheckOutcome(result)


def search_and_judge(session: BuildSession, options: Options, ranges, searches: Sequence, command: str, *,
                     budget: Optional[str] = None, bisect: bool = True, every_search: bool = False) -> Finding:
    """On a prepared session: search with each of ``searches`` (input searches, or
    one FixedInputs), judge the worst input found (oracle included) and, with
    ``bisect``, bisect a violation; the Finding says ``command`` made it.

    The session's ``on_witness`` sees a violation's witness as soon as the
    search has seen it (a score past 1, on either question), before it is
    judged (the oracle, the framework's import judgement and its localization)
    and bisected, so a caller keeps it whatever happens next. ``budget``: the
    budget to record (default: the options'). A check that bisects stops
    searching at a certain violation (CERTAIN_SCORE). ``every_search``: the
    Finding lists each search's result even when there was one."""
    stop_at = CERTAIN_SCORE if bisect else None
    oracle = Oracle(session)
    watch = watch_framework(session, options, oracle, ranges)
    searching = not all(isinstance(s, FixedInputs) for s in searches)
    checker, outcome = range_check(session, ranges) if searching else (None, None)
    aim = Aim.of_check(outcome.result) if outcome is not None and outcome.result is not None else Aim()
    results = []
    for search in searches:
        results.append(search_range(session, search, ranges, options.seed, stop_at, aim, watch))
        if stop_at is not None and results[-1].best_score > stop_at or results[-1].stopped_by == ONE_POINT:
            break  # a certain violation; or the one input the ranges hold, which another search would repeat
    found = max(results, key=lambda r: r.best_score)
    kept = keep_seen_violation(session, found)
    early: list = []  # the Bisection started before the oracle, or its result where it ran in full
    outcome_searched = SearchOutcome(found, options.budget if budget is None else budget,
                                     searches=results if len(results) > 1 or every_search else [])
    try:
        finding = judge(session, options, ranges, outcome_searched, command, watch=watch, oracle=oracle,
                        before_oracle=functools.partial(bisect_beside_oracle, session, options, oracle, early, kept)
                        if bisect else None)
    finally:
        oracle.close()
    if checker is not None and finding.witness is not None:
        # whatever the verdict: a fix's verification asks it of a clean witness
        reached = tuple(w.warning.position for w in checker.reached(outcome.result, finding.witness))
        outcome = dataclasses.replace(outcome, reached=reached)
    finding = dataclasses.replace(finding, range_check=outcome)
    bisected = early[0] if early and isinstance(early[0], BisectResult) else None
    if finding.at_fault and session.context.on_witness is not None and bisected is None and not kept:
        session.context.on_witness(finding.searched_witness)
    if finding.violation and bisect:
        return bisect_finding(finding, session, options, early[0] if early else None)
    if bisected is not None:
        session.progress("the float64 oracle finds the difference benign: the bisection's culprit is not reported"
                         if finding.verdict == "benign"
                         else "no pass is judged: the bisection's culprit is not reported")
    elif early:
        early[0].cancel()  # benign: no bisection follows
    return finding


def keep_seen_violation(session: BuildSession, found) -> bool:
    """Hand the search's worst input to ``on_witness`` where the search saw a
    violation there (a score past 1: the builds, or TVM and the framework,
    differ), before anything judges it: judging may take minutes (a float16
    model's oracle, the import's localization) and a stop then must not lose it.
    Whether it was handed over."""
    if session.context.on_witness is None or found.best_inputs is None or not (found.best_score or 0.0) > 1.0:
        return False
    session.progress(f"the search found a violation (score {found.best_score:.3g}): its witness is kept "
                     "before it is judged")
    session.context.on_witness(found.best_inputs)
    return True


def bisect_beside_oracle(session: BuildSession, options: Options, oracle: Oracle, early: list, kept: bool,
                         witness) -> None:
    """Before the oracle judges a witness the builds differ on: the bisection
    in full (its BisectResult into ``early``) while the oracle is built and run
    in a worker, so the culprit comes first; where no worker can be forked, only
    the bisection's first round, built by the workers while the oracle is built
    here (a Bisection into ``early``). An unrecorded session is recorded (and
    its workers forked anew) only once the oracle says the difference is real;
    ``kept``: the search's witness was kept already."""
    if not session.recorded:
        return
    if options.oracle and oracle.start(witness, session.context.workers):
        if session.context.on_witness is not None and not kept:  # kept whatever happens to the bisection
            session.context.on_witness(witness)
        score = session.runs.compare(session.built, witness).score
        session.progress(f"the builds differ (score {score:.3g}); the float64 oracle judges it in a worker "
                         f"meanwhile; bisecting {len(session.optional)} optional events: "
                         + bisection_plan(session, options))
        try:
            early.append(Bisection(session, witness, options.strategy,
                                   stop=oracle_finds_benign(session, options, oracle, witness)).run())
        except BisectionStopped:
            session.progress("the float64 oracle finds the difference benign: the bisection stops")
    else:
        early.append(Bisection(session, witness, options.strategy).start())


def oracle_finds_benign(session: BuildSession, options: Options, oracle: Oracle, witness) -> Callable[[], bool]:
    """Asked before each probe of a bisection beside the oracle's worker:
    whether the oracle, once it has answered, finds the difference benign
    (judged once, when the answer is there; never waited for)."""
    said: list = []

    def benign() -> bool:
        if not said and oracle.answered():
            judgement = oracles.judge(session, witness, session.tol, options.oracle_k, oracle)
            said.append(judgement.available and not judgement.real_violation)
        return bool(said) and said[0]

    return benign


def judge(session: BuildSession, options: Options, ranges, searched: SearchOutcome, command: str, *,
          before_oracle: Optional[Callable[[Mapping], None]] = None, watch: Optional[FrameworkWatch] = None,
          oracle: Optional[Oracle] = None) -> Finding:
    """The Finding (made by ``command``) of a search (``searched``: its result,
    budget and input searches): its witness judged by each stage of
    ``judge/stages.STAGES`` (determinism, pass with the oracle, import with the
    framework ``watch``, target, lowering), no bisection yet. ``before_oracle(witness)``
    hears of a violation before the oracle judges it (which takes a build);
    ``oracle``: TVM's float64 build, when the search made it already."""
    progress = session.progress
    with waiting(progress, "naming the operators that left their domain on the invalid inputs (a build of the "
                 "model with each one's argument kept)"):
        invalid = invalid_causes(session)
    found = searched.result
    witness = require_valid_witness(found, ranges, invalid, session.runs.invalid_samples)
    comparison = session.runs.compare(session.built, witness)
    said = judge_stages(Witnessed(session, options, witness, comparison, watch, oracle or Oracle(session),
                                  before_oracle))  # each stage, in the table's order
    passed = said[Stage.PASS]
    search = dataclasses.replace(searched, invalid_causes=invalid, outputs_constant=session.runs.outputs_constant)
    return Finding(command=command, model=ModelInfo.of(session.model), config=session.config, options=options,
                   ranges=ranges, events=list(session.events), optional=frozenset(e.id for e in session.optional),
                   search=search, witness=witness, comparison=comparison, oracle=passed.judgement,
                   verdict=passed.verdict, imports=said[Stage.IMPORT], cpu_reference=said[Stage.TARGET],
                   nondeterminism=said[Stage.DETERMINISM], pass_note=passed.note)


def bisect_finding(finding: Finding, session: BuildSession, options: Options,
                   started=None) -> Finding:
    """``finding`` with the bisection of the pipeline on its witness (and its
    events, recorded anew when the first build kept no hashes); ``started``:
    that bisection, its first round under way, or its BisectResult already."""
    if isinstance(started, BisectResult):
        bisection = started
    else:
        session.ensure_recorded()
        session.progress(f"violation (score {finding.comparison.score:.3g}); "
                         f"bisecting {len(session.optional)} optional events: " + bisection_plan(session, options))
        bisection = bisect_session(session, finding.searched_witness, options.strategy, started=started)
    return dataclasses.replace(finding, events=list(session.events), bisection=bisection,
                               optional=frozenset(e.id for e in session.optional))


def finish(finding: Finding, session: BuildSession, started: float) -> Finding:
    """``finding`` with the session's build count, the time taken and how the builds were made."""
    counts = BuildCount(session.memo.count, round(session.memo.seconds, 3),
                        round(time.perf_counter() - started, 3), round(session.built.seconds, 3))
    return dataclasses.replace(finding, counts=counts, workers=session.workers_info())


def _reporting(evaluate, session: BuildSession, framework: bool, every: int = 25):
    """``evaluate`` that reports the count and the best score every ``every``
    calls, and says what each call waits for while it lasts (``framework``:
    each also runs the model's framework)."""
    progress = session.progress
    state: dict[str, Any] = {"count": 0, "best": None, "recent": collections.deque(maxlen=RECENT_EVALUATIONS)}

    def wrapped(inputs):
        started = time.perf_counter()
        with waiting(progress, *evaluation_wait(state["count"] + 1, state["recent"], framework)):
            outcome = evaluate(inputs)
        state["recent"].append(time.perf_counter() - started)
        score = score_of(outcome)
        state["count"] += 1
        if score is not None and (state["best"] is None or score > state["best"]):
            state["best"] = score
        if state["count"] % every == 0:
            best = "none valid yet" if state["best"] is None else f"best score {state['best']:.3g}"
            progress(Detail(f"  {state['count']} inputs evaluated, {best}"))
        return outcome

    return wrapped


# evaluations whose longest sets the next one's estimate: one that TVM and the framework differ on also runs
# the float64 truth, several times, and takes longer than one they agree on
RECENT_EVALUATIONS = 5


def evaluation_wait(number: int, recent: Sequence[float] = (), framework: bool = True) -> tuple:
    """(what the search's evaluation ``number`` waits for, its estimate in
    seconds or None: the longest of the ``recent`` evaluations' seconds). The
    first makes the optimized build's VM, where TVM generates the kernels'
    machine code (on a CPU, minutes for float16 ones); each runs both builds
    and, with ``framework``, the model's framework (a 1024-channel
    upsampling: 1 to 2 s, where the optimized build's run alone took 0.2)."""
    if number == 1:
        return ("input 1: TVM making the optimized build's VM (its kernels' machine code) and running both builds",
                None)
    runs = "both builds' runs and the framework's" if framework else "both builds' runs"
    return f"input {number}: {runs}", max(recent) if recent else None


def invalid_causes(session: BuildSession) -> list:
    """Which vulnerable operators left their domain on the invalid candidates (rangecheck.InvalidCall)."""
    causes: list = []
    for sample in session.runs.invalid_samples:
        try:
            calls = check_domains(session.model.mod, sample, target=local_target(session.config.target))
        except Exception:  # explaining is best effort; the count is reported anyway
            continue
        for call in calls:
            if not any(c.op == call.op and c.binding == call.binding for c in causes):
                causes.append(call)
    return causes


def require_valid_witness(found, ranges, invalid, samples=()) -> dict:
    """The search's witness; raise InvalidReferenceError where no input the search tried was valid:
    the reference build gives NaN/Inf on every one; ``samples``: some of those inputs (given inputs that
    hold NaN/Inf themselves are said to, not blamed on the model's domain)."""
    if found.best_inputs is not None:
        return found.best_inputs
    span = ", ".join(f"{n}=[{r.low}, {r.high}]" for n, r in ranges.items())
    why = ""
    if invalid:
        why = " (" + "; ".join(f"{c.op} at {c.binding}: needs {c.domain}" for c in invalid[:3]) + ")"
    held = non_finite_inputs(samples[0]) if found.search == "given" and samples else []
    if held:
        raise InvalidReferenceError(f"the given inputs hold NaN/Inf themselves ({'; '.join(held)}), and the reference "
                                    "build gives NaN/Inf on them: give finite inputs (a witness numguard saves is)")
    if found.search == "given":  # nothing was searched: the caller's own inputs are what is wrong
        raise InvalidReferenceError(f"the reference build gives NaN/Inf on the given inputs{why}: they are outside "
                                    "the model's domain, not a compiler defect")
    raise InvalidReferenceError(f"the reference build gives NaN/Inf on every one of {found.evaluations} searched "
                                f"inputs in {span}{why}: the input range is wrong, not the compiler")


def non_finite_inputs(inputs: Mapping[str, np.ndarray]) -> list:
    """``"x: 3 NaN, 1 Inf of 64 elements"`` for each float input of ``inputs`` that holds NaN or Inf."""
    said = []
    for name, value in inputs.items():
        value = np.asarray(value)
        if value.dtype.kind != "f":
            continue
        nan, inf = int(np.isnan(value).sum()), int(np.isinf(value).sum())
        if nan or inf:
            counts = ", ".join(f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "Inf")) if n)
            said.append(f"{name}: {counts} of {value.size} elements")
    return said


def coerce_given_inputs(model: Model, inputs: Mapping[str, np.ndarray]) -> dict:
    """``inputs`` (e.g. a saved witness) as the model's inputs, each coerced to its spec."""
    out = {}
    for spec in model.inputs:
        if spec.name not in inputs:
            raise RangeError(f"the given inputs lack '{spec.name}' (they have {', '.join(sorted(inputs))})")
        try:
            out[spec.name] = spec.coerce(inputs[spec.name])
        except ValueError as err:
            raise RangeError(f"given {err}") from None
    return out
