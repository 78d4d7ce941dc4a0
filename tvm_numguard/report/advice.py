"""What to do about a violation: code that switches the blamed passes off in
the user's own build, written for the way each pass entered it, and the
command that verifies that fix.

The events come from the report's blame (bisect.result: the one rule); a pass
event ``FoldConstant#0`` is one run of the pass ``FoldConstant``. TVM's
``PassContext(disabled_pass=[...])`` switches off every run of a pass by name,
but only where a Sequential runs it (``disabled_pass_reaches`` in each blamed
event's description, from ``instrument.events``): a pass the user calls
directly, ``mod = P()(mod)``, ignores it, and the fix there is to delete the
call. Code lines are indented by ``CODE`` so a test can run them.
"""

from __future__ import annotations

import os
import shlex
import textwrap

from ..locate.bisect.result import document_blame
from ..base.flags import FLAG, as_invoked
from ..ir.instrument.schedule_rules import is_rule_event
from ..ir.targets import parse_target

SCORE_RULE = ("= |optimized - reference| / max(atol, rtol * |reference|), worst element; "
              "above 1 is a violation")
CODE = " " * 16  # the indent of a line of runnable code
NOTE = " " * 12
NOT_REACHED = ("disabled_pass reaches a pass only where a Sequential (a pipeline) runs it; a pass called "
               "directly, mod = P()(mod), ignores it")


def fix_lines(data: dict, program: str = "numguard") -> list:
    """The ``fix`` and ``verify`` lines of a violation's summary; ``program``: how
    the numguard command was invoked (the verify line starts with it)."""
    if data["verdict"] != "violation" or not data.get("bisection"):
        return []
    blame = document_blame(data["bisection"])
    cfg = data["configuration"]
    guarded = data.get("guard") is not None
    if blame.kind == "pipeline":
        lines = ["  fix       no pass could be isolated: the reference build (every optional pass skipped) is "
                 "the safe one;"]
        return lines + ([] if guarded else _guard_lines(cfg)[1:])
    bis = data["bisection"]
    events = ([bis["culprit"]] if blame.kind == "culprit" else []) + list(bis.get("minimal_set") or [])
    events = [e for e in events if e and e["id"] in blame.disable]
    guard = data.get("guard") or {}
    lines = switch_off_lines(cfg, events, guard.get("prelude") or [], guarded, guard.get("prelude_calls") or [])
    if not guarded:
        lines += _guard_lines(cfg)
        # where TVM's import differs too, that stays a finding with the pass off: the pass question is asked alone
        beside = "import" in data.get("at_fault", [])
        expect = "   (expect: clean; the import's finding stands beside it)" if beside else "   (expect: clean)"
        lines.append("  verify    " + verify_command(data, blame.disable, program, without_framework=beside) + expect)
    return wrap_lines(lines)


def wrap_lines(lines: list) -> list:
    """Summary lines with prose folded (code lines are left whole: they are pasted)."""
    return [wrapped for line in lines for wrapped in _wrap(line)]


def _wrap(line: str, width: int = 110) -> list:
    """A prose line folded at ``width`` (code lines are left whole: they are pasted)."""
    if line.startswith(CODE) or "verify" in line[:12] or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent=NOTE, break_long_words=False, break_on_hyphens=False)


def switch_off_lines(cfg: dict, events: list, prelude=(), guarded: bool = False, calls=()) -> list:
    """Code that switches the passes of ``events`` (event descriptions:
    ``id``, ``name``, ``disabled_pass_reaches``) off in the user's build of
    ``cfg`` (``pipeline``, ``target``, ``opt_level``); ``prelude``: the passes a
    guarded user applied before the compile call, and ``calls`` where their
    code did (a guard report's ``prelude_calls``); ``guarded``: the pipeline is
    the user's objects, not text to spell."""
    rules = [e for e in events if is_rule_event(e["name"])]
    events = [e for e in events if not is_rule_event(e["name"])]
    names = sorted({e["name"] for e in events})
    direct = sorted({e["name"] for e in events if not e.get("disabled_pass_reaches", True)})
    lines = []
    if [n for n in names if n not in direct]:
        lines += _disable_lines(cfg, [n for n in names if n not in direct], guarded)
    if direct:
        lines += _direct_lines(direct, set(prelude), lines == [], calls)
    if rules:
        lines += _rule_lines(cfg, sorted(e["id"] for e in rules), lines == [], guarded)
    return lines


def _rule_lines(cfg: dict, ids: list, first: bool, guarded: bool) -> list:
    """A fix of numguard's that switches one dlight rule off for one kernel each
    (schedule_rules): no PassContext option reaches a rule, let alone one kernel."""
    said = " and ".join(f"{rule_name} on {kernel}" for rule_name, _, kernel in
                        (i.rpartition("#")[0].partition("@") for i in ids))
    head = "  fix       " if first else NOTE + "and "
    lines = [head + f"switch {said} off, and keep every other schedule (each such kernel gets the next "
             "rule that schedules it; no PassContext option reaches one rule on one kernel):"]
    pipeline = None if guarded else pipeline_code(cfg["pipeline"])
    lines += [CODE + line for line in setup_code(cfg["target"], pipeline)]
    quoted = ", ".join(repr(i) for i in ids)
    lines += [CODE + "import tvm_numguard",
              CODE + f"with tvm_numguard.fixes.switch_off({quoted}).pass_context(opt_level={cfg['opt_level']}):",
              CODE + "    executable = tvm.compile(mod, target, relax_pipeline=pipeline)"
              + ("  # your relax_pipeline" if guarded else "")]
    return lines


