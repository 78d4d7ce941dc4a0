"""The Python API behind ``numguard bisect``, ``numguard search`` and ``numguard passes``.

Everything returns data (a Report, a list of events); nothing prints. Long
work reports progress through an optional ``progress(message)`` callback.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import time
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from .bisect import bisect_session
from .errors import InvalidReferenceError, RangeError
from .instrument import is_required
from .model import Model, load_model
from .ops import check_domains
from .pipeline import CompileConfig
from .report import Report, environment
from .search import FixedInputs, make_strategy, parse_budget, resolve_ranges, score_of
from .shadow import Tolerance, summarize_error
from .shadow.oracle import Oracle, classify, has_real_violation
from .shadow.session import ShadowSession

Progress = Optional[Callable[[str], None]]


@dataclasses.dataclass
class Options:
    """What the user asked for, as replayable values."""

    low: Optional[float] = None
    high: Optional[float] = None
    ranges: Mapping[str, tuple] = dataclasses.field(default_factory=dict)
    rtol: Optional[float] = None
    atol: Optional[float] = None
    search: str = "evolve"  # random, boundary or evolve
    budget: str = "200,60s"  # evaluations and/or seconds, as --budget takes it
    seed: int = 0
    strategy: str = "bisect"
    oracle: bool = True  # excuse differences that are not worse against float64
    oracle_k: float = 2.0

    def __post_init__(self):
        self.tolerance  # noqa: B018 - a bad rtol/atol fails here, before any build

    @property
    def tolerance(self) -> Tolerance:
        return Tolerance(self.rtol, self.atol)


def event_table(session: ShadowSession) -> list:
    optional_ids = {e.id for e in session.optional}
    rows = []
    for e in session.events:
        row = e.to_json()
        row["required"] = is_required(e.name)
        row["optional"] = e.id in optional_ids
        rows.append(row)
    return rows


def list_passes(model, config: CompileConfig = CompileConfig(), progress: Progress = None,
                on_build: Optional[Callable] = None) -> list:
    """The pass events of one compilation (``numguard passes``)."""
    model = _as_model(model)
    session = ShadowSession(model, config, progress=progress, on_build=on_build)
    session.prepare()
    return event_table(session)


def bisect(
    model,
    config: CompileConfig = CompileConfig(),
    options: Options = Options(),
    inputs: Optional[Mapping[str, np.ndarray]] = None,
    progress: Progress = None,
    on_build: Optional[Callable] = None,
    on_witness: Optional[Callable[[dict], None]] = None,
) -> Report:
    """Search the range for a violation and bisect the pipeline on its witness.

    ``on_witness(inputs)`` is called once a violation's witness is known, before
    the (long) bisection, so a caller can keep it even if the bisection never ends."""
    started = time.perf_counter()
    progress = progress or (lambda message: None)
    model = _as_model(model)
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    if inputs is not None:
        strategy = FixedInputs(_check_given_inputs(model, inputs))
    else:
        strategy = make_strategy(options.search, budget=parse_budget(options.budget))
    session = ShadowSession(model, config, options.tolerance, progress, on_build)
    session.prepare()
    data, witness = check_session(session, options, ranges, strategy, "bisect", progress, on_witness)
    data["search"]["budget"] = options.budget if inputs is None else None
    return finish_report(data, session, witness, started)


def check_session(session: ShadowSession, options: Options, ranges, strategy, command: str,
                  progress: Progress = None, on_witness: Optional[Callable[[dict], None]] = None) -> tuple:
    """On a prepared session: search with ``strategy``, judge the witness
    (oracle included) and bisect a violation. Returns (report data, witness).
    ``on_witness`` sees a violation's witness before the bisection starts."""
    progress = progress or (lambda message: None)
    budget = getattr(strategy, "budget", None)
    progress(f"searching the range for inputs where the builds differ ({strategy.name}"
             + (f", budget {budget})" if budget is not None else ")"))
    found = strategy.run(_reporting(session.observe, progress), session.model.inputs, ranges, options.seed,
                         stop_at=None)
    data, witness = _judge_witness(command, session, options, ranges, found, progress)
    data["bisection"] = None
    if data["verdict"] == "violation":
        if on_witness is not None:
            on_witness(witness)
        session.ensure_recorded()
        data["events"] = event_table(session)
        progress(f"violation (score {found.best_score:.3g}); bisecting {len(session.optional)} optional events")
        result = bisect_session(session, witness, options.strategy, progress)
        data["bisection"] = _bisection_json(result, session)
    return data, witness


