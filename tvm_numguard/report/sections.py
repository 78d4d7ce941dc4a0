"""A Finding as a report document: the one place the schema's dict is made.

``document(finding)`` gives the sections the schema (schema.json) names, in
its words; ``replay_command`` the CLI line that reruns a finding.
"""

from __future__ import annotations

import os
import shlex
from typing import Mapping, Optional

import numpy as np

from ..ir.instrument import disabled_pass_reaches, is_required


def document(finding) -> dict:
    """The report sections of ``finding`` (a finding.Finding; numbers not yet made JSON-safe)."""
    f = finding
    options, search = f.options, f.search
    result = search.result
    by_id = {e.id: e for e in f.events}
    reached = disabled_pass_reaches(f.events)

    def describe(event_id):
        e = by_id[event_id]
        return {"id": e.id, "name": e.name, "level": e.level, "opt_level": e.opt_level,
                "disabled_pass_reaches": e.id in reached}

    # a search the time limit stopped is repeated by the budget that cuts the same plan there
    repeat = result.repeat_budget if result.stopped_by == "time" else None
    data = {
        "command": f.command,
        "environment": environment(f.config.target),
        "model": f.model.to_json(),
        "configuration": {
            **f.config.to_json(),
            "rtol": options.rtol,
            "atol": options.atol,
            "search": options.search,
            "budget": options.budget,
            "seed": options.seed,
            "strategy": options.strategy,
            "oracle": options.oracle,
            "oracle_k": options.oracle_k,
            "framework": options.framework,
            "ranges": {name: r.to_json() for name, r in f.ranges.items()},
        },
        "events": [event_row(e, e.id in f.optional) for e in f.events],
        "replay": f.replay or replay_command(f.model, f.config, options, f.ranges, repeat),
        "search": {**result.to_json(), "budget": search.budget,
                   "invalid_causes": [c.to_json() for c in search.invalid_causes],
                   "outputs_constant": search.outputs_constant},
        "metrics": f.comparison.to_json(),
        "witness": {"path": None, "inputs": input_stats(f.witness)},
        "oracle": f.oracle.to_json() if f.oracle is not None else None,
        **verdict_sections(f),
        "bisection": f.bisection.to_json(describe) if f.bisection is not None else None,
    }
    if search.searches:
        data["search"]["searches"] = [{**r.to_json(), "history": r.history} for r in search.searches]
    if f.counts is not None:
        data["builds"] = {"builds": f.counts.builds, "build_seconds": f.counts.build_seconds}
        data["timings"] = {"total_s": f.counts.total_s, "optimized_build_s": f.counts.optimized_build_s}
    if f.workers is not None:
        data["workers"] = f.workers.to_json()
    if f.command == "trace":
        data["trace"] = f.trace.to_json() if f.trace is not None else None
    if f.guard is not None:
        data["guard"] = f.guard.to_json()
    if f.range_check is not None:
        data["range_check"] = range_check_section(f.range_check, f.verdict)
        if f.range_check.result is not None and "timings" in data:
            data["timings"]["range_check_s"] = f.range_check.result.seconds
    return data


def verdict_sections(finding) -> dict:
    """The pass question's verdict, each stage's word, the stages at fault and the framework's section."""
    return {"verdict": finding.verdict, "attribution": finding.attribution(), "at_fault": finding.at_fault,
            "framework": finding.imports.to_json() if finding.imports is not None else None,
            "cpu_reference": finding.cpu_reference.to_json() if finding.cpu_reference is not None else None,
            "nondeterminism": finding.nondeterminism.to_json() if finding.nondeterminism is not None else None,
            "pass_note": finding.pass_note}


def range_check_section(outcome, verdict: str) -> dict:
    """What ``numguard check`` said of the pipeline before the search, and which of
    its warnings the witness of a difference reaches (a clean witness's are not
    where a violation lies: none is listed)."""
    result = outcome.result
    warnings = [] if result is None else [w.to_json() for w in result.warnings if w.module == "pipeline"]
    return {"error": outcome.error, "warnings": warnings,
            "reached": list(outcome.reached) if verdict != "clean" else []}


def event_row(event, optional: bool) -> dict:
    """One row of the report's ``events`` (and of ``numguard passes``)."""
    return {**event.to_json(), "required": is_required(event.name), "optional": optional}


def environment(target: str) -> dict:
    import platform

    import tvm

    return {
        "tvm_version": tvm.__version__,
        "numpy_version": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "target": target,
        "cwd": os.getcwd(),  # relative paths in the report were typed here
    }


def input_stats(inputs: Optional[Mapping[str, np.ndarray]]) -> dict:
    stats = {}
    for name, value in (inputs or {}).items():
        v = np.asarray(value, dtype=np.float64)
        stats[name] = {"shape": list(value.shape), "dtype": str(value.dtype), "min": float(v.min()),
                       "max": float(v.max()), "mean": float(v.mean())}
    return stats


def replay_command(model, config, options, ranges, budget: Optional[str] = None) -> str:
    """The CLI line that reruns this check (Report.save_witness adds --inputs);
    ``budget`` replaces the options' budget (to repeat a search a time limit cut)."""
    words = ["numguard", "bisect", *model.to_args(), *config.to_args(), *options.to_args(ranges, budget)]
    return " ".join(shlex.quote(w) for w in words)
