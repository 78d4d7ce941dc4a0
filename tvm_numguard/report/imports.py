"""The import stage in the terminal summary: TVM's reference against the
model's own framework (the document's ``framework`` and ``attribution``)."""

from __future__ import annotations

from ..base.numbers import exceeds
from .stages import stages_line

# the words of the attribution, as the summary says them
IMPORT_WORDS = {"agrees": "agrees with the framework",
                "import": "differs from the framework, and TVM is the side at fault",
                "precision": "differs from the framework in precision: TVM computes the model's narrow float where "
                             "the framework computes float32 (not TVM's fault; the widening below keeps it in float32)",
                "benign": "differs from the framework, not by TVM's fault (at each differing element, against the "
                          "float64 truth it is within the tolerance or that element's conditioning (its inputs' and "
                          "its sums' roundings), or not over 32 times as far off as the framework; or a proven flip "
                          "of a discontinuous operator)",
                "unjudged": "differs from the framework where no independent float64 truth reaches, so nothing "
                            "can excuse it (not judged: no independent truth)",
                "unanswered": "not answered"}
CPU_WORDS = {"agrees": "agrees with the same pipeline built for llvm",
             "benign": "differs from the LLVM build, not by the target's fault (against the float64 truth it is "
                       "not worse: another rounding)",
             "target": "differs from the LLVM build, and the target's build is the side at fault",
             "unanswered": "not answered"}
DIMS_WORDS = {"static": "", "symbolic": "dynamic dims kept symbolic at import (as the model is compiled), bound to "
                                        "the shapes run after",
              "fixed": "dynamic dims fixed at import to the shapes run (--fix-shapes)"}


def headline(data: dict) -> str:
    """The summary's first words: which stages are at fault, each said once."""
    at_fault = data.get("at_fault", [])
    nondeterministic = data.get("nondeterminism")
    if "import" in at_fault:
        section = data.get("framework") or {}
        origin = section.get("origin")
        where = f" of {origin['node']}" if origin else ""
        also = (" (and a pass: see the culprit)" if "pass" in at_fault else
                "; its build gives other outputs on the same inputs, so no pass is judged" if nondeterministic else "")
        blamed = component_at_fault(section)
        if blamed is not None:
            return component_headline(blamed, origin) + also
        if section.get("verdict") == "unjudged":
            return (f"IMPORT NOT JUDGED: TVM's import{where} computes other numbers than the model's framework, and "
                    f"no independent truth says which is right{also}")
        return f"IMPORT: TVM's import{where} computes other numbers than the model's framework{also}"
    if nondeterministic:
        builds = nondeterministic["builds"]
        which = f"the {' and the '.join(builds)} build{'s give' if len(builds) > 1 else ' gives'}"
        node = f", first at {nondeterministic['node']}" if nondeterministic.get("node") else ""
        return f"NONDETERMINISTIC: {which} other outputs on the same inputs{node}: nothing is judged against it"
    if "target" in at_fault:
        also = " (and a pass: see the culprit)" if "pass" in at_fault else ""
        return f"TARGET: the {data['cpu_reference']['target']} build computes other numbers than the LLVM build{also}"
    excused = EXCUSED.get(str((data.get("framework") or {}).get("verdict")))
    if data["verdict"] == "clean" and excused:  # a bare "clean" hid an import score far past 1 (a user's trial)
        return f"clean (TVM's reference differs from the model's framework, {excused})"
    return ""


# an import difference that is no failure, as the headline of a clean run says it
EXCUSED = {"benign": "not by TVM's fault: benign, see 'framework'",
           "precision": "because it computes in the model's narrow float: precision, see 'widen'"}


# a component's headline: what is at fault, in TVM's words
COMPONENT_HEADLINES = {
    "conversion": "CONVERSION: TVM's frontend converts {node} into Relax that computes other numbers than the node "
                  "({subject})",
    "legalization": "LEGALIZATION: {subject} computes other numbers than the operator means, at {node}",
    "codegen": "CODEGEN: {subject} computes other numbers than the intrinsic, at {node}",
}


def component_at_fault(section: dict):
    """The first component verdict at fault in the import section's placement (None: none named)."""
    placement = section.get("placement") or {}
    if section.get("verdict") not in ("import", "unjudged"):
        return None
    return next((v for v in placement.get("verdicts", []) if v["outcome"] == "at fault"), None)


def component_headline(verdict: dict, origin) -> str:
    node = origin["node"] if origin else "a node of the model"
    return COMPONENT_HEADLINES[verdict["component"]].format(node=node, subject=verdict["subject"])


def placement_lines(section: dict) -> list:
    """Each component's verdict on the node named: which part of TVM is at fault, and by what truth."""
    placement = section.get("placement")
    if not placement:
        return []
    lines = [f"  placed    at {placement['node']}, on TVM's own values of its arguments:"]
    for verdict in placement["verdicts"]:
        word = verdict["outcome"].upper() if verdict["outcome"] in ("at fault", "unjudged") else verdict["outcome"]
        lines.append(f"    {verdict['component']:12s} {word}: {verdict['subject']}")
        lines.append(f"                 {verdict['reason']}")
    return lines


def cpu_lines(data: dict) -> list:
    """The target's build against the LLVM build (targets but plain llvm)."""
    section = data.get("cpu_reference")
    if not section:
        return []
    lines = [f"  cpu       the {section['target']} build {CPU_WORDS[section['verdict']]}"]
    for extra in (section.get("reason"), section.get("truth") and f"truth: {section['truth']}"):
        if extra:
            lines.append(f"            {extra}")
    return lines + [_output_line(out, f"the {section['target']} build", "the LLVM build")
                    for out in section.get("outputs", []) if exceeds(out["score"])]


