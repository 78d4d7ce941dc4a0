"""The trace report as one self-contained HTML file (no network, no scripts):
verdict and culprit, the error-per-pass plot and table, the origin with its
TVMScript (and TIR) before and after the pass, the propagation graph."""

from __future__ import annotations

import base64
import html
import re
from typing import Optional

from .advice import SCORE_RULE, as_invoked, fix_lines
from .propagation_svg import propagation_dot, propagation_svg
from .imports import IMPORT_WORDS, import_lines
from .plot import pass_errors_png
from .stages import COMPARES, LOWERING_NOTE, said, stage_scores, tone
from .text import num, origin_rule

FOLD_AT = 160  # characters: longer runs inside a line (an inlined constant's values) are folded

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1200px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
tr.culprit td { background: #fdd; font-weight: bold; }
pre { background: #f6f6f6; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; }
.bad { color: #b00; font-weight: bold; } .good { color: #070; } .note { color: #a55a00; font-weight: bold; }
.none { color: #777; }
.summary td:first-child { font-weight: bold; }
#propagation svg { max-width: 100%; height: auto; }
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
                    f"<td>{_score(r['local'])}</td><td>{_score(r['cumulative'])}</td>"
                    f"<td>{_e(r['note'] or '')}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _fold(text: str) -> str:
    """``text`` with long bracketed runs (a constant's values) cut to their ends."""
    def cut(match):
        run = match.group(0)
        return run[:60] + f" … {len(run) - 100} characters folded … " + run[-40:]
    return re.sub(r"[\[(][^\n]{%d,}?[\])]" % FOLD_AT, cut, text)


def _summary(data: dict) -> str:
    """The numbers a reader looks for first: verdict, worst errors, what ran, versions."""
    env, cfg = data["environment"], data["configuration"]
    metrics = data["metrics"]
    at_fault = data.get("at_fault", ["pass"] if data["verdict"] == "violation" else [])
    rows = [("at fault", f"<span class='{'bad' if at_fault else 'good'}'>{_e(', '.join(at_fault) or 'nothing')}"
                         "</span>")]
    for stage, score, word, what in stage_scores(data):  # one score per row, each saying what it compares
        cls = "good" if score <= 1 else ("bad" if stage in at_fault else "note")
        rows.append((f"{stage} score", f"<span class='{cls}'>{_e(num(score))}</span> ({_e(word)}): {_e(what)}"))
    for m in metrics:
        rows.append((f"output {m['index']} (pass)", f"max abs error {_e(num(m['max_abs']))}, max rel error "
                                                    f"{_e(num(m['max_rel']))}, score {_e(num(m['score']))} "
                                                    f"({m['violations']} elements beyond tolerance)"))
    if data.get("attribution"):
        rows.append(("stages", _stages(data, at_fault)))
    rows.append(("score", _e(SCORE_RULE)))
    rows.append(("pipeline", f"<code>{_e(cfg['pipeline'])}</code>, TIR <code>{_e(cfg['tir_pipeline'])}</code>, "
                             f"target <code>{_e(cfg['target'])}</code>, opt_level {_e(cfg['opt_level'])}"))
    rows.append(("versions", f"numguard {_e(data['tool']['version'])}, TVM {_e(env['tvm_version'])}, "
                             f"Python {_e(env['python'])}, numpy {_e(env['numpy_version'])}"))
    cells = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return f"<table class='summary' id='summary'>{cells}</table>"


def _stages(data: dict, at_fault: list) -> str:
    """Each stage's word as the summary says it, coloured as it is: at fault
    red, a difference that is no failure amber, not answered grey."""
    attribution, parts = data["attribution"], []
    for stage, word in attribution.items():
        if stage == "target" and not data.get("cpu_reference"):
            continue
        why = f" <span class='none'>({_e(COMPARES[stage])}" if stage in ("target", "lowering") else ""
        if why and stage == "lowering" and word == "differs":
            why += f"; {_e(LOWERING_NOTE)}"
        parts.append(f"{stage}: <span class='{tone(stage, word, at_fault)}'>{_e(said(stage, word))}</span>"
                     + (why + ")</span>" if why else ""))
    return " · ".join(parts)


def _fix(data: dict, program: str) -> str:
    lines = fix_lines(data, program)
    if not lines:
        return ""
    return "<h2>What to do</h2><pre id='fix'>" + _e("\n".join(line[2:] for line in lines)) + "</pre>"


def _origin(trace: dict) -> str:
    origin = trace.get("origin")
    if not origin:
        return f"<p>No origin: {_e(trace.get('reason'))}</p>"
    parts = [
        f"<p>The error starts at <b id='origin'>{_e(origin['value'])}</b> "
        f"(operator <code>{_e(origin['op'])}</code>, kernel <code>{_e(origin['kernel'])}</code>), "
        f"score {_score(origin)} on the witness{_e(origin_rule(origin))}; it was "
        f"<code>{_e(origin['value_before'])}</code> "
        f"(<code>{_e(origin['op_before'])}</code>) before the pass.</p>",
        f"<p>In your model: <b id='source'>{_e(origin.get('provenance') or 'not known')}</b></p>",
        f"<p>Before the pass:</p><pre>{_e(_fold(origin['binding_before']))}</pre>",
        f"<p>After the pass:</p><pre>{_e(_fold(origin['binding_after']))}</pre>",
    ]
    for key, title in (("tir_before", "TIR of the kernel before the pass"),
                       ("tir_after", "TIR of the kernel after it")):
        if origin.get(key):
            parts.append(f"<details><summary>{title}</summary><pre>{_e(_fold(origin[key]))}</pre></details>")
    return "\n".join(parts)


def _imports(data: dict) -> str:
    """TVM's import against the model's framework: the same words as the terminal's."""
    section = data.get("framework")
    if not section:
        return ""
    cls = "bad" if section["verdict"] == "import" else "good"
    origin = section.get("origin")
    parts = [f"<h2>Import</h2><p id='import'>{_e(section['framework'])}: TVM's reference "
             f"<span class='{cls}'>{_e(IMPORT_WORDS[section['verdict']])}</span>.</p>"]
    if origin:
        parts.append(f"<p>First value TVM computes differently: <b id='import-origin'>{_e(origin['node'])}</b> "
                     f"(TVM makes <code>{_e(origin.get('op'))}</code> of it).</p>")
    placement = section.get("placement") or {}
    for verdict in placement.get("verdicts", []):  # the part of TVM a maintainer would change, first
        if verdict["outcome"] == "at fault":
            parts.append(f"<p>Part of TVM at fault: <b class='bad' id='component'>{_e(verdict['component'])}</b>: "
                         f"{_e(verdict['subject'])}, at {_e(placement['node'])}.</p>")
            break
    parts.append(f"<pre>{_e(chr(10).join(line[2:] for line in import_lines(data)))}</pre>")
    return "\n".join(parts)


def _range_check(data: dict) -> str:
    """numguard check's warnings about the pipeline, the ones the witness reaches marked."""
    from .range_check import warning_line

    section = data.get("range_check")
    if not section or not section["warnings"]:
        return ""
    items = []
    for w in section["warnings"]:
        reached = " <b class='bad'>the witness reaches it: the violation lies here</b>" \
            if w["position"] in section["reached"] else ""
        items.append(f"<li><code>{_e(warning_line(w))}</code><br>in your model: {_e(w['provenance'])}{reached}</li>")
    return ("<h2>Range check</h2><p>Before searching, <code>numguard check</code> found operators of the "
            "pipeline's module that can misbehave somewhere in the range:</p>"
            f"<ul id='range-check'>{''.join(items)}</ul>")


def render_html(data: dict, program: str = "numguard", fix: Optional[dict] = None) -> str:
    """The trace's page; for a check with nothing to trace (no violation) a
    page that says so, with what was checked; ``fix``: the fix document the
    check applied (``--apply-fix``), shown with its cost of safety."""
    trace = data.get("trace")
    applied = _applied_fix(fix)
    if trace is None:
        why = ("TVM's import is at fault, not a pass: there is no pass to trace" if "import" in data.get("at_fault", [])
               else f"no violation on the {_e(data['search']['evaluations'])} inputs searched, so there is nothing "
                    "to trace")
        at_fault = ", ".join(data.get("at_fault", []))
        return _page([f"<h1>numguard trace: {_e(data['model']['source'])}</h1>",
                      f"<p id='verdict'>at fault: <span class='{'bad' if at_fault else 'good'}'>"
                      f"{_e(at_fault or 'nothing')}</span>: {why}.</p>",
                      _summary(data), applied, _imports(data),
                      f"<h2>Replay</h2><pre>{_e(as_invoked(data['replay'], program))}</pre>"])
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
        f"<code>{_e(data['configuration']['tir_pipeline'])}</code>, "
        f"target <code>{_e(data['configuration']['target'])}</code>; "
        f"verdict <span class='{verdict_cls}'>{_e(data['verdict'])}</span>.</p>",
        _summary(data),
        applied,
        f"<h2>Culprit</h2><p id='culprit'><b>{_e(culprit)}</b> [{_e((bis.get('culprit') or {}).get('level', ''))}]"
        f" — {_e(bis.get('status', ''))}, {_e(bis.get('builds', ''))} bisection builds.</p>"
        if culprit else "<h2>Culprit</h2><p>none isolated</p>",
        _fix(data, program),
        "<h2>Error per pass</h2>",
        f"<img id='pass-plot' alt='error per pass' src='data:image/png;base64,{plot}'>"
        if plot else "<p>no pass changed the module</p>",
        _pass_table(trace),
        "<h2>Origin</h2>", _origin(trace),
        _imports(data),
        _range_check(data),
        "<h2>Propagation</h2>",
        f"<p>{_e(matching.get('matched', 0))} of {_e(matching.get('values', 0))} values matched "
        f"({100 * float(matching.get('share', 0) or 0):.0f}%); each value's box is coloured by its score on the "
        "witness: green within tolerance (1 or less), orange to red violating (red: 10<sup>4</sup> and more), grey "
        "without a value; the origin has a thick border; red edges lead from the origin to a violating output; "
        "grey dashed values could not be matched"
        + (f": {_e(', '.join(unmatched))}" if unmatched else "") + ".</p>",
        f"<div id='propagation'>{svg}</div>" if svg else "<p>(empty)</p>",
        f"<details><summary>DOT source</summary><pre>{_e(propagation_dot(trace['graph']))}</pre></details>",
        f"<h2>Replay</h2><pre>{_e(as_invoked(data['replay'], program))}</pre>",
    ]
    return _page(body)


def _page(body: list) -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>numguard trace</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _applied_fix(fix: Optional[dict]) -> str:
    """The section of the fix a check applied: its culprits, places and cost table."""
    from .fix import fix_section

    if fix is None:
        return ""
    return f"<h2 id='fix'>Fix applied</h2>{fix_section(fix, level=3)}"
