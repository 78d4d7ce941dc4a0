"""What to do about a violation: the code that switches the blamed passes off
in the user's own build, and the command that verifies that fix.

The events come from the report's blame (bisect.result: the one rule); a pass
event ``FoldConstant#0`` is one run of the pass ``FoldConstant``, and TVM's
``PassContext(disabled_pass=[...])`` switches off every run of a pass by name.
"""

from __future__ import annotations

import shlex

from ..bisect.result import document_blame

SCORE_RULE = ("= |optimized - reference| / max(atol, rtol * |reference|), worst element; "
              "above 1 is a violation")


def fix_lines(data: dict) -> list:
    """The ``fix`` and ``verify`` lines of a violation's summary (none for a guard:
    it switched the passes off itself, and says so)."""
    if data["verdict"] != "violation" or data["command"] == "guard" or not data.get("bisection"):
        return []
    blame = document_blame(data["bisection"])
    cfg = data["configuration"]
    ranges = list(cfg["ranges"].values())
    bounds = f"low={ranges[0]['low']!r}, high={ranges[0]['high']!r}" if ranges and all(
        r == ranges[0] for r in ranges) else "ranges={...}"
    guard = ["            or let numguard find and switch off what is unsafe, verified on fresh inputs:",
             f"                with tvm_numguard.guard({bounds}):",
             "                    executable = tvm.compile(mod, target)"]
    if blame.kind == "pipeline":
        return ["  fix       no pass could be isolated: the reference build (every optional pass skipped) is "
                "the safe one;"] + guard[1:]
    names = sorted({event_id.split("#")[0] for event_id in blame.disable})
    parts = [p.strip() for p in cfg["pipeline"].split(",")]
    quoted = ", ".join(f'"{n}"' for n in names)
    lines = [f"  fix       switch {' and '.join(names)} off in your own build (every run of "
             f"{'it' if len(names) == 1 else 'them'}):",
             f"                with tvm.transform.PassContext(opt_level={cfg['opt_level']}, disabled_pass=[{quoted}]):",
             "                    executable = tvm.compile(mod, target)"]
    added = [n for n in names if n in parts]
    if added:
        lines.append(f"            or drop {', '.join(added)} from the relax_pipeline you pass;")
    lines += guard
    lines.append("  verify    " + verify_command(data, blame.disable) + "   (expect: clean)")
    return lines


def verify_command(data: dict, events) -> str:
    """The replay line with ``--disable`` for each event: the same check with the fix applied."""
    words = shlex.split(data["replay"])
    for event_id in events:
        if event_id not in words:
            words += ["--disable", event_id]
    return " ".join(shlex.quote(w) for w in words)
