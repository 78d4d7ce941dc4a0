"""``with numguard.guard(low, high):``: judge every compile in the block (README: "The guard").

At each caught ``tvm.compile`` / ``tvm.relax.build`` of a Relax module the guard
replays the call from the module the block started with (the passes the
user applied in the block first), searches the declared range against the reference build,
bisects a violation and acts: ``disable`` returns a build with the culprit (or
the minimal set) skipped, verified on the witness and on fresh inputs;
``report`` returns the user's build; ``raise`` raises NumericalError. Both of
the first two warn with NumericalRiskWarning. Verdicts can be cached.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
import warnings
from typing import Callable, Literal, Optional, cast

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from ... import __version__
from ...engine import engine
from ...base.numbers import plain
from ...base.errors import BuildError, ModelError, NumericalError, UsageError, from_keywords
from ...ir.instrument import DEPENDS_ON, REQUIRED_PASSES
from ...fixes.narrowing import narrow_all, switched_off
from ...ir.frontends import provenance_of
from ...ir.model import from_irmodule
from ...ir.instrument.catalog import EVERY_RULE_EVENT
from ...ir.narrow import FixPlan
from ...ir.relax_ir import pristine
from ...ir.pipeline import pass_context
from ...base.progress import silent
from ...report import Report
from ...report.files import write_atomic
from ...report.text import counted
from ...locate import Budget, make_search, parse_budget, resolve_ranges
from ...locate.searches import random_candidate
from ...build.compile import compile_model
from ...base.compare import is_finite_outputs
from ...build.session import RunContext
from ...build.session import BuildSession
from ...ir.targets import CUDA_STARTED, cuda_started_here, is_gpu
from ...build.workers import WORKERS, Workers
from .cache import VerdictCache, cache_key
from .call import CallConfig, CaughtCall, ReplayStart, describe
from .chain import judge_chain
from .clock import Deadline, LateProgress, TimeLimitReached
from .intercept import Busy, Interceptor, PassCallLog, user_stacklevel
from .guard_report import GuardInfo, GuardReport, import_message
from .settings import KEYWORDS, GuardSettings

FRESH_INPUTS = 8  # inputs besides the witness on which a disabled build is verified
# the auto budget: the search gets what is left of this many optimized-compile times (its last
# evaluation and the judging run past it: about 2.2 in all on SqueezeNet, 2 cores)
AUTO_FACTOR = 2.0
AUTO_AT_LEAST = 2  # ... but searches at least this many inputs (the range's two ends)
AUTO_MIN_SECONDS = 1.0  # ... and may always search this long (small models compile in a blink)


class NumericalRiskWarning(UserWarning):
    """A guarded compile changes the model's numbers beyond the tolerance."""


class GuardWarning(UserWarning):
    """A compile in a guard block could not be judged."""


def guard(low: Optional[float] = None, high: Optional[float] = None, **settings) -> "Guard":
    """A context manager that judges every Relax compile inside it; see the module docstring.

    Args:
        low, high: the input range of every input (or give ``ranges``).
        **settings: the keywords of ``GuardSettings`` (``ranges``, ``rtol``,
            ``atol``, ``action``, ``budget``, ``seed``, ``report_path``,
            ``cache``, ``oracle``, ``progress``, ``jobs``, ``time_limit``, ``model``, ``clock``;
            ``fix`` fills its ``remedy``),
            validated here: a bad one fails before the first compile.

    Returns:
        The Guard; after the block, ``.report`` holds one Report per compile.
    """
    return Guard(low, high, from_keywords(GuardSettings, settings, "guard()", KEYWORDS))


