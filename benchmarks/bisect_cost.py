"""Bisection cost on a real ONNX model with one planted culprit.

Prints, from one run: the number of optional pass events, the builds used by
prefix bisection (with one and with two worker processes) and by linear
(TracNe-style) isolation, the inputs the search evaluated, the time of each
relative to one plain tvm.compile of the same pipeline, and the wall time of
``--jobs 2`` over ``--jobs 1``. Bisection must use at most log2(events) + 4
builds in all (optimized, reference, prefixes, confirmation).

    .venv/bin/python benchmarks/bisect_cost.py [--model squeezenet] [--patch tir_tf32]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tvm  # noqa: E402

import tvm_numguard as ng  # noqa: E402
from tvm_numguard.testing import light_model  # noqa: E402
from tvm_numguard.workers import Workers  # noqa: E402

PLANTS = {
    # patch name -> (relax pipeline, tir pipeline)
    "tir_tf32": ("default", "default,patches.tir_tf32:make_pass"),
    "fold_fp16": ("patches.fold_fp16:make_pass,default", "default"),
}


def plain_compile_seconds(model, config: ng.CompileConfig, repeat: int = 2) -> float:
    target = config.make_target()
    best = math.inf
    for _ in range(repeat):
        relax_pass, tir_name = config.relax_pass(target), config.tir_pass(target)
        start = time.perf_counter()
        tvm.compile(model.mod, target, relax_pipeline=relax_pass, tir_pipeline=tir_name)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--patch", default="tir_tf32", choices=sorted(PLANTS))
    parser.add_argument("--low", type=float, default=0.0)
    parser.add_argument("--high", type=float, default=1.0)
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model = ng.load_model(light_model(args.model, seed=0, directory=tmp))
    pipeline, tir_pipeline = PLANTS[args.patch]
    config = ng.CompileConfig(pipeline=pipeline, tir_pipeline=tir_pipeline)
    plain = plain_compile_seconds(model, config)
    options = ng.Options(low=args.low, high=args.high, search="random", budget="3")

    runs = {}
    for label, strategy, jobs in (("bisect -j1", "bisect", 1), ("bisect -j2", "bisect", 2), ("linear -j1", "linear", 1)):
        start = time.perf_counter()
        report = ng.bisect(model, config, options.replace(strategy=strategy), workers=Workers(jobs=jobs))
        elapsed = time.perf_counter() - start
        bis = report.data["bisection"] or {}
        runs[label] = {
            "inputs": report.data["search"]["evaluations"],
            "speculative_builds": report.data["workers"]["speculative_builds"],
            "culprit": report.culprit,
            "bisection_builds": bis.get("builds"),
            "total_builds": report.data["builds"]["builds"],
            "seconds": elapsed,
            "optional_events": bis.get("optional_events"),
            "changed_events": bis.get("changed_events"),
        }
    events = runs["bisect -j1"]["optional_events"]
    bound = math.log2(events) + 4 if events else float("nan")
    ok = runs["bisect -j1"]["total_builds"] <= bound and runs["bisect -j1"]["culprit"] is not None
    same = runs["bisect -j1"]["culprit"] == runs["bisect -j2"]["culprit"]
    print(f"model {args.model}, planted {args.patch}: pipeline {pipeline!r}, TIR {tir_pipeline!r}")
    print(f"optional pass events                 {events} ({runs['bisect -j1']['changed_events']} changed the module)")
    print(f"one plain tvm.compile                {plain:.2f} s")
    for label, r in runs.items():
        print(f"{label:<10} culprit {r['culprit']}: builds {r['total_builds']} in all "
              f"({r['bisection_builds']} for the search, {r['speculative_builds']} built ahead unused), "
              f"{r['inputs']} inputs evaluated, time / plain compile {r['seconds'] / plain:.1f}x")
    print(f"wall time --jobs 2 / --jobs 1        {runs['bisect -j2']['seconds'] / runs['bisect -j1']['seconds']:.2f} "
          f"(same culprit: {'yes' if same else 'NO'})")
    print(f"builds bisect / linear               "
          f"{runs['bisect -j1']['total_builds'] / runs['linear -j1']['total_builds']:.2f}")
    print(f"builds bisect / log2(events) + 4     {runs['bisect -j1']['total_builds']} / {bound:.1f} -> "
          f"{'OK' if ok else 'OVER'}")
    ok = ok and same
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "patch": args.patch, "plain_compile_s": plain, "runs": runs,
                       "bound": bound, "ok": ok}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