def search(
    model,
    config: CompileConfig = CompileConfig(),
    options: Options = Options(),
    strategies: Sequence[str] = ("random", "boundary", "evolve"),
    progress: Progress = None,
    on_build: Optional[Callable] = None,
) -> Report:
    """Search the range with each strategy (same budget, same seed) for the
    inputs where the optimized build is worst; no bisection."""
    started = time.perf_counter()
    progress = progress or (lambda message: None)
    model = _as_model(model)
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    budget = parse_budget(options.budget)
    searches = [make_strategy(name, budget=budget) for name in strategies]
    session = ShadowSession(model, config, options.tolerance, progress, on_build)
    session.prepare()
    results = []
    for strategy in searches:
        progress(f"searching with {strategy.name} (budget {options.budget})")
        results.append(strategy.run(_reporting(session.observe, progress), model.inputs, ranges, options.seed,
                                    stop_at=None))
    best = max(results, key=lambda r: r.best_score)
    data, witness = _judge_witness("search", session, options, ranges, best, progress)
    data["search"]["strategies"] = [{**r.to_json(), "history": r.history} for r in results]
    data["bisection"] = None
    return finish_report(data, session, witness, started)


def _reporting(evaluate, progress, every: int = 25):
    """``evaluate`` that reports the count and the best score every ``every`` calls."""
    state = {"count": 0, "best": None}

    def wrapped(inputs):
        outcome = evaluate(inputs)
        score = score_of(outcome)
        state["count"] += 1
        if score is not None and (state["best"] is None or score > state["best"]):
            state["best"] = score
        if state["count"] % every == 0:
            best = "none valid yet" if state["best"] is None else f"best score {state['best']:.3g}"
            progress(f"  {state['count']} inputs evaluated, {best}")
        return outcome

    return wrapped


def _judge_witness(command, session: ShadowSession, options: Options, ranges, found, progress) -> tuple:
    """The report's common part: the witness, its metrics and the oracle's verdict."""
    invalid = _invalid_causes(session)
    _require_valid_witness(found, ranges, invalid)
    witness = found.best_inputs
    comparison = session.compare(session.optimized, witness)
    # a search the time limit stopped is repeated by the budget that cuts the same plan there
    repeat = found.repeat_budget if found.stopped_by == "time" else None
    data = _base_report(session.model, session.config, options, ranges, session, command, budget=repeat)
    data["search"] = {**found.to_json(), "budget": options.budget, "invalid_causes": invalid,
                      "outputs_constant": session.outputs_constant}
    data["metrics"] = comparison.to_json()
    data["witness"] = {"path": None, "inputs": _input_stats(witness)}
    data["oracle"] = None
    data["verdict"] = "violation" if comparison.violated else "clean"
    if comparison.violated and options.oracle:
        data["oracle"] = judge_with_oracle(session, witness, options, progress)
        if data["oracle"]["available"] and not data["oracle"]["real_violation"]:
            data["verdict"] = "benign"
    return data, witness


def finish_report(data: dict, session: ShadowSession, witness, started: float) -> Report:
    data["builds"] = session.timing()
    data["timings"] = {
        "total_s": round(time.perf_counter() - started, 3),
        "optimized_build_s": round(session.optimized.seconds, 3),
    }
    return Report(data, witness=witness if data["verdict"] == "violation" else None)


def judge_with_oracle(session: ShadowSession, witness, options: Options, progress) -> dict:
    """Compare both builds with a float64 build of the model on the witness:
    a difference where the optimized build is not worse than the reference
    (err_opt <= k * err_ref + atol/10) is benign."""
    progress("building the float64 oracle")
    try:
        oracle = Oracle(session.model.mod, session.model.input_names(), target=session.config.target)
        exact = oracle.run(witness)
    except Exception as err:  # an oracle is a help, not a requirement
        return {"available": False, "reason": summarize_error(err), "real_violation": True, "kept_float32": [],
                "k": options.oracle_k, "outputs": []}
    verdicts = classify(session.reference_outputs(witness), session.optimized_outputs(witness), exact,
                        options.tolerance, options.oracle_k)
    return {"available": True, "reason": None, "real_violation": has_real_violation(verdicts),
            "kept_float32": list(oracle.kept), "k": options.oracle_k, "outputs": [v.to_json() for v in verdicts]}


def _invalid_causes(session: ShadowSession) -> list:
    """Which vulnerable operators left their domain on the invalid candidates."""
    causes = []
    for sample in session.invalid_samples:
        try:
            calls = check_domains(session.model.mod, sample, target=session.config.target)
        except Exception:  # explaining is best effort; the count is reported anyway
            continue
        for call in calls:
            entry = call.to_json()
            if not any(c["op"] == entry["op"] and c["binding"] == entry["binding"] for c in causes):
                causes.append(entry)
    return causes


