"""The import judge on defects and models the judge table does not hold
(``patches/unseen``): ``python benchmarks/unseen_sweep.py [NAME... | --match S | --all]``.
Each case runs in its own process (its converter patch stays there), through
``ng.bisect`` (pipeline zero, budget 20, seed 0); one JSON line per case on
stdout (and ``--log``), ``numguard_wrong`` where a planted defect is not
``import`` or a clean model is ``import``/``unjudged``; the last line counts
them, and the exit status is 1 where any is wrong. Minutes: the transformers
blocks take 5 to 90 s each."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # patches/, beside benchmarks/


def run_one(name: str, budget: str) -> dict:
    import tvm_numguard as ng
    from tvm_numguard.build.workers import Workers
    from tvm_numguard.ir.pipeline import CompileConfig
    from tvm_numguard.locate.options import Options

    from patches.unseen.cases import CASES

    build, low, high, plant, expected = CASES[name]
    row = {"case": name, "expected": expected, "range": [low, high]}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        path = build(directory)
        with (plant() if plant else contextlib.nullcontext()):
            report = ng.bisect(path, CompileConfig(pipeline="zero"),
                               Options(low=low, high=high, budget=budget, seed=0), workers=Workers(jobs=0))
    imports = report.imports
    row.update(verdict=imports.verdict if imports else None, exit=1 if report.violation else 0,
               reason=(imports.reason or "")[:300] if imports else "", truth=imports.truth if imports else None,
               origin=imports.origin.node if imports and imports.origin else None,
               flips=len(imports.flips) if imports else 0, widened=len(imports.widened) if imports else 0,
               seconds=round(time.perf_counter() - started, 1))
    wrong = (expected == "import" and row["verdict"] != "import") or \
            (expected == "clean" and row["verdict"] in ("import", "unjudged"))
    row["numguard_wrong"] = wrong
    return row


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--match", default="")
    parser.add_argument("--one", action="store_true", help="run in this process")
    parser.add_argument("--budget", default="20")
    parser.add_argument("--log", default=None)
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args(argv)
    if args.one:
        try:
            row = run_one(args.names[0], args.budget)
        except Exception as err:  # noqa: BLE001 - a row
            row = {"case": args.names[0], "error": f"{type(err).__name__}: {str(err)[:300]}"}
        print("ROW " + json.dumps(row), flush=True)
        return 0
    from patches.unseen.cases import CASES
    names = args.names or [n for n in CASES if args.match in n]
    wrong = []
    for name in names:
        started = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, __file__, "--one", name, "--budget", args.budget],
                                 capture_output=True, text=True, timeout=args.timeout)
            rows = [line[4:] for line in out.stdout.splitlines() if line.startswith("ROW ")]
            row = json.loads(rows[-1]) if rows else {"case": name, "error": out.stderr[-400:]}
        except subprocess.TimeoutExpired:
            row = {"case": name, "error": "timeout", "seconds": round(time.perf_counter() - started, 1)}
        line = json.dumps(row)
        print(line, flush=True)
        if args.log:
            with open(args.log, "a") as f:
                f.write(line + "\n")
        if row.get("numguard_wrong") or "error" in row:
            wrong.append(name)
    print(f"{len(names)} cases, {len(wrong)} wrong or failed" + (f": {', '.join(wrong)}" if wrong else ""))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
