"""The terminal summary of a report."""

from __future__ import annotations

import math

from ..locate.bisect.result import document_blame
from ..locate.searches import ONE_POINT
from ..base.numbers import exceeds
from .advice import SCORE_RULE, as_invoked, fix_lines
from .imports import DIMS_WORDS, cpu_lines, headline, import_lines
from .stages import score_lines


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut between words (the
    separators of TVMScript count: ``, ( =``) and marked with an ellipsis."""
    if len(text) <= width:
        return text
    cut = text[:width - 4]
    at = max(cut.rfind(c) for c in " ,(=")
    return (cut[:at + 1] if at > width // 2 else cut).rstrip() + " ..."


def num(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value == 0:
        return "0"
    return f"{value:.3g}"


def span(bounds: dict) -> str:
    """``[low, high]`` with as many digits as tell them apart ([1000, 1001], not [1e+03, 1e+03])."""
    low, high = bounds["low"], bounds["high"]
    if isinstance(low, str) or isinstance(high, str) or low == high:
        return f"[{num(low)}, {num(high)}]"
    digits = 3
    while digits < 17 and f"{low:.{digits}g}" == f"{high:.{digits}g}":
        digits += 1
    return f"[{0 if low == 0 else format(low, f'.{digits}g')}, {0 if high == 0 else format(high, f'.{digits}g')}]"


def counted(n: int, noun: str) -> str:
    """``1 place``, ``3 places``: a count said, not ``place(s)``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def score_text(value) -> str:
    if value is None:
        return "untestable"
    verdict = "violation" if exceeds(value) else "clean"
    return f"score {num(value)} ({verdict})"


def _search_lines(data: dict) -> list:
    """What the search evaluated, where the witness went, its score on each
    question asked (one per line), and what made the search stop or fail."""
    search, witness = data["search"], data["witness"]
    where = f", saved to {witness['path']}" if witness.get("path") else ""
    scores = score_lines(data, " " * 12)
    which = "the worst of them" + (" on either score below" if len(scores) > 1 else "")
    if search["evaluations"] == 1:
        which = "that input"
    lines = [f"  inputs    {_evaluated(search, _framework_watched(data))}; the witness: {which}{where}"]
    if search.get("stopped_by") == ONE_POINT:
        lines.append("            the range holds one input (each input's low and high are the same value of its "
                     "dtype): it was evaluated once")
    lines += scores
    if search.get("outputs_constant"):
        lines.append(f"  note      the outputs were the same on every one of the "
                     f"{search['evaluations'] - search['invalid']} "
                     "valid inputs tried: they do not depend on the inputs, so nothing here tests the compiler. "
                     "Placeholder weights (the onnx wheel's light_*.onnx)? Randomize them: "
                     "tvm_numguard.testing.light_model(name) or randomize_onnx_weights(onnx_model, seed)")
    if search.get("stopped_by") == "time":
        again = (f"--budget {search['repeat_budget']} repeats these inputs" if search.get("repeat_budget") else
                 "a seconds-only budget cannot be repeated: give a number of evaluations too, e.g. --budget 200,60s")
        lines.append(f"            the time limit stopped the search after {search['evaluations']} inputs; {again}")
    for cause in search.get("invalid_causes", []):
        lines.append(f"            invalid: {cause['op']} at {cause['binding']} "
                     f"got {cause['invalid']}/{cause['total']} "
                     f"elements outside {cause['domain']}")
    return lines


def _metric_lines(metrics: list) -> list:
    """How each output differs, and the tolerances it would pass with."""
    lines = []
    for m in metrics:
        lines.append(
            f"  output {m['index']}  max abs {num(m['max_abs'])}  max rel {num(m['max_rel'])}  "
            f"max ulp {num(m['max_ulp'])}  p99 abs {num(m['p99_abs'])}  "
            f"violating {m['violations']}/{math.prod(m['shape']) if m['shape'] else 1}"
        )
        lines.append(
            f"            would pass with atol >= {num(m['min_atol'])} (rtol {num(m['rtol'])}) "
            f"or rtol >= {num(m['min_rtol'])} (atol {num(m['atol'])})"
        )
        if m.get("own_scale") is not None:
            lines.append(f"            judged at its own scale: every reference value is at most "
                         f"{num(m['own_scale'])}, "
                         f"below the default atol, so atol is {num(m['atol'])} (rtol times the largest value)")
        if m["nan_ref"] or m["inf_ref"]:
            lines.append(f"            non-finite in the reference: {m['nan_ref']} NaN, {m['inf_ref']} Inf (no pass is "
                         "judged against it)")
        if m["nan_opt"] or m["inf_opt"]:
            lines.append(f"            non-finite in the optimized build: {m['nan_opt']} NaN, {m['inf_opt']} Inf")
        if m["finding"]:
            lines.append(f"            {m['finding']}")
    return lines


def render_summary(data: dict, program: str = "numguard") -> str:
    """``program``: how the numguard command was invoked (replay and verify lines start with it)."""
    cfg = data["configuration"]
    model = data["model"]
    verdict = {"violation": "VIOLATION", "clean": "clean",
               "benign": "benign (differences, but the optimized build is not worse against float64)",
               "unjudged": f"not judged: {data.get('pass_note')}"}
    head = f"numguard {data['command']}: {headline(data) or verdict[data['verdict']]}"
    if data["verdict"] == "violation" and data.get("bisection"):
        head += f": {document_blame(data['bisection']).describe()} changes what the model computes"
    lines = [head]
    inputs = ", ".join(f"{i['name']}{i['shape']} {i['dtype']} in {span(cfg['ranges'][i['name']])}"
                       for i in model["inputs"])
    lines.append(f"  model     {model['source']}  ({inputs})")
    if DIMS_WORDS.get(model.get("dims", "static")):
        lines.append(f"            {DIMS_WORDS[model['dims']]}")
    disabled = f"   disabled: {', '.join(cfg['disable'])}" if cfg.get("disable") else ""
    lines.append(f"  pipeline  {cfg['pipeline']}   tir: {cfg['tir_pipeline']}   target: {cfg['target']}{disabled}")
    if cfg.get("fix"):
        lines.append(f"  fix       applied: {fix_line(cfg['fix'])}")
    lines += _search_lines(data)
    lines += _metric_lines(data["metrics"])
    lines.append(f"  score     {SCORE_RULE}")
    lines += _range_check_lines(data.get("range_check"))
    lines += _oracle_lines(data.get("oracle"))
    lines += import_lines(data)
    lines += cpu_lines(data)
    lines += _determinism_lines(data)
    bis = data.get("bisection")
    if bis:
        lines += _bisection_lines(bis)
    builds = data["builds"]
    lines.append(f"  builds    {builds['builds']} in all, {num(builds['build_seconds'])} s compiling; "
                 f"{num(data['timings']['total_s'])} s total")
    lines += _untestable_lines(data.get("workers"))
    lines += fix_lines(data, program)
    if data.get("at_fault") or data["verdict"] == "violation":
        lines.append(f"  replay    {as_invoked(data['replay'], program)}")
    return "\n".join(lines)


def _determinism_lines(data: dict) -> list:
    """A build that gave other outputs on the same inputs, where first, and why nothing is judged against it."""
    found = data.get("nondeterminism")
    if not found:
        return []
    from ..judge.determinism import Nondeterminism

    return [f"  determinism {Nondeterminism.from_json(found).text()}",
            "            a kernel that reads memory it does not own (an index out of bounds) or races gives this; "
            "no pass is judged, no fix is printed"]


def _framework_watched(data: dict) -> bool:
    section = data.get("framework") or {}
    return section.get("verdict", "unanswered") != "unanswered"


def _evaluated(search: dict, framework: bool = False) -> str:
    """How many inputs the search evaluated (every search's, not only the best
    one's), and how many said nothing: TVM's reference not finite there, nor
    (with a framework) the model's own run: outside the model's domain. A
    reference that is not finite where the framework is finite is no invalid
    input but an import difference (the framework line says so)."""
    why = "not finite in TVM's reference nor in the framework" if framework else "reference not finite"
    runs = search.get("searches") or []
    if len(runs) > 1:
        return (f"{sum(r['evaluations'] for r in runs)} evaluated by {len(runs)} searches "
                f"({sum(r['invalid'] for r in runs)} invalid: {why})")
    return f"{search['evaluations']} evaluated ({search['invalid']} invalid: {why})"


def _range_check_lines(section) -> list:
    """The check's warnings about the pipeline, and whether the violation lies at one."""
    if not section or not section["warnings"]:
        return []
    from .range_check import warning_line

    warnings = section["warnings"]
    lines = [f"  check     {len(warnings)} operator{'s' if len(warnings) > 1 else ''} of the pipeline's module "
             f"can misbehave in the range (numguard check):"]
    lines += [f"            {warning_line(w)}" for w in warnings[:3]]
    if len(warnings) > 3:
        lines.append(f"            ... and {len(warnings) - 3} more (the report's range_check)")
    reached = [w for w in warnings if w["position"] in section["reached"]]
    if reached:
        names = ", ".join(f"{w['binding']} ({w['op']})" for w in reached)
        lines.append(f"            the witness reaches {names}: the violation lies where check warned")
    return lines


def _untestable_lines(workers) -> list:
    """The configurations that could not be tested, the first few with why."""
    untestable = (workers or {}).get("untestable") or []
    if not untestable:
        return []
    lines = [f"  untestable {len(untestable)} configuration{'s' if len(untestable) > 1 else ''} "
             f"({workers['mode']}, {workers['jobs']} job{'s' if workers['jobs'] > 1 else ''}):"]
    lines += [f"            {u['configuration']}: {u['reason']}" for u in untestable[:3]]
    if len(untestable) > 3:
        lines.append(f"            ... and {len(untestable) - 3} more (the report's workers.untestable)")
    return lines


def _bisection_lines(bis: dict) -> list:
    lines = []
    status = bis["status"]
    n = bis["optional_events"]
    if status == "nondeterministic":
        return ["  culprit   none blamed: the same build gives different outputs on the same inputs"]
    culprit = bis.get("culprit")
    if culprit:
        label = "culprit  " if status == "culprit" else "first bad"
        lines.append(f"  {label} {culprit['id']}  [{culprit['level']}, opt_level {culprit['opt_level']}]")
        lines.append(f"            error without it: {score_text(bis['score_before'])}")  # one score per line
        lines.append(f"            error with it: {score_text(bis['score_after'])}")
        if bis["confirmed"]:
            lines.append(f"            confirmed: skipping it alone clears the violation "
                         f"({score_text(bis['confirm_score'])})")
        elif bis["confirmed"] is None:
            lines.append(f"            skipping it alone cannot be tested: {bis.get('confirm_reason')}")
        else:
            lines.append(f"            skipping it alone does not clear the violation "
                         f"({score_text(bis['confirm_score'])})")
    elif bis["suspects"]:
        lines.append(f"  suspects  {', '.join(bis['suspects'])} (configurations between them do not build)")
    if status == "minimal_set":
        ids = ", ".join(e["id"] for e in bis["minimal_set"])
        partial = "" if bis.get("minimal_set_complete", True) else " (test budget ran out; may not be minimal)"
        lines.append(f"  disable   {{{ids}}}: the minimal set whose skipping clears it{partial}")
    log2 = math.log2(n) if n > 1 else 0
    lines.append(f"  bisection {bis['builds']} builds ({bis['strategy']}) over {n} optional events "
                 f"(log2 {log2:.1f}), {bis['changed_events']} of which changed the module")
    return lines


def _oracle_lines(oracle) -> list:
    if not oracle:
        return []
    if not oracle["available"]:
        return [f"  oracle    unavailable ({oracle['reason']}); every violation counts"]
    lines = []
    for v in oracle["outputs"]:
        lines.append(f"  oracle    output {v['index']}: error against float64 {num(v['max_err_opt'])} optimized, "
                     f"{num(v['max_err_ref'])} reference; {v['benign']} of {v['violations']} violating elements "
                     f"benign (not worse than {num(oracle['k'])}x the reference's)")
    if oracle["kept_float32"]:
        lines.append(f"            float32 in the oracle: {', '.join(oracle['kept_float32'])}")
    return lines


def trace_lines(traced: dict) -> str:
    """The terminal lines of a trace: the passes that added error, the origin, the graph's size."""
    lines = []
    adding = [r for r in traced["passes"] if r["local"] and exceeds(r["local"]["score"], 0.0)]
    lines.append(f"  passes    {len(traced['passes'])} measured, {len(adding)} added error"
                 + (": " + ", ".join(f"{r['id']} ({num(r['local']['score'])})" for r in adding[:6]) if adding else ""))
    origin = traced.get("origin")
    if origin:
        where = f"; in your model: {origin['provenance']}" if origin.get("provenance") else ""
        lines.append(f"  origin    {origin['value']} ({origin['op']}, kernel {origin['kernel']}), "
                     f"score {num(origin['score'])}{origin_rule(origin)}{where}")
        lines.append(f"            before the pass: {shorten(origin['binding_before'], 100)}")
        lines.append(f"            after the pass: {shorten(origin['binding_after'], 100)}")
    else:
        lines.append(f"  origin    none: {traced.get('reason')}")
    graph, matching = traced["graph"], traced.get("matching") or {}
    on_path = sum(1 for n in graph["nodes"] if n["on_path"])
    lines.append(f"  spread    {len(graph['nodes'])} values on the error's way, {on_path} on a path to a "
                 f"violating output; {matching.get('matched', 0)}/{matching.get('values', 0)} values matched")
    return "\n".join(lines)


def origin_rule(origin: dict) -> str:
    """How the origin was named: where the error starts growing, or (where no changed value adds a
    material error, or the changes cannot be told) the first value past the tolerance."""
    if origin.get("rule") == "grows":
        return f" (its arguments {num(origin['arguments_score'])}: the error starts here)"
    if origin.get("rule"):
        return " (the first value past the tolerance: no value the pass changed adds a material error)"
    return ""


def searches_line(results: list) -> str:
    """The input searches of ``numguard search`` (SearchResults), one line
    each: the best score each found (an input's score: the worse of the
    questions asked, pass and import)."""
    return "\n".join(["  searches  each search's best input (its score: the worse of its pass and import scores):"]
                     + [f"            {r.search}: best score {num(r.best_score)} in {r.evaluations} evaluations "
                        f"({r.invalid} invalid)" for r in results])


def event_table(rows: list, nested_hidden: bool = False) -> str:
    """The table of ``numguard passes``."""
    header = f"{'#':>4}  {'event id':<44} {'level':<5} {'opt':>3}  {'kind':<8} {'changed':<7} {'ms':>8}"
    lines = [header, "-" * len(header)]
    for r in rows:
        kind = ("wrapper" if r["wrapper"] else
                ("required" if r["required"] else ("optional" if r["optional"] else "nested")))
        changed = {True: "yes", False: "no", None: "-"}[r["changed"]]
        lines.append(f"{r['index']:>4}  {r['id']:<44} {r['level']:<5} {r['opt_level']:>3}  {kind:<8} {changed:<7} "
                     f"{r['duration_s'] * 1000:>8.1f}")
    optional = sum(1 for r in rows if r["optional"])
    lines.append(f"{len(rows)} events ran, {optional} optional (a bisection may skip them)"
                 + ("; nested events hidden (--all shows them)" if nested_hidden else ""))
    failed = next((r for r in rows if "build_error" in r), None)
    if failed is not None:
        lines.append(f"the build stopped in {failed['id']} or after it: {failed['build_error']}")
        lines.append("(numguard bisect, with the same pipeline, names the pass that breaks the build)")
    return "\n".join(lines)


def fix_line(fix: dict) -> str:
    """A report's ``configuration.fix`` in one line: where it came from, what it keeps out where."""
    parts = []
    for culprit in fix["culprits"]:
        if culprit["remedy"] in ("off", "pass"):  # "pass": fix files before 0.2
            parts.append(f"{culprit['event']} switched off")
        else:
            parts.append(f"{culprit['event']} kept from acting at "
                         + ", ".join(p["binding"] or p["function"] for p in culprit["places"]))
    unverified = "; NOT verified when numguard fix wrote it" if fix.get("verified") is False else ""
    return "; ".join(parts) + (f" ({fix['file']}{unverified})" if fix.get("file") else unverified)
