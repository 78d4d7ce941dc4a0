"""A regress run as text (the terminal table), JUnit XML (CI systems) and HTML.

``program``: how numguard was invoked; the replay lines start with it (rows
record them as ``numguard regress ...``, flags.as_invoked)."""

from __future__ import annotations

import html
from xml.etree import ElementTree

from ...base.flags import as_invoked
from .run import RegressRun


def _num(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def row_cells(row) -> list:
    changed = "-" if row.changed is None else ("yes" if row.changed else "no")
    return [row.model, changed, row.verdict, _num(row.score), _num(row.max_ulp, ".0f"),
            _num(row.baseline_err), f"{row.seconds:.2f}"]


HEADER = ["model", "changed", "verdict", "score", "max ulp", "baseline err", "seconds"]


def summary_line(run: RegressRun, spec: str) -> str:
    counts = run.summary()[spec]
    changed = counts["changed"]
    head = f"{spec}: changed {changed} of {counts['models']} model(s)"
    generated = [r for r in run.rows_of(spec) if r.model.startswith("random/")]
    if generated and len(generated) < counts["models"]:
        head += f" ({sum(1 for r in generated if r.changed)} of the {len(generated)} generated)"
    verdicts = ", ".join(f"{counts[v]} {v}" for v in ("violation", "benign", "clean", "untestable", "broken", "error")
                         if counts[v])
    line = f"{head}; {verdicts}"
    if changed == 0:
        line += " -- it changed no model, so it proved nothing"
    elif changed < run.require_changed:
        line += f" -- fewer than --require-changed {run.require_changed}"
    return line


def render_text(run: RegressRun, program: str = "numguard") -> str:
    lines = []
    for spec in run.passes:
        rows = run.rows_of(spec)
        table = [HEADER] + [row_cells(r) for r in rows]
        widths = [max(len(str(t[i])) for t in table) for i in range(len(HEADER))]
        lines.append(f"pass under test: {spec}")
        for cells in table:
            lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip())
        for row in rows:
            if row.verdict in ("violation", "untestable", "broken", "error") and row.reason:
                lines.append(f"  {row.model}: {row.reason}")
            if row.verdict == "violation":
                lines.append(f"  {row.model}: culprit {', '.join(row.culprit) or '?'}; witness {row.witness}")
                lines.append(f"    replay: {as_invoked(row.replay, program)}")
        lines.append(summary_line(run, spec))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_junit(run: RegressRun, program: str = "numguard") -> bytes:
    """One testsuite per pass, one testcase per model: a violation fails, a
    tool error errs, an untestable or broken model is skipped (with why)."""
    suites = ElementTree.Element("testsuites", name="numguard regress")
    for spec in run.passes:
        rows = run.rows_of(spec)
        suite = ElementTree.SubElement(suites, "testsuite", name=spec, tests=str(len(rows)),
                                       failures=str(sum(r.verdict == "violation" for r in rows)),
                                       errors=str(sum(r.verdict == "error" for r in rows)),
                                       skipped=str(sum(r.verdict in ("untestable", "broken") for r in rows)),
                                       time=f"{sum(r.seconds for r in rows):.3f}")
        for row in rows:
            case = ElementTree.SubElement(suite, "testcase", classname=spec, name=row.model, time=f"{row.seconds:.3f}")
            if row.verdict == "violation":
                failure = ElementTree.SubElement(case, "failure",
                                                 message=f"numerical violation, score {_num(row.score)}"
                                                         f", culprit {', '.join(row.culprit) or '?'}")
                failure.text = f"witness: {row.witness}\nreplay: {as_invoked(row.replay, program)}\n"
            elif row.verdict == "error":
                ElementTree.SubElement(case, "error", message=row.reason or "numguard failed")
            elif row.verdict in ("untestable", "broken"):
                ElementTree.SubElement(case, "skipped", message=f"{row.verdict}: {row.reason}")
            props = ElementTree.SubElement(case, "properties")
            for key in ("verdict", "changed", "score", "max_ulp", "baseline_err"):
                ElementTree.SubElement(props, "property", name=key, value=str(getattr(row, key)))
    return ElementTree.tostring(suites, encoding="utf-8", xml_declaration=True)


def render_html(run: RegressRun, program: str = "numguard") -> str:
    colors = {"violation": "#f8d0d0", "benign": "#fff2c0", "clean": "#d8f0d8", "untestable": "#e8e8e8",
              "broken": "#f0d8f0", "error": "#f8b0b0"}
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>numguard regress</title><style>",
             "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}",
             "td,th{border:1px solid #bbb;padding:3px 8px;text-align:left;font-size:14px}th{background:#eee}",
             "code{font-size:12px}</style></head><body><h1>numguard regress</h1>"]
    for spec in run.passes:
        parts.append(f"<h2>{html.escape(spec)}</h2><p>{html.escape(summary_line(run, spec))}</p><table><tr>")
        parts += [f"<th>{html.escape(h)}</th>" for h in HEADER + ["culprit / why"]]
        parts.append("</tr>")
        for row in run.rows_of(spec):
            why = ", ".join(row.culprit) if row.verdict == "violation" else (row.reason or "")
            cells = row_cells(row) + [why]
            # a row where the pass changed nothing proved nothing: grey, not the green of a real pass
            color = "#f4f4f4" if row.changed is False else colors.get(row.verdict, "#fff")
            parts.append(f"<tr style='background:{color}'>"
                         + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        parts.append("</table>")
        for row in run.rows_of(spec):
            if row.verdict == "violation":
                replay = html.escape(as_invoked(row.replay or "", program))
                parts.append(f"<p>{html.escape(row.model)}: replay <code>{replay}</code></p>")
    parts.append("</body></html>")
    return "".join(parts)
