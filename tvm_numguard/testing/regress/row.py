"""One pass judged on one model: ``judge_model`` and the RegressRow it returns.

The pass under test is the bracketed part of the configuration's pipeline
(pipeline.py), so the session's reference is the same pipeline without that
pass's events: every difference the search finds is the pass's own, and a
bisection among its events (a ``Sequential`` of several passes) names the one
that makes it. A model that does not import, build or give a finite reference
is one row saying why; nothing here raises for a model's sake.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import time
from typing import Optional

from ...engine import engine
from ...base.errors import (BuildError, InvalidReferenceError, ModelError, NumguardError, UnsupportedModel,
                             summarize_error)
from ...ir.instrument.catalog import under_test_span
from ...locate.options import Options
from ...ir.pipeline import CompileConfig
from ...report.files import write_witness
from ...locate import resolve_ranges
from ...build.session import RunContext
from ...build.compile import optional_events, relax_phase_events
from ...build.session import BuildSession
from .corpus import CorpusModel

# clean: no input in range shows a violation; benign: differences the float64
# oracle says are not worse than the pipeline without the pass; violation: the
# pass's own error; untestable: the model cannot be judged (why is said);
# broken: the pipeline without the pass already gives NaN/Inf where float64
# does not; error: numguard itself failed on this model (a bug to report).
VERDICTS = ("clean", "benign", "violation", "untestable", "broken", "error")
NOT_CHANGED = "the pass did not change the model"


@dataclasses.dataclass
class RegressRow:
    """What judging one pass on one model found.

    ``changed``: an event of the pass changed the model (None: never built);
    ``score``: the worst violation score of the pass's own error on the witness
    (> 1 violates); ``max_ulp``: its largest error in units in the last place;
    ``baseline_err``/``pass_err``: the largest error against float64 of the
    pipeline without / with the pass on the witness (when the oracle ran);
    ``culprit``: the pass's event that makes the error (or the minimal set);
    ``witness``: the saved inputs; ``replay``: the command that reruns the row.
    """

    pass_spec: str
    model: str
    verdict: str = "error"
    reason: Optional[str] = None
    changed: Optional[bool] = None
    events: list = dataclasses.field(default_factory=list)
    score: Optional[float] = None
    max_ulp: Optional[float] = None
    baseline_err: Optional[float] = None
    pass_err: Optional[float] = None
    culprit: list = dataclasses.field(default_factory=list)
    witness: Optional[str] = None
    replay: Optional[str] = None
    evaluations: int = 0
    seconds: float = 0.0
    peak_private_bytes: int = 0  # the worker's peak private memory (0 in-process)

    @property
    def attributed(self) -> bool:
        """A violation the pass's own events make."""
        return self.verdict == "violation"

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["seconds"] = round(self.seconds, 3)
        return data


@dataclasses.dataclass(frozen=True)
class RowRequest:
    """What one row needs besides the model: the configuration (one bracketed
    part), the options (``model_ranges``: a model's own range wins over the
    options'), where witnesses go, and the command words that select the pass."""

    config: CompileConfig
    options: Options
    out_dir: str
    model_ranges: bool = True
    pass_words: tuple = ()


def pass_config(spec: str, level: str, pipeline: str, tir_pipeline: str, target: str = "llvm",
                passes=()) -> tuple:
    """(the CompileConfig with ``spec`` as the pass under test, the regress
    words that name it): a Relax pass runs first, before ``pipeline``; a TIR
    pass after ``tir_pipeline``, on lowered TIR. ``passes``: label -> Pass
    object, when ``spec`` is such a label."""
    if level == "tir":
        return (CompileConfig(pipeline=pipeline, tir_pipeline=f"{tir_pipeline},[{spec}]", target=target,
                              passes=passes), ("--tir-pass", spec))
    return (CompileConfig(pipeline=f"[{spec}],{pipeline}", tir_pipeline=tir_pipeline, target=target, passes=passes),
            ("--pass", spec))


def judge_model(request: RowRequest, entry: CorpusModel, workdir: str) -> RegressRow:
    """The row of ``request``'s pass on ``entry``; see the module docstring."""
    started = time.perf_counter()
    row = RegressRow(request.config.under_test or "?", entry.name)
    options = options_for(request, entry)
    row.replay = replay_line(request, entry, options)
    try:
        _judge_row(request, entry, options, workdir, row)
    except NumguardError as err:  # a range or a model the check cannot use: this row says why
        row.verdict, row.reason = "untestable", str(err)
    except Exception as err:  # noqa: BLE001 - the run goes on; the row is a tool error to report
        row.verdict, row.reason = "error", f"numguard failed: {summarize_error(err)}"
    row.seconds = time.perf_counter() - started
    return row


