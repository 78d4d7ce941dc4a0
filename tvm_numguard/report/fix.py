"""numguard fix's document as text (the summary) and as a page."""

from __future__ import annotations

import html

from ..base.numbers import from_json_number
from ..ir.targets import parse_target
from .advice import as_invoked
from .text import counted


def fix_summary(document: dict, command: str, path: str) -> str:
    """The summary ``numguard fix`` prints: per culprit its remedy and places, the verification, the cost table."""
    lines = []
    verified = document["verified"]
    verdict = "verified" if verified else "NOT verified"
    lines.append(f"numguard fix: {verdict}" + (f": {document['reason']}" if document["reason"] else ""))
    for culprit in document["culprits"]:
        if culprit["remedy"] == "narrow":
            at = counted(len(culprit["places"]), "place")
            lines.append(f"  culprit   {culprit['event']}: kept from acting at {at}; "
                         f"keeps {culprit['kept']} of its {culprit['rewrites']} rewrites"
                         + (f" ({culprit['follows']} follow-on dtype changes besides)" if culprit["follows"] else ""))
            for place in culprit["places"]:
                where = place["binding"] or f"function {place['function']}"
                lines.append(f"    - {where} ({place['op']}, {place.get('kind', 'rewrite')})"
                             + (f": {place['provenance']}" if place.get("provenance") else ""))
        else:
            lines.append(f"  culprit   {culprit['event']}: switched off ({culprit.get('reason') or 'no narrow set'}); "
                         f"keeps 0 of its {culprit['rewrites']} rewrites")
    check = document["verification"]
    if check is not None:
        lines.append(f"  verified  on a fresh search: seed {check['seed']}, budget {check['budget']}: "
                     f"{check['verdict']}"
                     + f", score {from_json_number(check['score']):.3g}"
                     + (f"; range-check warnings reached: {', '.join(check['range_warnings_reached'])}"
                        if check["range_warnings_reached"] else ""))
    if document["cost"]:
        lines.append("  cost of safety (median of {} runs, TVM time evaluator):".format(document["cost"][0]["runs"]))
        lines.extend("    " + row for row in cost_rows(shown_cost(document)))
        lines.extend(f"  note      {note}" for note in cost_notes(document))
    lines.extend(import_lines(document.get("imports")))
    lines.append(f"  fix       {path}")
    if document.get("verify_command"):
        lines.append(f"  verify    {as_invoked(document['verify_command'], command)}")
    return "\n".join(lines)


def import_lines(imports, fixed: bool = True) -> list:
    """What the search met beside the passes: TVM's import differing from the model's framework;
    ``fixed``: a fix of the passes was searched for beside it (against TVM's reference build)."""
    if not imports:
        return []
    where = f" at {imports['origin']}" if imports.get("origin") else ""
    return [f"  import    TVM's import computes other numbers than the model ({imports['framework']}){where} on seed "
            f"{imports['seed']}: no pass fix mends a frontend (numguard bisect reports it)"
            + ("; the passes' fix is found and verified against TVM's reference build (--no-framework)"
               if fixed else "")]


def switches_everything_off(document: dict) -> bool:
    """Every culprit switched off: the narrow fix is the pass off, one build."""
    return bool(document["culprits"]) and all(c["remedy"] == "off" for c in document["culprits"])


def shown_cost(document: dict) -> list:
    """The cost rows worth showing: a narrow row that is the pass-off build again is left out."""
    if not switches_everything_off(document):
        return document["cost"]
    return [r for r in document["cost"] if r["build"] != "narrow"]


