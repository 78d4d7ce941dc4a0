"""The stages of a check in words: one score per line, each saying what it
compares, and each stage's word (a document's ``attribution``) said as the
summary and the HTML page say it.

A model meets the stages in order: TVM's **import** (TVM's reference against
the model's framework), a **pass** (the optimized build against the
reference), the **target** (a target's build against the same pipeline built
for plain ``llvm``) and the **lowering** (TVM's float32 reference against its
own float64 build: float32's own rounding, reported, never a failure).
"""

from __future__ import annotations

import math
from typing import Optional

from ..base.numbers import from_json_number

# stage -> what it compares
COMPARES = {"import": "TVM's reference against the model's framework",
            "pass": "the optimized build against the reference",
            "target": "the target's build against the same pipeline built for llvm",
            "lowering": "TVM's float32 reference against its own float64 build",
            "determinism": "each build run twice on the same inputs"}
# stage -> its word in a document (attribution) -> the word said
WORDS = {"import": {"agrees": "agrees", "import": "differs, TVM at fault",
                    "precision": "differs in precision, not TVM's fault", "benign": "differs, not TVM's fault",
                    "unjudged": "differs, not judged (no independent truth)", "unanswered": "not answered"},
         "pass": {"violation": "violation", "clean": "clean", "benign": "differs, benign",
                  "unjudged": "not judged"},
         "target": {"agrees": "agrees", "target": "differs, the target at fault",
                    "benign": "differs, not the target's fault", "unanswered": "not answered"},
         "lowering": {"agrees": "agrees", "differs": "differs", "unanswered": "not answered"},
         "determinism": {"agrees": "the same outputs twice", "differs": "other outputs on the same inputs"}}
LOWERING_NOTE = "how far float32 arithmetic itself is from float64 here: reported, never a failure"


def said(stage: str, word: str) -> str:
    """A stage's word as the summary says it (a word it does not know, as it is)."""
    return WORDS.get(stage, {}).get(word, word)


def tone(stage: str, word: str, at_fault) -> str:
    """How the page colours a stage's word: ``bad`` (at fault), ``note`` (a
    difference that is no failure), ``none`` (not answered), ``good``."""
    if stage in at_fault:
        return "bad"
    if word == "unanswered":
        return "none"
    return "good" if word in ("agrees", "clean") else "note"


def worst_score(scores) -> Optional[float]:
    """The largest of document scores (numbers or "inf"/"nan" strings; NaN counts as infinite), None for none."""
    values = [from_json_number(s) for s in scores if s is not None]
    values = [math.inf if math.isnan(v) else v for v in values]
    return max(values) if values else None


def _num(value) -> str:
    return "-" if value is None else ("0" if value == 0 else f"{value:.3g}")


def stage_scores(data: dict) -> list:
    """The witness's score on each question the search asked (it scored an
    input by the worse of them): (stage, score, word, what it compares), the
    import's first where the framework ran, the pass's last."""
    scores = []
    section = data.get("framework") or {}
    imported = worst_score(o["score"] for o in section.get("outputs") or [])
    if imported is not None:
        word = ("not answered: the framework's outputs are not finite" if section.get("verdict") == "unanswered"
                else "within tolerance" if imported <= 1 else "beyond tolerance")
        scores.append(("import", imported, word, f"{COMPARES['import']} ({section['framework']})"))
    passed = worst_score(m["score"] for m in data.get("metrics") or [])
    if passed is not None:
        under_test = "[" in data["configuration"]["pipeline"] + data["configuration"]["tir_pipeline"]
        reference = "the same pipeline without the pass under test" if under_test else "every optional pass skipped"
        word = ("violation" if data["verdict"] == "violation" else
                "beyond tolerance; not judged" if data["verdict"] == "unjudged" else
                "within tolerance" if passed <= 1 else "beyond tolerance; benign, as the oracle says")
        scores.append(("pass", passed, word, f"{COMPARES['pass']} ({reference})"))
    return scores


def score_lines(data: dict, indent: str) -> list:
    """``stage_scores`` as the summary's lines, one score per line; the pass's
    last, above its outputs' lines."""
    return [f"{indent}{stage} score {_num(score)} ({word}): {what}" + ("; per output:" if stage == "pass" else "")
            for stage, score, word, what in stage_scores(data)]


def stages_line(data: dict) -> str:
    """Each stage's word, said in words; the ones not explained above (by
    ``score_lines``) say what they compare."""
    attribution = data.get("attribution", {})
    explained = {"pass"} | ({"import"} if (data.get("framework") or {}).get("outputs") else set())
    parts = []
    for stage in ("import", "pass", "target", "lowering", "determinism"):
        if stage == "target" and not data.get("cpu_reference") or stage == "determinism" and not data.get(
                "nondeterminism"):
            continue
        word = attribution.get(stage, "unanswered")
        text = f"{stage}: {said(stage, word)}"
        if stage == "lowering":
            lowering = (data.get("framework") or {}).get("lowering")
            score = f"score {_num(from_json_number(lowering))}, " if lowering is not None else ""
            text += f" ({score}{COMPARES['lowering']}" + (f"; {LOWERING_NOTE})" if word == "differs" else ")")
        elif stage not in explained:
            text += f" ({COMPARES[stage]})"
        parts.append(text)
    return "  stages    " + "   ".join(parts)