def _judge_row(request: RowRequest, entry: CorpusModel, options: Options, workdir: str,
               row: RegressRow) -> None:
    started = time.perf_counter()
    try:
        model = entry.load(workdir)
    except (ModelError, UnsupportedModel) as err:  # bad input, or an operator TVM cannot import
        row.verdict, row.reason = "untestable", f"does not import: {err}"
        return
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    events = relax_phase_events(model.mod, request.config)
    # most rows of a corpus: the pass changed nothing, so the TIR phase would be the same without it
    if events is not None and not changed_model(events):
        row.events, row.changed = [e.id for e in optional_events(events)], False
        row.verdict, row.reason = "clean", NOT_CHANGED
        return
    with BuildSession(model, request.config, options.tolerance, RunContext().in_process()) as session:
        try:
            session.prepare_optimized(record=True)
        except BuildError as err:
            row.verdict, row.reason = "untestable", _build_failure(model, request.config, err)
            return
        row.events = [e.id for e in session.optional]
        row.changed = changed_model(session.events)
        if not row.changed:
            row.verdict, row.reason = "clean", NOT_CHANGED
            return
        try:
            session.prepare_reference()
        except BuildError as err:
            row.verdict, row.reason = "untestable", f"does not build without the pass: {err}"
            return
        try:
            finding = engine.run_on(session, options, ranges, engine.Steps("regress"), started)
        except InvalidReferenceError as err:
            row.verdict, row.reason = _not_finite(session, err)
            return
        _fill(row, finding, request.out_dir)


def _build_failure(model, config: CompileConfig, err: BuildError) -> str:
    """Why the build with the pass failed: the pass's doing, or TVM's on this model either way."""
    with BuildSession(model, config.without_under_test(), context=RunContext().in_process()) as plain:
        try:
            plain.prepare_optimized(record=False)
        except BuildError:
            return f"does not build, with or without the pass: {err}"
    return f"does not build with the pass (it does without): {err}"


def changed_model(events) -> bool:
    """Did an event of the pass under test change the module?"""
    span = under_test_span(events)
    return span is not None and any(e.changed for e in events[span[0]:span[1]] if not e.wrapper)


def _fill(row: RegressRow, finding, out_dir: str) -> None:
    comparison = finding.comparison
    row.verdict = finding.verdict
    row.evaluations = finding.search.result.evaluations
    row.score = comparison.score
    row.max_ulp = max((o.max_ulp for o in comparison.outputs), default=0.0)
    judgement = finding.oracle
    if judgement is not None and judgement.available:
        row.baseline_err = max((v.max_err_ref for v in judgement.outputs), default=0.0)
        row.pass_err = max((v.max_err_opt for v in judgement.outputs), default=0.0)
    if finding.bisection is not None:
        blame = finding.blame()
        row.culprit = list(blame.disable)
    if finding.verdict in ("violation", "benign") and finding.witness is not None:
        os.makedirs(out_dir, exist_ok=True)
        row.witness = os.path.join(out_dir, f"{_slug(row.pass_spec)}__{_slug(row.model)}.npz")
        write_witness(row.witness, finding.witness)


def _not_finite(session: BuildSession, err: InvalidReferenceError) -> tuple:
    """(verdict, reason) when the build without the pass is never finite: broken
    if float64 is finite on such an input (the pipeline is wrong already), else
    untestable (the model itself overflows in this range)."""
    from ...base.compare import is_finite_outputs
    from ...judge.float64 import Float64Build
    from ...ir.targets import local_target

    if session.runs.invalid_samples:
        try:
            oracle = Float64Build(session.model.mod, session.model.input_names(), local_target(session.config.target))
            if is_finite_outputs(oracle.run(session.runs.invalid_samples[0])):
                return "broken", ("the pipeline without the pass gives NaN/Inf where float64 is finite: "
                                  "it is broken already")
        except Exception:  # noqa: BLE001 - no float64 build: the plain reason stands
            pass
    return "untestable", str(err)


def options_for(request: RowRequest, entry: CorpusModel) -> Options:
    """The options with the model's own range, when it has one and the caller lets
    it win. The framework is not run: a pass under test is the question, and
    TVM's import is the same with and without it."""
    options = request.options.replace(framework=False)
    if not request.model_ranges or not entry.has_range:
        return options
    low = entry.low if entry.low is not None else options.low
    high = entry.high if entry.high is not None else options.high
    return options.replace(low=low, high=high, ranges={n: (lo, hi) for n, lo, hi in entry.ranges})


def replay_line(request: RowRequest, entry: CorpusModel, options: Options) -> str:
    """The ``numguard regress`` line that judges this pass on this model alone."""
    words = ["numguard", "regress", *request.pass_words, "--models", entry.selector,
             *options.to_args(bisects=False)]
    return " ".join(shlex.quote(w) for w in words)


def _slug(text: str) -> str:
    """A file-name-safe form of a pass spec or model name (the last 80 characters tell them apart)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[-80:] or "x"
