"""Rare regions: how often each search finds a violation that lives in a small
part of the declared range, at a small budget.

Every case is a real TVM pass (no planted bug) on a small model whose float32
reference is finite on the whole range, and whose violation region is small:

  exp-band         FastMathTransform: fast_exp clamps its argument at 88.376,
                   exp is finite up to 88.72; x (1x4) in [-300, 88.7], the band
                   is 0.08% of each element's range
  fp16-all-high    ToMixedPrecision: a conv (positive weights) overflows float16
                   only when nearly all 27 inputs sit near the top of [0, H]
  fp16-mixed       ToMixedPrecision: a conv of mixed-sign weights overflows only
                   at the corner where each input is at the end its weight's
                   sign asks for (the all-high and all-low corners are clean)
  fp16-two-inputs  ToMixedPrecision: relu((a - b) W) overflows float16 only when
                   a is high and b is low (some inputs high, others low)
  fp16-norm        ToMixedPrecision: a normalization after a float16 matmul loses
                   every digit on nearly constant inputs (uniform ones are fine)

The float16 cases use the tolerances a user who asked for float16 declares
(rtol = atol = 1e-2): rounding passes, overflow and lost digits do not.

For each (case, seed) each strategy runs with the same budget, the same seed and
the same score function (``Runs.observe``); evolve gets the aim of
``numguard check`` as the commands give it (``engine.range_check``), random none;
"unaimed" is evolve without the aim (what the check adds). Printed: per case,
how many seeds found a violation and the median evaluations to the first
violation; then the totals. Target: evolve finds one in >= 90% of
the (case, seed) pairs at a budget of 50. Exit 0 iff met.

    .venv/bin/python benchmarks/search_vs_random.py [--budget 50] [--seeds 0,1,2,3,4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
from tvm import relax  # noqa: E402

import tvm_numguard as ng  # noqa: E402
from tvm_numguard.engine.engine import range_check  # noqa: E402
from tvm_numguard.ir.model import from_irmodule  # noqa: E402
from tvm_numguard.locate.aimed import Aim  # noqa: E402
from tvm_numguard.locate.budget import Budget  # noqa: E402
from tvm_numguard.locate.ranges import resolve_ranges  # noqa: E402
from tvm_numguard.locate.searches import make_search  # noqa: E402
from tvm_numguard.base.tolerance import Tolerance  # noqa: E402
from tvm_numguard.build.session import RunContext, BuildSession  # noqa: E402
from tvm_numguard.build.workers import Workers  # noqa: E402

FP16_TOL = Tolerance(rtol=1e-2, atol=1e-2)
F16_MAX = 65504.0


def _var(name, shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def _model(name, params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit_output(body(bb, *params))
        bb.emit_func_output(y)
    return from_irmodule(bb.get(), name, name)


def exp_band():
    return _model("exp_band", [_var("x", (1, 4))], lambda bb, x: relax.op.exp(x)), -300.0, 88.7


def _conv(signed: bool):
    rng = np.random.default_rng(3)
    w = rng.uniform(0.05, 0.15, (4, 3, 3, 3))
    if signed:
        w = w * np.where(rng.random(w.shape) < 0.5, -1.0, 1.0)

    def body(bb, x):
        c = bb.emit(relax.op.nn.conv2d(x, relax.const(w.astype("float32"))))
        return relax.op.multiply(bb.emit(relax.op.nn.relu(c)), relax.const(np.float32(1e-3)))
    return _model("conv", [_var("x", (1, 3, 3, 3))], body), w


def fp16_all_high():
    model, w = _conv(signed=False)
    high = F16_MAX / (0.95 * w.sum(axis=(1, 2, 3)).max())  # only the top 5% of the sum overflows
    return model, 0.0, float(high)


def fp16_mixed():
    model, w = _conv(signed=True)
    bound = F16_MAX / (0.9 * np.abs(w).sum(axis=(1, 2, 3)).max())  # the top 10% of the mixed corner's sum
    return model, -float(bound), float(bound)


def fp16_two_inputs():
    w = np.random.default_rng(5).uniform(0.5, 1.5, (8, 4)).astype("float32")  # a - b itself stays far below 65504

    def body(bb, a, b):  # the bias keeps outputs away from 0, where float16 input rounding alone would violate
        h = bb.emit(relax.op.matmul(bb.emit(relax.op.subtract(a, b)), relax.const(w)))
        biased = bb.emit(relax.op.add(bb.emit(relax.op.nn.relu(h)), relax.const(np.float32(1e4))))
        return relax.op.multiply(biased, relax.const(np.float32(1e-3)))
    bound = F16_MAX / (0.95 * 2 * w.sum(axis=0).max())
    return _model("two_inputs", [_var("a", (1, 8)), _var("b", (1, 8))], body), -float(bound), float(bound)


def fp16_norm():
    n = 16
    w = (np.eye(n) + 0.01 * np.random.default_rng(4).standard_normal((n, n))).astype("float32")

    def body(bb, x):
        h = bb.emit(relax.op.matmul(x, relax.const(w)))
        d = bb.emit(relax.op.subtract(h, bb.emit(relax.op.mean(h, axis=[1], keepdims=True))))
        v = bb.emit(relax.op.mean(relax.op.multiply(d, d), axis=[1], keepdims=True))
        return relax.op.multiply(d, relax.op.rsqrt(relax.op.add(v, relax.const(np.float32(1e-5)))))
    return _model("norm", [_var("x", (2, n))], body), -1000.0, 1000.0


CASES = {
    "exp-band": (exp_band, "FastMathTransform,zero", Tolerance()),
    "fp16-all-high": (fp16_all_high, "ToMixedPrecision,zero", FP16_TOL),
    "fp16-mixed": (fp16_mixed, "ToMixedPrecision,zero", FP16_TOL),
    "fp16-two-inputs": (fp16_two_inputs, "ToMixedPrecision,zero", FP16_TOL),
    "fp16-norm": (fp16_norm, "ToMixedPrecision,zero", FP16_TOL),
}


def first_violation(history) -> int | None:
    """1-based evaluation of the first score above 1, or None."""
    for k, score in enumerate(history, 1):
        if score is not None and score > 1.0:
            return k
    return None


def run_case(name, budget, seeds) -> dict:
    make, pipeline, tol = CASES[name]
    model, low, high = make()
    session = BuildSession(model, ng.CompileConfig(pipeline=pipeline), tol=tol,
                            context=RunContext(workers=Workers(jobs=0)))
    session.prepare()
    ranges = resolve_ranges(model.inputs, low, high)
    _, outcome = range_check(session, ranges)
    aim = Aim.of_check(outcome.result) if outcome.result is not None else Aim()
    row = {"case": name, "pipeline": pipeline, "low": low, "high": high, "budget": budget,
           "warnings": 0 if outcome.result is None else len(outcome.result.concerning("pipeline"))}
    for label, strategy, given in (("evolve", "evolve", aim), ("unaimed", "evolve", Aim()), ("random", "random", aim)):
        firsts = []
        for seed in seeds:
            result = make_search(strategy, budget=Budget(evaluations=budget)).run(
                session.runs.observe, model.inputs, ranges, seed, stop_at=1.0, aim=given)
            firsts.append(first_violation(result.history))
        row[label] = firsts
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=50, help="evaluations per search (both strategies)")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    names = args.only.split(",") if args.only else list(CASES)
    started = time.perf_counter()
    print(f"{'case':18} {'check':>6}" + "".join(f" {label + ' found':>15} {'median evals':>12}"
                                               for label in ("evolve", "unaimed", "random")))
    rows = []
    for name in names:
        row = run_case(name, args.budget, seeds)
        rows.append(row)
        cells = ""
        for label in ("evolve", "unaimed", "random"):
            hits = [k for k in row[label] if k is not None]
            cells += f" {f'{len(hits)}/{len(seeds)}':>15} {f'{statistics.median(hits):g}' if hits else '-':>12}"
        print(f"{name:18} {row['warnings']:>6}{cells}", flush=True)
    pairs = len(rows) * len(seeds)
    evolve = sum(k is not None for r in rows for k in r["evolve"])
    random_ = sum(k is not None for r in rows for k in r["random"])
    unaimed = sum(k is not None for r in rows for k in r["unaimed"])
    ok = evolve >= 0.9 * pairs
    print(f"evolve found a violation in {evolve}/{pairs} (case, seed) pairs ({100 * evolve / pairs:.0f}%), "
          f"evolve without the check's aim in {unaimed}/{pairs}, random in {random_}/{pairs} "
          f"({100 * random_ / pairs:.0f}%), budget {args.budget}; "
          f"target evolve >= 90%: {'met' if ok else 'NOT met'}; {time.perf_counter() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "pairs": pairs, "evolve_found": evolve, "unaimed_found": unaimed,
                       "random_found": random_,
                       "budget": args.budget, "target_met": ok}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
