"""The terminal summary of a report."""

from __future__ import annotations

import math


def _num(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value == 0:
        return "0"
    return f"{value:.3g}"


def _score(value) -> str:
    if value is None:
        return "untestable"
    verdict = "violation" if (value == "inf" or (not isinstance(value, str) and value > 1)) else "clean"
    return f"score {_num(value)} ({verdict})"


def render_summary(data: dict) -> str:
    cfg = data["configuration"]
    model = data["model"]
    verdict = {"violation": "VIOLATION", "clean": "clean",
               "benign": "benign (differences, but the optimized build is not worse against float64)"}
    lines = [f"numguard {data['command']}: {verdict[data['verdict']]}"]
    inputs = ", ".join(
        f"{i['name']}{i['shape']} {i['dtype']} in [{_num(cfg['ranges'][i['name']]['low'])}, "
        f"{_num(cfg['ranges'][i['name']]['high'])}]"
        for i in model["inputs"]
    )
    lines.append(f"  model     {model['source']}  ({inputs})")
    lines.append(f"  pipeline  {cfg['pipeline']}   tir: {cfg['tir_pipeline']}   target: {cfg['target']}")
    search = data["search"]
    witness = data["witness"]
    where = f", saved to {witness['path']}" if witness.get("path") else ""
    lines.append(
        f"  inputs    {search['evaluations']} evaluated ({search['invalid']} invalid: reference not finite); "
        f"worst {_score(search['best_score'])}{where}"
    )
    if search.get("outputs_constant"):
        lines.append(f"  note      the outputs were the same on every one of the {search['evaluations'] - search['invalid']} "
                     "valid inputs tried: they do not depend on the inputs, so nothing here tests the compiler. "
                     "Placeholder weights (the onnx wheel's light_*.onnx)? Randomize them: "
                     "tvm_numguard.testing.light_model(name) or randomize_onnx_weights(onnx_model, seed)")
    if search.get("stopped_by") == "time":
        again = (f"--budget {search['repeat_budget']} repeats these inputs" if search.get("repeat_budget") else
                 "a seconds-only budget cannot be repeated: give a number of evaluations too, e.g. --budget 200,60s")
        lines.append(f"            the time limit stopped the search after {search['evaluations']} inputs; {again}")
    for cause in search.get("invalid_causes", []):
        lines.append(f"            invalid: {cause['op']} at {cause['binding']} got {cause['invalid']}/{cause['total']} "
                     f"elements outside {cause['domain']}")
    for m in data["metrics"]:
        lines.append(
            f"  output {m['index']}  max abs {_num(m['max_abs'])}  max rel {_num(m['max_rel'])}  "
            f"max ulp {_num(m['max_ulp'])}  p99 abs {_num(m['p99_abs'])}  "
            f"violating {m['violations']}/{math.prod(m['shape']) if m['shape'] else 1}"
        )
        lines.append(
            f"            would pass with atol >= {_num(m['min_atol'])} (rtol {_num(m['rtol'])}) "
            f"or rtol >= {_num(m['min_rtol'])} (atol {_num(m['atol'])})"
        )
        if m["nan_opt"] or m["inf_opt"]:
            lines.append(f"            non-finite in the optimized build: {m['nan_opt']} NaN, {m['inf_opt']} Inf")
        if m["finding"]:
            lines.append(f"            {m['finding']}")
    lines += _oracle_lines(data.get("oracle"))
    bis = data.get("bisection")
    if bis:
        lines += _bisection_lines(bis)
    builds = data["builds"]
    lines.append(f"  builds    {builds['builds']} in all, {_num(builds['build_seconds'])} s compiling; "
                 f"{_num(data['timings']['total_s'])} s total")
    if data["verdict"] == "violation":
        lines.append(f"  replay    {data['replay']}")
    return "\n".join(lines)


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
        lines.append(f"            error without it: {_score(bis['score_before'])}; with it: {_score(bis['score_after'])}")
        if bis["confirmed"]:
            lines.append(f"            confirmed: skipping it alone clears the violation ({_score(bis['confirm_score'])})")
        else:
            lines.append(f"            skipping it alone does not clear the violation ({_score(bis['confirm_score'])})")
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
        lines.append(f"  oracle    output {v['index']}: error against float64 {_num(v['max_err_opt'])} optimized, "
                     f"{_num(v['max_err_ref'])} reference; {v['benign']} of {v['violations']} violating elements "
                     f"benign (not worse than {_num(oracle['k'])}x the reference's)")
    if oracle["kept_float32"]:
        lines.append(f"            float32 in the oracle: {', '.join(oracle['kept_float32'])}")
    return lines
