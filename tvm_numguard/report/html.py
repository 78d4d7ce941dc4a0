"""The trace report as one self-contained HTML file (no network, no scripts):
verdict and culprit, the error-per-pass plot and table, the origin with its
TVMScript (and TIR) before and after the pass, the propagation graph."""

from __future__ import annotations

import base64
import html

from .graph import propagation_dot, propagation_svg
from .plot import pass_errors_png
from .text import num

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1200px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
tr.culprit td { background: #fdd; font-weight: bold; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
.bad { color: #b00; font-weight: bold; } .good { color: #070; }
"""


def _e(value) -> str:
    return html.escape(str(value))


def _score(entry) -> str:
    if not entry:
        return "—"
    return _e(num(entry.get("score")))


def _pass_table(trace: dict) -> str:
    rows = ["<table><tr><th>event</th><th>level</th><th>measured by</th><th>local error (score)</th>"
            "<th>cumulative error (score)</th><th>note</th></tr>"]
    for r in trace["passes"]:
        cls = ' class="culprit"' if r["id"] == trace.get("culprit") else ""
        rows.append(f"<tr{cls}><td>{_e(r['id'])}</td><td>{_e(r['level'])}</td><td>{_e(r['method'])}</td>"
                    f"<td>{_score(r['local'])}</td><td>{_score(r['cumulative'])}</td><td>{_e(r['note'] or '')}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _origin(trace: dict) -> str:
    origin = trace.get("origin")
    if not origin:
        return f"<p>No origin: {_e(trace.get('reason'))}</p>"
    parts = [
        f"<p>The error starts at <b id='origin'>{_e(origin['value'])}</b> "
        f"(operator <code>{_e(origin['op'])}</code>, kernel <code>{_e(origin['kernel'])}</code>), "
        f"score {_score(origin)} on the witness; it was <code>{_e(origin['value_before'])}</code> "
        f"(<code>{_e(origin['op_before'])}</code>) before the pass.</p>",
        f"<p>Before the pass:</p><pre>{_e(origin['binding_before'])}</pre>",
        f"<p>After the pass:</p><pre>{_e(origin['binding_after'])}</pre>",
    ]
    for key, title in (("tir_before", "TIR of the kernel before the pass"), ("tir_after", "TIR of the kernel after it")):
        if origin.get(key):
            parts.append(f"<details><summary>{title}</summary><pre>{_e(origin[key])}</pre></details>")
    return "\n".join(parts)


def render_html(data: dict) -> str:
    trace = data["trace"]
    bis = data.get("bisection") or {}
    culprit = trace.get("culprit")
    verdict_cls = "bad" if data["verdict"] == "violation" else "good"
    plot = base64.b64encode(pass_errors_png(data)).decode() if trace["passes"] else None
    svg = propagation_svg(trace["graph"])
    matching = trace.get("matching") or {}
    unmatched = [n["id"] for n in trace["graph"]["nodes"] if n.get("matched") is None]
    body = [
        f"<h1>numguard trace: {_e(data['model']['source'])}</h1>",
        f"<p>pipeline <code>{_e(data['configuration']['pipeline'])}</code>, TIR pipeline "
        f"<code>{_e(data['configuration']['tir_pipeline'])}</code>, target <code>{_e(data['configuration']['target'])}</code>; "
        f"verdict <span class='{verdict_cls}'>{_e(data['verdict'])}</span>.</p>",
        f"<h2>Culprit</h2><p id='culprit'><b>{_e(culprit)}</b> [{_e((bis.get('culprit') or {}).get('level', ''))}]"
        f" — {_e(bis.get('status', ''))}, {_e(bis.get('builds', ''))} bisection builds.</p>"
        if culprit else "<h2>Culprit</h2><p>none isolated</p>",
        "<h2>Error per pass</h2>",
        f"<img id='pass-plot' alt='error per pass' src='data:image/png;base64,{plot}'>" if plot else "<p>no pass changed the module</p>",
        _pass_table(trace),
        "<h2>Origin</h2>", _origin(trace),
        "<h2>Propagation</h2>",
        f"<p>{_e(matching.get('matched', 0))} of {_e(matching.get('values', 0))} values matched "
        f"({100 * float(matching.get('share', 0) or 0):.0f}%); red edges lead from the origin to a violating output; "
        "grey dashed values could not be matched"
        + (f": {_e(', '.join(unmatched))}" if unmatched else "") + ".</p>",
        f"<div id='propagation'>{svg}</div>" if svg else "<p>(empty)</p>",
        f"<details><summary>DOT source</summary><pre>{_e(propagation_dot(trace['graph']))}</pre></details>",
        f"<h2>Replay</h2><pre>{_e(data['replay'])}</pre>",
    ]
    return ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>numguard trace</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