def import_lines(data: dict) -> list:
    """What the framework said, where TVM's import went wrong, and what to do about it."""
    section = data.get("framework")
    if not section:
        return []
    lines = [f"  framework {section['framework']}: TVM's reference {IMPORT_WORDS[section['verdict']]}"]
    if section.get("reason"):
        lines.append(f"            {section['reason']}")
    if section.get("truth"):
        lines.append(f"            truth: {section['truth']}"
                     + (f" ({section['truth_note']})" if section.get("truth_note") else ""))
    for out in section.get("outputs", []):
        if exceeds(out["score"]):
            lines.append(_output_line(out))
    origin = section.get("origin")
    if origin:
        lines.append(f"  first     {_origin_text(origin)}")
        if section["verdict"] in ("import", "unjudged") and section.get("origin_note"):
            lines.append(f"            {section['origin_note']}")  # why this node (amplified, judged alone)
    elif section["verdict"] in ("import", "unjudged") and section.get("origin_note"):
        lines.append(f"  first     not named: {section['origin_note']}")
    lines += placement_lines(section)
    lines.append(stages_line(data))
    if section["verdict"] in ("import", "unjudged"):
        lines += advice_lines(section)
    if section["verdict"] == "precision":
        lines += precision_lines(section)
    return lines


def precision_lines(section: dict) -> list:
    """The widening, as a user applies it: on numguard's command line and before tvm.compile."""
    widened = section.get("widened") or []
    if not widened:
        return []
    # one name in both lines: the binding of main, which keep_float32 takes (and --keep-float32 too);
    # the model's own name beside it, where it has another
    names = list(dict.fromkeys(e["binding"] for e in widened))
    lines = [f"  widen     keep {'it' if len(widened) == 1 else 'them'} in float32 (verified on the inputs above): "
             f"--keep-float32 {','.join(names)}",
             f"            before tvm.compile: mod = tvm_numguard.keep_float32(mod, {names!r})"]
    own = [f"{e['binding']} is the model's '{e['key']}'" for e in widened if e["key"] != e["binding"]]
    if own:
        lines.append(f"            (bindings of main as TVM's frontend imports the model: {'; '.join(own)})")
    return lines


def _output_line(out: dict, mine: str = "TVM", theirs: str = "the framework") -> str:
    if out["shape_tvm"] != out["shape_framework"]:
        return (f"            output {out['index']}: {mine} shape {out['shape_tvm']}, "
                f"{theirs}'s {out['shape_framework']}")
    worst = out.get("worst") or {}
    errors = ""
    if worst.get("err_tvm") is not None:
        errors = (f"; at {worst.get('index')} the truth is {_num(worst.get('truth'))}: {mine} is off by "
                  f"{_num(worst['err_tvm'])}, {theirs} by {_num(worst.get('err_framework'))}")
    faults = "" if out.get("tvm_worse") is None else f" ({out['tvm_worse']} at {mine}'s fault)"
    unjudged = f" ({out['unjudged']} with no truth)" if out.get("unjudged") else ""
    return (f"            output {out['index']}: {out['violations']} elements differ{faults}{unjudged}, max abs "
            f"{_num(out['max_abs'])}, score {_num(out['score'])}{errors}")


def _origin_text(origin: dict) -> str:
    if origin["shape_tvm"] != origin["shape_framework"]:
        return (f"{origin['node']}: TVM computes shape {origin['shape_tvm']}, the model "
                f"{origin['shape_framework']}")
    worst = origin.get("worst") or {}
    return (f"{origin['node']} (TVM makes {origin.get('op') or 'no operator'} of it): TVM computes "
            f"{_num(worst.get('tvm'))} where the framework computes {_num(worst.get('framework'))} "
            f"at {worst.get('index')} (score {_num(origin['score'])})")


def advice_lines(section: dict) -> list:
    origin = section.get("origin")
    blamed = component_at_fault(section)
    node = origin["node"] if origin else "the model"
    if blamed is None:
        placement = section.get("placement") or {}
        unjudged = [v for v in placement.get("verdicts", []) if v["outcome"] == "unjudged"]
        which = ("; which part of TVM is not judged: " + "; ".join(f"{v['component']}: {v['reason']}"
                                                                  for v in unjudged)) if unjudged else ""
        return [f"  advice    no pass to switch off: TVM computes {node} differently{which}. Keep that operator out "
                "of the model (or compute it another way) until TVM fixes it, and report it upstream with the "
                "witness and this report."]
    advice = COMPONENT_ADVICE[blamed["component"]].format(subject=blamed["subject"], node=node)
    lines = [f"  advice    no pass to switch off: {advice}"]
    if blamed.get("script"):
        lines.append("            a standalone script (stock TVM and numpy, no numguard) shows it: the command line "
                     "writes it beside the witness; the JSON report keeps it (framework.placement.verdicts[].script)")
    return lines


COMPONENT_ADVICE = {
    "conversion": "TVM's frontend is at fault ({subject}, its conversion of {node}). Keep that operator out of the "
                  "model (or compute it another way) until TVM fixes it, and report it upstream.",
    "legalization": "LegalizeOps's kernel is at fault ({subject}): every model that uses the operator gets it. "
                    "Register a correct legalization for your build (tvm.ir.register_op_attr with 'FLegalize'), or "
                    "keep the operator out of the model, and report it upstream against TOPI.",
    "codegen": "the target's lowering of a math intrinsic is at fault ({subject}): every kernel that calls it gets "
               "it. Report it upstream (src/target/ intrinsic rules); meanwhile keep the operator out of the model.",
}


def _num(value) -> str:
    if value is None:
        return "?"
    if isinstance(value, str):
        return value
    return f"{value:.6g}"