class Guard:
    def __init__(self, low: Optional[float] = None, high: Optional[float] = None,
                 settings: GuardSettings = GuardSettings()):
        self.settings = settings
        # Options validates the ranges, tolerances and budget: a bad one fails here, not at the first compile
        self.options = settings.options(low, high)
        self.action = settings.action
        self.workers = settings.workers
        self.report_path = settings.report_path
        self.cache = VerdictCache(settings.cache) if settings.cache else None
        self.time_limit = settings.time_limit
        # progress is "auto", None or a callable (the only string it takes is "auto")
        self.shown: Callable[[str], None] = (LateProgress(clock=settings.clock) if settings.progress == "auto"
                                             else cast(Callable[[str], None], settings.progress or silent))
        # the judging under way's: the shown progress behind its deadline
        self.progress: Callable[[str], None] = silent
        self.report = GuardReport()
        self.log = PassCallLog()
        self._interceptor: Optional[Interceptor] = None

    def __enter__(self) -> "Guard":
        if self._interceptor is not None:
            raise UsageError("this guard is already active; make a new one to nest")
        self._interceptor = Interceptor(self._on_compile, self.log)
        self._interceptor.install()
        return self

    def __exit__(self, *exc) -> Literal[False]:
        assert self._interceptor is not None, "the guard exits a block it did not enter"
        self._interceptor.restore()
        self._interceptor = None
        return False

    # -- one caught call -----------------------------------------------
    def _on_compile(self, kind: str, original: Callable, args: tuple, kwargs: dict):
        try:
            bound = inspect.signature(original).bind(*args, **kwargs)
        except TypeError:  # a wrong call: let TVM say what is wrong with it
            return original(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        mod = params.pop("mod")
        if not _has_relax_main(mod):
            return original(*args, **kwargs)
        call = CaughtCall(kind, original, args, kwargs, mod, params.pop("target", None),
                          params.pop("relax_pipeline", "default"), params.pop("tir_pipeline", "default"), params)
        with Busy():
            return self._judge_in_time(call)

    def _judge_in_time(self, call: CaughtCall):
        if isinstance(self.shown, LateProgress):
            self.shown.restart()
        self.progress = Deadline(self.time_limit, self.shown, self.settings.clock)
        try:
            return self._judge_call(call)
        except TimeLimitReached as err:
            warnings.warn(f"numguard: compile not fully judged: {err}; returned the build as written",
                          GuardWarning, stacklevel=user_stacklevel())
            return err.executable if err.executable is not None else call.as_written()

    def _start(self, call: CaughtCall) -> ReplayStart:
        """Where judging ``call`` starts: the module the block started
        from and the passes applied since, when they replay to the call's module."""
        chain = self.log.chain_to(call.mod)
        prelude, calls = tuple(c.pass_ for c in chain), tuple(c.to_json() for c in chain)
        first = chain[0].input if chain else call.mod
        config = call.config(prelude)
        if not prelude or _replays(config, first, call.mod):
            return ReplayStart(first, config, prelude, calls=calls)
        note = ("the passes applied before the compile call (" + ", ".join(describe(p) for p in prelude)
                + ") do not replay to the same module: they were judged by the chain of modules they made, "
                "and the compile call on the module as given")
        return ReplayStart(call.mod, dataclasses.replace(config, prelude=()), prelude, note,
                           [first] + [c.output for c in chain], calls)

    def _judge_call(self, call: CaughtCall):
        started = time.perf_counter()
        try:
            start = self._start(call)
        except UsageError:  # a target TVM cannot build for: its own error says it best
            return call.as_written()
        module, config = start.module, start.config
        try:
            given = self.settings.model
            model = from_irmodule(module, f"<{call.kind}>", f"{tvm_ffi.structural_hash(module) & (2**64 - 1):016x}",
                                  provenance=provenance_of(given, module) if given is not None else None,
                                  source_model=given)
        except ModelError as err:
            warnings.warn(f"numguard: compile not judged: {err}", GuardWarning, stacklevel=user_stacklevel())
            return call.as_written()
        ranges = resolve_ranges(model.inputs, self.options.low, self.options.high, self.options.ranges)
        gpu = is_gpu(config.target_obj)
        placed = self.workers.for_target(gpu)  # where a build of this target may run
        if not gpu and self.time_limit is not None and placed.mode == WORKERS:
            # a run is stopped in its worker at the limit: a first run makes the VM, where TVM may take
            # minutes (float16 kernels on a CPU) that nothing in this process could cut short
            placed = dataclasses.replace(placed, runs_in_workers=True)
        workers, builds = self._workers(config, placed, gpu)
        if gpu and cuda_started_here():
            self.progress(CUDA_STARTED)
        # a CallConfig builds as a CompileConfig does (both are an ir.pipeline.BuildConfig)
        session = BuildSession(model, config, self.options.tolerance,  # type: ignore[arg-type]
                                RunContext(self.progress, workers=workers))
        hint = self._cache_key(model, config, ranges, None)
        with session:  # the workers stop however judging ends
            try:
                if self.cache is None or not self.cache.expects(hint):  # a likely hit needs no reference
                    session.hold_reference(placed)
                session.prepare_optimized(instruments=list(tvm.transform.PassContext.current().instruments),
                                          record=False, fingerprint=self.cache is not None)
                self._deadline.compiled(session.built.seconds)
                key = self._cache_key(model, config, ranges, session.built.fingerprint)
                cached = self._from_cache(self.cache.get(key), session, start) if self.cache else None
                if cached is not None:
                    return cached
                session.prepare_reference()
                report, build, skip = self._judge(session, call.kind, start, ranges, started, builds)
            except BuildError as err:  # a build or run made to judge it failed (the reference's included)
                result = call.as_written()  # the user's own error, unchanged, if it fails there too
                warnings.warn(f"numguard: compile not judged: {err}", GuardWarning, stacklevel=user_stacklevel())
                return result
            except TimeLimitReached as late:  # the build as written, if made, is what the user asked for
                if session.optimized is not None and session.optimized.ok:
                    late.executable = session.optimized.executable
                raise
        self._record(report, key, hint, skip, report.finding.guard.fix)
        # linked as relax.build links it: a build made through the session's kernel cache may not export
        return self._act(report, report.finding.guard, build.standalone())

    def _judge(self, session: BuildSession, kind: str, start: ReplayStart, ranges, started: float,
               builds: str) -> tuple:
        """(report, build to return, events it skips): the prepared session
        searched, judged, bisected and, for ``disable``, the culprit switched off."""
        strategy = self._strategy(session, started)
        finding = engine.run_on(session, self.options, ranges,
                                engine.Steps("guard", searches=(strategy,), budget=str(strategy.budget)), started)
        chain = None
        if start.chain is not None:
            self.progress("judging the passes that do not replay by the modules they made")
            chain = judge_chain(session, start.chain, start.prelude, ranges, self.options.seed)
        info = GuardInfo(kind, self.action, strategy.budget, start.note, [describe(p) for p in start.prelude], builds,
                         chain=chain, prelude_calls=list(start.calls))
        config = start.config
        finding = dataclasses.replace(finding, guard=info, replay=f"rerun the guarded {kind} call "
                                      f"(pipeline {config.pipeline}; tir {config.tir_pipeline})")
        build, skip = session.built, frozenset[str]()
        if finding.violation and self.action == "disable":
            build, skip, verified, returned, plan, not_narrowed = self._disable(session, finding, ranges)
            # the skip set's EVERY_RULE_EVENT goes with the rule events it names: they say it
            info = dataclasses.replace(info, verified_inputs=verified, returned=returned, not_narrowed=not_narrowed,
                                       disabled=sorted(skip - {EVERY_RULE_EVENT}), fix=plan or FixPlan())
            finding = dataclasses.replace(finding, guard=info)
        # counted again: the remedy's builds too
        return Report.from_finding(engine.finish(finding, session, started)), build, skip

    def _workers(self, config: CallConfig, placed: Workers, gpu: bool) -> tuple:
        """(Workers, what the report says about them). A pipeline given by name is
        re-created in forked workers, where a crashing configuration is only
        untestable; pass objects (closures, classes of ``__main__``, a prelude)
        and a user's PassContext settings stay in this process, built on a
        pristine copy of the module each time. ``placed``: these workers for
        the call's target (``Workers.for_target``; ``gpu``: a GPU target's),
        every run in a worker where it says so."""
        if self.workers.mode != WORKERS:
            return Workers(jobs=0), "in-process (jobs=0, or no fork on this platform)"
        if placed.mode != WORKERS:
            return placed, ("in-process: CUDA was initialized in this process before the compile "
                            "(no worker could use it)")
        runs = f"; every run in a worker ({'GPU target' if gpu else 'stopped there at the time limit'})" \
            if placed.runs_in_workers else ""
        if not config.recreatable:
            return dataclasses.replace(placed, jobs=0), ("in-process: the pipeline holds pass objects of this "
                                                         "process (the reference, which skips every optional "
                                                         f"pass, in a forked worker){runs}")
        return placed, f"workers ({self.workers.count}; the reference in one more){runs}"

    @property
    def _deadline(self) -> Deadline:
        """The judging under way's progress: a Deadline while a compile is judged."""
        assert isinstance(self.progress, Deadline), "no compile is being judged"
        return self.progress

    def _strategy(self, session: BuildSession, started: float):
        """The search: the user's budget, or the auto budget, scaled to this
        model's cost: what is left of AUTO_FACTOR times the compile time of the
        pipeline as written, after the builds (but at least AUTO_MIN_SECONDS
        and AUTO_AT_LEAST inputs, at most 200 inputs)."""
        if self.options.budget != "auto":
            return make_search(self.options.search, budget=parse_budget(self.options.budget))
        left = AUTO_FACTOR * session.built.seconds - (time.perf_counter() - started)
        limit_left = self._deadline.left()
        if limit_left is not None:  # the search leaves half of the time limit to judge and bisect
            left = min(left, limit_left / 2)
        budget = Budget(evaluations=200, seconds=max(left, AUTO_MIN_SECONDS), at_least=AUTO_AT_LEAST, done_by=True)
        return make_search(self.options.search, budget=budget)

    def _disable(self, session: BuildSession, finding, ranges) -> tuple:
        """(build, skip set, inputs verified on, what it is, narrow fix or None,
        why the remedy ``narrow`` kept no narrow fix or None):
        the build with what the finding blames kept out (remedy ``narrow``: kept
        from acting where it breaks the model, else switched off), if it
        matches the reference on the witness and on fresh inputs; else the
        reference build."""
        blame = finding.blame()
        rng = np.random.default_rng(self.options.seed + 1)
        trials = [finding.witness] + [random_candidate(session.model.inputs, ranges, rng)
                                      for _ in range(FRESH_INPUTS)]
        trials = [x for x in trials if is_finite_outputs(session.runs.reference_outputs(x))]
        why = None
        if blame.disable and self.settings.remedy == "narrow":
            build, plan, why = narrow_all(session, blame.disable, trials, self.progress)
            if build is not None:
                return build, frozenset(), len(trials), "narrow fix", plan, None
        if blame.disable:
            build, skip = switched_off(session, blame.disable, trials, self.progress)
            if build is not None:
                return build, skip, len(trials), "culprit disabled", None, why
        return session.reference, session.reference_skip, len(trials), "reference", None, why

    # -- outcome -------------------------------------------------------
    def _record(self, report: Report, key: str, hint: str, skip: frozenset, fix: FixPlan) -> None:
        index = len(self.report)
        if self.report_path and report.witness is not None:
            report.save_witness(f"{os.path.splitext(self.report_path)[0]}.{index}.witness.npz")
        self.report.add(report, report.finding.guard)
        if self.cache is not None:  # the document as made (tests/test_guard_cost.py validates it, not each compile)
            self.cache.put(key, {"verdict": report.verdict, "skip": sorted(skip), "fix": fix.to_json(),
                                 "report": report.data}, hint)
        if self.report_path:
            write_atomic(self.report_path, self.report.to_text().encode())

    def _act(self, report: Report, info: GuardInfo, executable):
        """Warn or raise as the action says, on ``report`` and its guard section ``info``."""
        chain = info.chain
        if chain is not None and chain.verdict == "violation":
            message = (f"numguard: {chain.who}, applied before the compile call, changes the results beyond "
                       f"tolerance (score {chain.score:.3g}); it does not replay, so it cannot be disabled")
            if self.action == "raise":
                raise NumericalError(message, report)
            warnings.warn(message, NumericalRiskWarning, stacklevel=user_stacklevel())
        if "import" in report.at_fault:
            message = import_message(report.imports)
            if self.action == "raise":
                raise NumericalError(message, report)
            warnings.warn(message, NumericalRiskWarning, stacklevel=user_stacklevel())
        if report.verdict != "violation":  # no pass to blame
            return executable
        message = f"numguard: {report.blame().describe()} changes the results beyond tolerance " \
                  f"(score {report.worst_score:.3g} on the witness)"
        if self.action == "raise":
            raise NumericalError(message, report)
        if self.action == "disable" and info.returned == "narrow fix":
            places = sum(len(c.places) for c in info.fix.culprits)
            message += (f"; kept {', '.join(c.event for c in info.fix.culprits)} "
                        f"from acting at {counted(places, 'place')} "
                        f"(the rest of its rewrites kept), verified on {info.verified_inputs} inputs")
        elif self.action == "disable":
            what = ", ".join(info.disabled) if info.returned == "culprit disabled" else \
                "every optional pass (disabling what the bisection blames did not verify)"
            message += f"; disabled {what}, verified on {info.verified_inputs} inputs"
            if info.not_narrowed:  # the remedy "narrow" asked for less: say why it got the whole pass off
                message += f" (no narrow fix: {info.not_narrowed})"
        else:
            message += "; returned the build as written (action='report')"
        warnings.warn(message, NumericalRiskWarning, stacklevel=user_stacklevel())
        return executable

    def _cache_key(self, model, config, ranges, compiled: Optional[str]) -> str:
        """What a verdict depends on: the module the block started from, what the
        pipelines made of it (every pass's effect, Python or C++: a pass edited
        under the same name changes it; None: the cache's hint, known before
        the build), the call's settings, TVM, numguard and its catalog of
        required passes, the range and tolerances, the search."""
        return cache_key({"module": model.sha256, "compiled": compiled, "call": config.identity(),
                          "tvm": tvm.__version__, "numguard": __version__,
                          "catalog": {"required": sorted(REQUIRED_PASSES), "depends_on": DEPENDS_ON},
                          "ranges": {n: r.to_json() for n, r in ranges.items()}, "rtol": self.options.rtol,
                          "atol": self.options.atol, "oracle": self.options.oracle,
                          "framework": self.options.framework,
                          "budget": self.options.budget, "seed": self.options.seed, "remedy": self.settings.remedy})

    def _from_cache(self, entry, session: BuildSession, start: ReplayStart):
        """The cached verdict for a build the session already made (same
        fingerprint), acted on, with where this run's code applied its passes
        (``start``); None for no entry, or an entry whose disabled set no
        longer builds (stale: the compile is judged anew)."""
        if entry is None:
            return None
        build = session.built
        if entry["verdict"] == "violation" and self.action == "disable":
            if entry.get("fix"):  # a narrow fix, kept like a verdict
                build = compile_model(session.model.mod, dataclasses.replace(
                    session.config, fix=FixPlan.from_json(entry["fix"])))
            else:
                build = session.build(frozenset(entry["skip"]))
            if not build.ok or build.fix_problems:
                return None
        info = dataclasses.replace(GuardInfo.from_json(entry["report"]["guard"]), cached=True,
                                   prelude_calls=list(start.calls))
        report = Report.read_back({**entry["report"], "guard": plain(info.to_json())})
        self.report.add(report, info)
        if self.report_path:
            write_atomic(self.report_path, self.report.to_text().encode())
        return self._act(report, info, build.standalone())


def _has_relax_main(mod) -> bool:
    return isinstance(mod, tvm.IRModule) and any(
        gv.name_hint == "main" and isinstance(f, relax.Function) for gv, f in mod.functions.items())


def _replays(config: CallConfig, first: tvm.IRModule, mod: tvm.IRModule) -> bool:
    """Do the prelude passes, run again on ``first``, give ``mod``?"""
    try:
        with pass_context(config):
            with config.target_obj:
                out = pristine(first)  # a prelude pass may edit its input in place
                for applied in config.prelude:
                    out = applied(out)
        return bool(tvm_ffi.structural_equal(out, mod))
    except Exception:  # a pass that cannot run twice is not replayable
        return False
