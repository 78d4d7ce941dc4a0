"""The Python API behind ``numguard bisect`` and ``numguard passes``.

Everything returns data (a Report, a list of events); nothing prints. Long
work reports progress through an optional ``progress(message)`` callback.
"""

from __future__ import annotations

import dataclasses
import shlex
import time
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from .bisect import bisect_session
from .errors import InvalidReferenceError, RangeError
from .instrument import is_required
from .model import Model, load_model
from .pipeline import CompileConfig
from .report import Report, environment
from .search import FixedInputs, make_strategy, parse_budget, resolve_ranges
from .shadow import Tolerance
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
) -> Report:
    """Search the range for a violation and bisect the pipeline on its witness."""
    started = time.perf_counter()
    progress = progress or (lambda message: None)
    model = _as_model(model)
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    search = FixedInputs(inputs) if inputs is not None else make_strategy(options.search,
                                                                           budget=parse_budget(options.budget))
    if inputs is not None:
        inputs = _check_given_inputs(model, inputs)
    session = ShadowSession(model, config, options.tolerance, progress, on_build)
    session.prepare()

    progress(f"searching the range for inputs where the builds differ ({search.name}, budget {options.budget})")
    found = search.run(session.evaluate, model.inputs, ranges, options.seed, stop_at=None)
    if found.best_inputs is None:
        span = ", ".join(f"{n}=[{r.low}, {r.high}]" for n, r in ranges.items())
        raise InvalidReferenceError(
            f"the reference build gives NaN/Inf on every one of {found.evaluations} searched inputs in {span}: "
            "the input range is wrong, not the compiler"
        )
    witness = found.best_inputs
    comparison = session.compare(session.optimized, witness)
    data = _base_report(model, config, options, ranges, session, "bisect")
    data["search"] = {**found.to_json(), "budget": options.budget if inputs is None else None}
    data["metrics"] = comparison.to_json()
    data["witness"] = {"path": None, "inputs": _input_stats(witness)}
    data["verdict"] = "violation" if comparison.violated else "clean"
    if comparison.violated:
        progress(f"violation (score {comparison.score:.3g}); bisecting {len(session.optional)} optional events")
        result = bisect_session(session, witness, options.strategy, progress)
        data["bisection"] = _bisection_json(result, session)
    else:
        data["bisection"] = None
    data["builds"] = session.timing()
    data["timings"] = {
        "total_s": round(time.perf_counter() - started, 3),
        "optimized_build_s": round(session.optimized.seconds, 3),
    }
    return Report(data, witness=witness if comparison.violated else None)


def _as_model(model) -> Model:
    return model if isinstance(model, Model) else load_model(model)


def _check_given_inputs(model: Model, inputs: Mapping[str, np.ndarray]) -> dict:
    out = {}
    for spec in model.inputs:
        if spec.name not in inputs:
            raise RangeError(f"the given inputs lack '{spec.name}' (they have {', '.join(sorted(inputs))})")
        value = np.asarray(inputs[spec.name])
        if tuple(value.shape) != tuple(spec.shape):
            raise RangeError(f"given input '{spec.name}' has shape {list(value.shape)}, the model wants {list(spec.shape)}")
        out[spec.name] = value.astype(spec.dtype)
    return out


def _input_stats(inputs: Mapping[str, np.ndarray]) -> dict:
    stats = {}
    for name, value in inputs.items():
        v = np.asarray(value, dtype=np.float64)
        stats[name] = {"shape": list(value.shape), "dtype": str(value.dtype), "min": float(v.min()),
                       "max": float(v.max()), "mean": float(v.mean())}
    return stats


def _base_report(model, config, options, ranges, session, command) -> dict:
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
            "ranges": {name: r.to_json() for name, r in ranges.items()},
        },
        "events": event_table(session),
        "replay": replay_command(model, config, options, ranges),
    }


def replay_command(model, config, options, ranges) -> str:
    """The CLI line that reruns this check (Report.save_witness adds --inputs)."""
    words = ["numguard", "bisect", model.source, "--pipeline", config.pipeline]
    if config.tir_pipeline != "default":
        words += ["--tir-pipeline", config.tir_pipeline]
    if config.target != "llvm":
        words += ["--target", config.target]
    for name, r in ranges.items():
        words += ["--range", f"{name}={r.low!r}:{r.high!r}"]
    if options.rtol is not None:
        words += ["--rtol", repr(options.rtol)]
    if options.atol is not None:
        words += ["--atol", repr(options.atol)]
    words += ["--search", options.search, "--budget", options.budget, "--seed", str(options.seed)]
    if options.strategy != "bisect":
        words += ["--strategy", options.strategy]
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
