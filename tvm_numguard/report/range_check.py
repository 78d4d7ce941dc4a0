"""The document and the text of a static range check (``numguard check``).

The document follows the reports' conventions (``schema_version``, ``tool``,
``command``, ``environment``, validated against a schema shipped in the
package: ``check-schema.json``); the text lists each warning with its place in
the user's model and what drives it, worst first.
"""

from __future__ import annotations

from typing import Optional

from ..base.numbers import plain
from ..base.tolerance import DEFAULT_TOLERANCES
from ..judge.rangecheck.check import interval, number, warning_line
from .schemas import CHECK_SCHEMA, header, validate
from .sections import environment

def check_document(result, model, config, rtol: Optional[float] = None) -> dict:
    """The JSON document of a CheckResult, validated (jsonschema.ValidationError if not);
    ``rtol``: the tolerance a rounding loss is told against."""
    data = plain({
        **header("check"),
        "command": "check",
        "environment": environment(config.target),
        "model": model.to_json(),
        "configuration": config.to_json(),
        "ranges": {name: r.to_json() for name, r in result.ranges.items()},
        "analysed": {"bindings": result.bindings, "pipeline_stopped_before": result.stopped},
        "possible_defect": result.possible_defect,
        "warnings": [w.to_json() for w in result.warnings],
        "loose": [w.to_json() for w in result.loose],
        "unanalysed": [w.to_json() for w in result.unanalysed],
        "unknown_ops": dict(sorted(result.unknown.items())),
        "seconds": result.seconds,
        "rounding": result.rounding.to_json() if result.rounding is not None else None,
        "rtol": rtol if rtol is not None else DEFAULT_TOLERANCES["float32"][0],
    })
    validate(data, CHECK_SCHEMA)
    return data


CORNER_WORDS = {"high": "at its high end", "low": "at its low end", "both": "at either end",
                "mixed": "with elements at both ends (a mixed corner)"}


def driver_text(drivers: dict, ranges: dict) -> str:
    """Per input: the corner, and the band where it is narrower than the range."""
    parts = []
    for name, d in drivers.items():
        band, whole = d["band"], ranges[name]
        text = f"{name} {CORNER_WORDS[d['corner']]}"
        if band[0] == band[1]:
            text += f", split at {number(band[0])}"
        elif band != [whole["low"], whole["high"]]:
            text += f", only in {interval(band)}"
        parts.append(text)
    return "; ".join(parts)


def check_summary(data: dict) -> str:
    """What a terminal shows for a check document."""
    warnings = data["warnings"]
    counts = {m: sum(1 for w in warnings if w["module"] == m) for m in ("model", "pipeline")}
    new = sum(1 for w in warnings if w["new"])
    stopped = data["analysed"]["pipeline_stopped_before"]
    after = (f"after the pipeline's Relax passes (before {stopped}): {counts['pipeline']}, {new} new"
             if stopped else "the pipeline never legalizes: only the model was analysed")
    rtol = data.get("rtol", DEFAULT_TOLERANCES["float32"][0])
    # no range warning is no verdict on rounding: where one rounding of the pipeline's narrower float
    # passes rtol, the headline says so rather than CLEAN above a line that expects a violation
    verdict = "POSSIBLE DEFECT" if warnings else "ROUNDING RISK" if rounding_ratio(data.get("rounding"), rtol) > 1 \
        else "CLEAN"
    lines = [f"{verdict}: {len(warnings)} warning(s); in the model: {counts['model']}; {after}  "
             f"[{data['seconds']:.2f}s]"]
    for module in ("model", "pipeline"):
        for w in sorted((w for w in warnings if w["module"] == module), key=lambda w: -w["excess"]):
            lines.append(f"  {module:<9} {warning_line(w)}")
            lines.append(f"  {'':<9}   in the model: {w['provenance']}")
            if w["drivers"]:
                lines.append(f"  {'':<9}   driven by: {driver_text(w['drivers'], data['ranges'])}")
    if data["loose"]:
        deepest = max(w["depth"] for w in data["loose"])
        lines.append(f"  {len(data['loose'])} more possible warning(s) behind 2 to {deepest} weighted sums "
                     "(matmul, conv): one interval per tensor can be many times too wide there; a search decides")
    if data["unanalysed"]:
        lines.append(f"  {len(data['unanalysed'])} more warning(s) downstream of operators the check does not "
                     "know (widened there; they prove nothing)")
    if data["unknown_ops"]:
        ops = ", ".join(f"{op} x{n}" for op, n in data["unknown_ops"].items())
        lines.append(f"  not analysed (widened to the dtype's range): {ops}")
    lines += rounding_lines(data.get("rounding"), rtol)
    return "\n".join(lines)


def rounding_ratio(rounding, rtol: float) -> float:
    """What one rounding of the pipeline's narrower float costs, in units of ``rtol`` (0: no such rounding)."""
    if rounding is None:
        return 0.0
    return rounding["relative"] / rtol if rtol > 0 else float("inf")


def rounding_lines(rounding, rtol: float) -> list:
    """What the check cannot see (rounding), and its estimate where the pipeline narrows floats."""
    lines = ["  note      this check bounds ranges (domains, overflow), not rounding; 'numguard bisect' "
             "measures rounding"]
    if rounding is not None:
        ratio = rounding_ratio(rounding, rtol)
        likely = "expect a violation on ordinary inputs" if ratio > 1 else "within the tolerance"
        lines.append(f"  rounding  after the pipeline {rounding['values']} value(s) are {rounding['dtype']} "
                     f"(the model's are {rounding['wider']}): one rounding moves a value by up to "
                     f"{rounding['relative']:.3g} relative, {ratio:.3g}x rtol {rtol:g}: {likely}")
    return lines
