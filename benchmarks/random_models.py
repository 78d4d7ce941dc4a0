"""The random model generator: validity, generation time, and how often a targeted stream makes a pass fire.

Prints, from one run: the share of generated models that import, build and
give a finite float32 reference at their range's corners and at random points
(target >= 95 %), the generation time per model (target <= 0.5 s), and for
each pass with a motif the share of models it changes, untargeted and with
``--target-pass`` (the changed rate).

    .venv/bin/python benchmarks/random_models.py [--count 200] [--seed 0] [--changed-count 40]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tvm_ffi  # noqa: E402
from tvm import relax  # noqa: E402

from tvm_numguard.testing.generate import MOTIFS, GeneratorConfig, generate  # noqa: E402
from tvm_numguard.testing.generate.validate import invalid_reason  # noqa: E402


def validity(count: int, seed: int) -> dict:
    generated, reasons, operators = 0.0, collections.Counter(), collections.Counter()
    for index in range(count):
        started = time.perf_counter()
        graph = generate(seed, index)
        graph.to_irmodule()
        generated += time.perf_counter() - started
        operators.update(graph.operators())
        reason = invalid_reason(graph)
        if reason is not None:
            reasons[reason.split(":")[0]] += 1
    return {"count": count, "valid": count - sum(reasons.values()), "seconds_per_model": generated / count,
            "invalid": dict(reasons), "operators": len(operators)}


def changed_rates(count: int, seed: int) -> dict:
    rates = {}
    for name in MOTIFS:
        make = getattr(relax.transform, name)
        rewrite = make(out_dtype="float16") if name == "ToMixedPrecision" else make()
        row = {}
        for label, target in (("untargeted", None), ("targeted", name)):
            changed = crashed = 0
            for index in range(count):
                mod = generate(seed, index, GeneratorConfig(target=target)).to_irmodule()
                try:
                    changed += not tvm_ffi.structural_equal(rewrite(mod), mod)
                except Exception:  # noqa: BLE001 - the pass itself fails on the model (counted)
                    crashed += 1
            row[label] = changed / count
            row[f"{label}_pass_failed"] = crashed
        rates[name] = row
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--changed-count", type=int, default=40)
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()
    valid = validity(args.count, args.seed)
    print(f"valid: {valid['valid']}/{valid['count']} = {valid['valid'] / valid['count']:.1%} (target >= 95%)"
          f"   generation: {valid['seconds_per_model'] * 1000:.1f} ms/model (target <= 500 ms)"
          f"   distinct operators: {valid['operators']}")
    for reason, n in valid["invalid"].items():
        print(f"  invalid: {n} x {reason}")
    rates = changed_rates(args.changed_count, args.seed)
    print(f"\nfired rate over {args.changed_count} models per stream:")
    print(f"  {'pass':28s} {'untargeted':>10s} {'targeted':>9s}  pass failed (untargeted/targeted)")
    for name, row in rates.items():
        print(f"  {name:28s} {row['untargeted']:>10.0%} {row['targeted']:>9.0%}  "
              f"{row['untargeted_pass_failed']}/{row['targeted_pass_failed']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"validity": valid, "changed": rates}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