def cost_notes(document: dict) -> list:
    """What the cost table means, where a number alone would mislead."""
    notes = []
    if switches_everything_off(document):
        notes.append("no culprit could be kept from acting at fewer places than all: the fix is the pass off")
    times = {r["build"]: r["median_ms"] for r in document["cost"] if r["median_ms"] is not None}
    safe = times.get("pass off") if switches_everything_off(document) else times.get("narrow")
    unsafe = times.get("unsafe")
    if safe and unsafe and safe < 0.9 * unsafe:
        # archs=[]: the kind alone is asked, no GPU is (a target text as the report spells it)
        cpu = parse_target(document["configuration"]["target"], archs=[]).kind in ("llvm", "c")
        notes.append(f"safety is faster here: the unsafe build takes {unsafe / safe:.1f}x the safe one's time, so the "
                     "pass costs speed on this target instead of buying it"
                     + (" (float16 arithmetic and fast transcendental functions are emulated or slow on a CPU)"
                        if cpu else ""))
    return notes


def cost_rows(cost: list) -> list:
    """The cost table as aligned text rows, a header first; time relative to the unsafe build."""
    base = next((r["median_ms"] for r in cost if r["build"] == "unsafe"), None)
    rows = [f"{'build':<9} {'median ms':>10} {'x unsafe':>9} {'weight bytes':>13} {'rewrites kept':>14}"]
    for r in cost:
        ms = r["median_ms"]
        ratio = f"{ms / base:.2f}" if ms and base else "-"
        shown = f"{ms:.4f}" if ms is not None else (r.get("error") or "-")
        rows.append(f"{r['build']:<9} {shown:>10} {ratio:>9} {r['weight_bytes']:>13} {r['rewrites_kept']:>14}")
    return rows


def fix_html(document: dict) -> str:
    """A page of the fix: culprits, places, verification, cost table."""
    esc = html.escape
    body = [f"<h1>numguard fix: {'verified' if document['verified'] else 'not verified'}</h1>",
            f"<p>model {esc(str(document['model']['path']))}, "
            f"pipeline {esc(document['configuration']['pipeline'])}</p>",
            fix_section(document)]
    return "<!doctype html><html><head><meta charset='utf-8'><title>numguard fix</title></head><body>" + \
        "\n".join(body) + "</body></html>\n"


def fix_section(document: dict, level: int = 2) -> str:
    """The fix's culprits, places and cost table as HTML (the fix's page, and
    trace's page of a run with ``--apply-fix``)."""
    esc = html.escape
    body = []
    if document["reason"]:
        body.append(f"<p>{esc(document['reason'])}</p>")
    for culprit in document["culprits"]:
        remedy = "switched off" if culprit["remedy"] == "off" else "kept from acting at the places below"
        body.append(f"<h{level}>{esc(culprit['event'])}: {remedy}, keeps {culprit['kept']} of "
                    f"{culprit['rewrites']} rewrites</h{level}>")
        if culprit["remedy"] == "off":
            body.append(f"<p>Why: {esc(culprit.get('reason') or 'no narrower set of places verified')}</p>")
        body.append("<ul>")
        body += [f"<li>{esc(p['binding'] or p['function'])} ({esc(p['op'])}): "
                 f"{esc(p.get('provenance') or p.get('origin') or '')}</li>" for p in culprit["places"]]
        body.append("</ul>")
    check = document.get("verification")
    if check is not None:
        body.append(f"<p>Verified on a fresh search (seed {check['seed']}, budget {esc(str(check['budget']))}): "
                    f"{esc(check['verdict'])}, score {from_json_number(check['score']):.3g}</p>")
    if document["cost"]:
        body.append(f"<h{level}>Cost of safety</h{level}><table border='1' cellpadding='4'><tr><th>build</th>"
                    "<th>median ms</th><th>weight bytes</th><th>rewrites kept</th></tr>")
        for r in shown_cost(document):
            ms = "-" if r["median_ms"] is None else f"{r['median_ms']:.4f}"
            body.append(f"<tr><td>{esc(r['build'])}</td><td>{ms}</td><td>{r['weight_bytes']}</td>"
                        f"<td>{r['rewrites_kept']}</td></tr>")
        body.append("</table>")
        body += [f"<p>{esc(note)}</p>" for note in cost_notes(document)]
    return "\n".join(body)
