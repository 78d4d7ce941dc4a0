"""The planted-bug table: every patch of patches/ as the pass under test over a whole corpus.

For each patch, at its manifest range, over every model of the corpus
(default: onnx-node, tiny, patches, zoo when installed, and 100 random models):
how many models it changed on, how many rows were flagged (violation), and in how
many of those the culprit is one of the patch's own events (target: every patch
flagged on at least one model, 100 % of flagged rows attributed to it). Prints
one table from one run.

    .venv/bin/python benchmarks/planted_table.py [--random 100] [--jobs 2] [--budget 100,20s]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import patches  # noqa: E402
from tvm_numguard.locate.options import Options  # noqa: E402
from tvm_numguard.ir.pipeline import CompileConfig  # noqa: E402
from tvm_numguard.testing.regress import RowRequest, collect, regress  # noqa: E402
from tvm_numguard.testing.regress.corpus import random_models  # noqa: E402
from tvm_numguard.build.workers import Workers  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", default="100,20s")
    parser.add_argument("--json", help="also write the table here")
    args = parser.parse_args()
    corpora = ["onnx-node", "tiny", "patches"] + (["zoo"] if importlib.util.find_spec("transformers") else [])
    models = collect(corpora) + random_models(args.random, 0)
    out = "/tmp/numguard-planted-table"
    table, ok = {}, True
    print(f"{len(models)} models ({', '.join(corpora)}, {args.random} random); each patch at its manifest range")
    print(f"{'patch':18s} {'changed':>6s} {'flagged':>8s} {'attributed':>11s}  models flagged (first 3)")
    for entry in patches.manifest():
        pipeline, tir = patches.under_test(entry)
        options = Options(low=entry["low"], high=entry["high"], budget=args.budget)
        request = RowRequest(CompileConfig(pipeline=pipeline, tir_pipeline=tir), options, out, model_ranges=False)
        run = regress([request], models, Workers(jobs=args.jobs))
        flagged = run.violations
        attributed = [r for r in flagged if r.culprit and set(r.culprit) <= set(r.events)]
        table[entry["name"]] = {"changed": run.changed_count(run.passes[0]), "flagged": len(flagged),
                                "attributed": len(attributed), "models": [r.model for r in flagged]}
        share = f"{len(attributed)}/{len(flagged)}"
        print(f"{entry['name']:18s} {table[entry['name']]['changed']:>6d} {len(flagged):>8d} {share:>11s}  "
              f"{', '.join(r.model for r in flagged[:3])}")
        ok = ok and bool(flagged) and len(attributed) == len(flagged)
    print("every patch flagged, 100% attributed: " + ("met" if ok else "NOT met"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
