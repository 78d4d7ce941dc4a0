"""Planted numerical bugs: each module's ``make_pass`` is a pass with a known
bug, ``make_model`` a model it shows on; ``manifest.json`` says where.
``under_test(entry)`` is a manifest entry's configuration with the planted
pass as the pass under test (its parts replaced by ``[module:make_pass]``)."""

import json
import os


def manifest() -> list:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest.json")) as f:
        return json.load(f)


def under_test(entry: dict) -> tuple:
    """(pipeline, tir_pipeline) of ``entry`` with its own passes bracketed as one pass under test."""
    own = entry["module"] + ":"

    def bracket(text: str) -> str:
        parts = text.split(",")
        mine = [k for k, p in enumerate(parts) if p.strip().startswith(own)]
        if not mine:
            return text
        kept = [p for k, p in enumerate(parts) if k not in mine[1:]]
        kept[mine[0]] = f"[{entry['module']}:make_pass]"
        return ",".join(kept)

    return bracket(entry["pipeline"]), bracket(entry["tir_pipeline"])