def _require_valid_witness(found, ranges, invalid) -> None:
    if found.best_inputs is not None:
        return
    span = ", ".join(f"{n}=[{r.low}, {r.high}]" for n, r in ranges.items())
    why = ""
    if invalid:
        why = " (" + "; ".join(f"{c['op']} at {c['binding']}: needs {c['domain']}" for c in invalid[:3]) + ")"
    raise InvalidReferenceError(
        f"the reference build gives NaN/Inf on every one of {found.evaluations} searched inputs in {span}{why}: "
        "the input range is wrong, not the compiler"
    )


def _as_model(model) -> Model:
    return model if isinstance(model, Model) else load_model(model)


def _check_given_inputs(model: Model, inputs: Mapping[str, np.ndarray]) -> dict:
    out = {}
    for spec in model.inputs:
        if spec.name not in inputs:
            raise RangeError(f"the given inputs lack '{spec.name}' (they have {', '.join(sorted(inputs))})")
        try:
            out[spec.name] = spec.coerce(inputs[spec.name])
        except ValueError as err:
            raise RangeError(f"given {err}") from None
    return out


def _input_stats(inputs: Mapping[str, np.ndarray]) -> dict:
    stats = {}
    for name, value in inputs.items():
        v = np.asarray(value, dtype=np.float64)
        stats[name] = {"shape": list(value.shape), "dtype": str(value.dtype), "min": float(v.min()),
                       "max": float(v.max()), "mean": float(v.mean())}
    return stats


def _base_report(model, config, options, ranges, session, command, budget: Optional[str] = None) -> dict:
    return {
        "command": command,
        "environment": environment(config.target),
        "model": model.to_json(),
        "configuration": {
            **config.to_json(),
            "rtol": options.rtol,
            "atol": options.atol,
            "search": options.search,
            "budget": options.budget,
            "seed": options.seed,
            "strategy": options.strategy,
            "oracle": options.oracle,
            "oracle_k": options.oracle_k,
            "ranges": {name: r.to_json() for name, r in ranges.items()},
        },
        "events": event_table(session),
        "replay": replay_command(model, config, options, ranges, budget),
    }


def replay_command(model, config, options, ranges, budget: Optional[str] = None) -> str:
    """The CLI line that reruns this check (Report.save_witness adds --inputs);
    ``budget`` replaces the options' budget (to repeat a search a time limit cut)."""
    source = os.path.abspath(model.source) if os.path.isfile(model.source) else model.source
    words = ["numguard", "bisect", source, "--pipeline", config.pipeline]
    if config.tir_pipeline != "default":
        words += ["--tir-pipeline", config.tir_pipeline]
    if config.target != "llvm":
        words += ["--target", config.target]
    if config.opt_level != 3:
        words += ["--opt-level", str(config.opt_level)]
    if str(model.source).endswith(".onnx"):  # ONNX takes any input shape: state the one checked
        for spec in model.inputs:
            words += ["--shape", f"{spec.name}=" + ",".join(str(d) for d in spec.shape)]
    for name, r in ranges.items():
        words += ["--range", f"{name}={r.low!r}:{r.high!r}"]
    if options.rtol is not None:
        words += ["--rtol", repr(options.rtol)]
    if options.atol is not None:
        words += ["--atol", repr(options.atol)]
    words += ["--search", options.search, "--budget", budget or options.budget, "--seed", str(options.seed)]
    if options.strategy != "bisect":
        words += ["--strategy", options.strategy]
    if not options.oracle:
        words += ["--no-oracle"]
    return " ".join(shlex.quote(w) for w in words)


def _bisection_json(result, session: ShadowSession) -> dict:
    by_id = {e.id: e for e in session.events}

    def describe(event_id):
        e = by_id[event_id]
        return {"id": e.id, "name": e.name, "level": e.level, "opt_level": e.opt_level}

    return {
        "status": result.status,
        "strategy": result.strategy,
        "optional_events": len(result.events),
        "changed_events": len(result.changed),
        "culprit": describe(result.culprit) if result.culprit else None,
        "score_before": result.score_before,
        "score_after": result.score_after,
        "confirmed": result.confirmed,
        "confirm_score": result.confirm_score,
        "minimal_set": [describe(i) for i in result.minimal_set],
        "minimal_set_complete": result.minimal_set_complete,
        "suspects": list(result.suspects),
        "builds": result.builds,
        "probes": [p.to_json() for p in result.probes],
    }
