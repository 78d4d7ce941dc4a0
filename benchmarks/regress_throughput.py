"""Throughput of ``regress``: (pass, model) rows per minute with --jobs 1 and --jobs 2.

Models: the onnx wheel's node- and block-size models (the ``onnx-node`` corpus,
each at the range of its shipped test inputs); passes: TVM's FoldConstant and
FastMathTransform (stock passes, most rows clean: the full search budget is
spent) and the planted ``patches.exp_range`` pass. One TVM import, rows in
forked workers, the same as ``numguard regress``. Prints, from one run, the
rows, the verdict counts, rows/minute for each job count and the ratio of
two jobs to one. Targets (issue "Pass authors"): >= 400 rows/min with 2 jobs,
2 jobs >= 1.6x 1 job.

    .venv/bin/python benchmarks/regress_throughput.py [--budget 100,20s] [--models onnx-node]
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

from tvm_numguard.locate.options import Options  # noqa: E402
from tvm_numguard.ir.pipeline import CompileConfig  # noqa: E402
from tvm_numguard.testing.regress import RowRequest, collect, regress  # noqa: E402
from tvm_numguard.build.workers import Workers  # noqa: E402

PASSES = ("FoldConstant", "FastMathTransform", "patches.exp_range:make_pass")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="100,20s")
    parser.add_argument("--models", default="onnx-node")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()
    models = collect([args.models])
    options = Options(low=0.0, high=1.0, budget=args.budget)
    out = os.path.join("/tmp", "numguard-regress-bench")
    requests = [RowRequest(CompileConfig(pipeline=f"[{p}],zero"), options, out) for p in PASSES]
    per_minute, verdicts = {}, {}
    for jobs in (1, 2):
        start = time.perf_counter()
        run = regress(requests, models, Workers(jobs=jobs))
        seconds = time.perf_counter() - start
        per_minute[jobs] = 60.0 * len(run.rows) / seconds
        verdicts[jobs] = collections.Counter(r.verdict for r in run.rows)
        print(f"--jobs {jobs}: {len(run.rows)} rows ({len(PASSES)} passes x {len(models)} models) in {seconds:.1f} s: "
              f"{per_minute[jobs]:.0f} rows/min; {dict(sorted(verdicts[jobs].items()))}")
    ratio = per_minute[2] / per_minute[1]
    ok = per_minute[2] >= 400 and ratio >= 1.6
    print(f"rows/min with 2 jobs {per_minute[2]:.0f} (target >= 400); 2 jobs / 1 job {ratio:.2f} (target >= 1.6): "
          f"{'met' if ok else 'NOT met'}")
    if verdicts[1] != verdicts[2]:
        print("verdict counts differ between 1 and 2 jobs")
        ok = False
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows_per_minute": per_minute, "ratio": ratio, "budget": args.budget, "ok": ok}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