def _disable_lines(cfg: dict, names: list, guarded: bool) -> list:
    """disabled_pass around the user's compile, and dropping the passes from a pipeline given as text."""
    quoted = ", ".join(f'"{n}"' for n in names)
    pipeline = None if guarded else pipeline_code(cfg["pipeline"])
    lines = [f"  fix       switch {' and '.join(names)} off in your own build (every run of "
             f"{'it' if len(names) == 1 else 'them'}):"]
    lines += [CODE + line for line in setup_code(cfg["target"], pipeline)]
    lines += [CODE + f"with tvm.transform.PassContext(opt_level={cfg['opt_level']}, disabled_pass=[{quoted}]):",
              CODE + "    executable = tvm.compile(mod, target, relax_pipeline=pipeline)"]
    if guarded:
        lines[-1] += "  # your relax_pipeline"
    dropped = None if guarded else pipeline_code(cfg["pipeline"], drop=names)
    if dropped is not None and dropped != pipeline:
        lines += [NOTE + f"or drop {', '.join(names)} from the relax_pipeline you pass:",
                  CODE + f"pipeline = {dropped}",
                  CODE + "executable = tvm.compile(mod, target, relax_pipeline=pipeline)"]
    lines.append(NOTE + f"({NOT_REACHED}: where you call {' or '.join(names)} yourself, delete that call)")
    return lines


def _direct_lines(names: list, prelude: set, first: bool, calls=()) -> list:
    where = " and ".join(f"{n} ({'applied before the compile call' if n in prelude else 'called directly'})"
                         for n in names)
    head = "  fix       " if first else NOTE + "and "
    lines = [head + f"delete the call of {where} from your code;",
             NOTE + f"{NOT_REACHED}, so it cannot switch {'it' if len(names) == 1 else 'them'} off:"]
    for name in names:
        code = _call_code(name, calls)
        lines += [CODE + line for line in code] if code else [NOTE + f"(the call of {name} in your code)"]
    return lines


def _call_code(name: str, calls) -> list:
    """The lines of the user's code that call the pass ``name``, as written
    where the guard could read them (``prelude_calls``), else as the pass
    object's qualified name says it (``relax.transform.X``, ``module.Class``)."""
    lines = []
    for call in calls:
        if call["pass"] != name:
            continue
        at = f"{os.path.basename(call['file'])}:{call['line']}" if call["code"] else None
        if call["code"]:
            line = f"{call['code']}  # delete this call ({at})"
        elif call["qualname"]:
            line = f"mod = {call['qualname']}()(mod)  # delete this call (or its like, with arguments)"
        else:
            continue
        if line not in lines:
            lines.append(line)
    if not lines and callable(getattr(_relax_transform(), name, None)):
        lines.append(f"mod = relax.transform.{name}()(mod)  # delete this call (or its like, with arguments)")
    return lines


def _relax_transform():
    from tvm.relax import transform

    return transform


def _guard_lines(cfg: dict) -> list:
    ranges = list(cfg["ranges"].values())
    bounds = f"low={ranges[0]['low']!r}, high={ranges[0]['high']!r}" if ranges and all(
        r == ranges[0] for r in ranges) else "ranges={...}"
    return [NOTE + "or let numguard find and switch off what is unsafe, verified on fresh inputs:",
            CODE + f"with tvm_numguard.guard({bounds}):",
            CODE + "    executable = tvm.compile(mod, target, relax_pipeline=pipeline)  # your pipeline as written"]


def setup_code(target: str, pipeline: str | None) -> list:
    """The lines of printed code that import TVM and make ``target`` and, when
    given, ``pipeline`` (a ``pipeline_code`` expression)."""
    lines = ["import tvm", "from tvm import relax"]
    if pipeline is not None and "tvm_numguard" in pipeline:  # a part only its text names: numguard reads it
        lines.append("import tvm_numguard.ir.pipeline")
    # the form TVM 0.27 takes (the old "cuda -arch=sm_90" it refuses), with the arch numguard used
    config = parse_target(target).config
    lines.append(f"target = tvm.target.Target({config!r})")
    return lines + ([f"pipeline = {pipeline}"] if pipeline is not None else [])


def pipeline_code(text: str, drop=()) -> str:
    """The Python expression that builds the Relax pipeline ``text`` as numguard
    runs it (parts in order, TVM's VM lowering appended when no part is
    ``default``), less the passes named in ``drop``: TVM calls where every
    part has one, else numguard's own reading of the text (a ``module:callable``
    part is the user's code, which only its text names here)."""
    parts = [p.strip() for p in text.split(",")]
    kept = [p for p in parts if p.strip("[]").strip() not in drop]
    code = []
    for part in (p.strip("[]").strip() for p in kept):
        if part == "zero":
            code.append('relax.get_pipeline("zero")')
        elif part == "default":
            code.append("relax.get_default_pipeline(target)")
        elif part.isidentifier():
            code.append(f"relax.transform.{part}()")
        else:
            return f"tvm_numguard.ir.pipeline.relax_pipeline({','.join(kept)!r}, target)"
    if "default" not in parts:
        code.append('relax.get_pipeline("default")')
    return f"tvm.transform.Sequential([{', '.join(code)}])"


def verify_command(data: dict, events, program: str = "numguard", without_framework: bool = False) -> str:
    """The replay line with ``--disable`` for each event: the same check with the fix applied;
    ``without_framework``: the pass question alone (``--no-framework``), where the import differs too."""
    words = shlex.split(data["replay"])
    for event_id in events:
        if event_id not in words:
            words += [FLAG["disable"], event_id]
    if without_framework and FLAG["framework"] not in words:
        words.append(FLAG["framework"])
    return as_invoked(" ".join(shlex.quote(w) for w in words), program)
