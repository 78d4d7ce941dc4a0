"""Search score vs random-search score at the same evaluation budget (DESIGN 5.2, 7).

For every planted patch in patches/manifest.json and a few real TVM passes on
real or realistic models, runs the ``evolve`` and ``random`` strategies with the
SAME evaluation budget and the SAME seeds, the score function being
``ShadowSession(model, config).observe`` (score > 1 = violation; random reads only the score). Prints per case
the median over seeds of each strategy's best score, then: the number of cases
where each found a violation (median best score > 1) and the median over cases of
the ratio evolve / random of those medians.

Acceptance bar (the issue's): evolve finds violations in MORE cases than random,
and the median score ratio evolve/random is at least 2. Exit code 0 iff met.

Ranges: each case's range is the one its user would naturally declare (the
manifest's [low, high] for the patches, except where noted), documented next to
the case. They are not tuned to cripple random search: same budget, same seeds.

Headroom (``--ceiling K``): one more evolve run per case with K times the
budget. ``best/rnd`` = the best score any run found / random's median: no search
can show a ratio much above it on that case. Cases whose error is the same on
every input (a constant relative error) have a best/rnd near 1 whatever the search.

Cost: ToMixedPrecision on squeezenet and FoldBatchnormToConv2D on inception v2
(224x224, ~3 s an evaluation) are slow on a 2-core machine, so they use a smaller
budget (``--real-budget``, default 30) for BOTH strategies and get no ceiling run;
everything else uses ``--budget`` (default 100). 3 seeds by default. About 20
minutes in all with ``--ceiling 30``.

    .venv/bin/python benchmarks/search_vs_random.py [--budget 100] [--seeds 0,1,2] [--ceiling 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
from tvm import relax  # noqa: E402

import tvm_numguard as ng  # noqa: E402
from tvm_numguard.model import from_irmodule  # noqa: E402
from tvm_numguard.search.budget import Budget  # noqa: E402
from tvm_numguard.search.ranges import resolve_ranges  # noqa: E402
from tvm_numguard.search.strategies import make_strategy  # noqa: E402
from tvm_numguard.shadow.compare import Tolerance  # noqa: E402
from tvm_numguard.shadow.session import ShadowSession  # noqa: E402

MANIFEST = json.load(open(os.path.join(ROOT, "patches", "manifest.json")))
PATCH_PASSES = {s["name"]: [e.split("#")[0] for e in s["minimal_set"] + [s.get("exposed_by") or s["culprit"]]]
                for s in MANIFEST}

# Range overrides for patches, with the reason. Patches not named here use the
# manifest's [low, high].
PATCH_RANGES = {
    # The manifest's [0, 20] makes half the range wrong; a user whose features
    # reach just past the cutoff (e.g. "up to about 10.4") is the case where a
    # search matters: the bug starts near 10.15, i.e. the top ~2.4% of the range.
    "exp_range": (0.0, 10.4, "bug only above ~10.15: the top 2.4% of a natural [0, 10.4] range"),
}


# -- realistic models for the real-TVM-pass cases ----------------------------

def _var(name, shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def exp_dense_model():
    """An exp-feature layer (energy / log-linear style) followed by a dense layer
    with signed weights: exp, tanh and erf activations of the same input."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((16, 8)) * 0.3).astype("float32")
    bb = relax.BlockBuilder()
    x = _var("x", (4, 16))
    with bb.function("main", [x]):
        with bb.dataflow():
            e = bb.emit(relax.op.exp(x))
            t = bb.emit(relax.op.tanh(x))
            f = bb.emit(relax.op.erf(x))
            feats = bb.emit(relax.op.add(relax.op.add(e, t), f))
            y = bb.emit_output(relax.op.matmul(feats, relax.const(w)))
        bb.emit_func_output(y)
    return bb.get()


def conv_bn_model():
    """conv2d -> batch_norm (inference) -> relu -> conv2d -> batch_norm: the pattern
    FoldBatchnormToConv2D folds (inception_v2 style, small enough for this machine)."""
    rng = np.random.default_rng(11)
    bb = relax.BlockBuilder()
    x = _var("x", (1, 3, 16, 16))

    def conv_bn(h, cin, cout):
        w = (rng.standard_normal((cout, cin, 3, 3)) * math.sqrt(2.0 / (9 * cin))).astype("float32")
        gamma = rng.uniform(0.5, 1.5, cout).astype("float32")
        beta = (rng.standard_normal(cout) * 0.1).astype("float32")
        mean = (rng.standard_normal(cout) * 0.1).astype("float32")
        var = rng.uniform(0.5, 1.5, cout).astype("float32")
        c = bb.emit(relax.op.nn.conv2d(h, relax.const(w), padding=(1, 1)))
        bn = bb.emit(relax.op.nn.batch_norm(c, relax.const(gamma), relax.const(beta), relax.const(mean),
                                            relax.const(var), axis=1, epsilon=1e-5, training=False))
        return bb.emit(relax.TupleGetItem(bn, 0))

    with bb.function("main", [x]):
        with bb.dataflow():
            h = conv_bn(x, 3, 8)
            h = bb.emit(relax.op.nn.relu(h))
            h = conv_bn(h, 8, 8)
            y = bb.emit_output(h)
        bb.emit_func_output(y)
    return bb.get()


def _patch_model(spec):
    module_name, _, attr = spec["model"].partition(":")
    mod = getattr(importlib.import_module(module_name), attr)()
    return from_irmodule(mod, spec["model"], spec["name"])


def cases(real_budget):
    """(name, make_model, pipeline, tir_pipeline, low, high, budget or None, why[, tolerance]).

    Default tolerances (float32: rtol 1e-5, atol 1e-6) unless a tolerance is given."""
    out = []
    for spec in MANIFEST:
        low, high, why = PATCH_RANGES.get(spec["name"], (spec["low"], spec["high"], "manifest range"))
        out.append((spec["name"], (lambda s=spec: _patch_model(s)), spec["pipeline"], spec["tir_pipeline"],
                    low, high, None, why))
    # FastMathTransform: fast exp/tanh/erf; its error grows with |x| (fast_exp's
    # range reduction), and a user of an exp-feature layer declares [-80, 80]
    # (exp overflows float32 above ~88.7).
    out.append(("FastMathTransform", lambda: from_irmodule(exp_dense_model(), "exp_dense", "exp_dense"),
                "FastMathTransform,zero", "default", -80.0, 80.0, None,
                "exp-feature layer over the float32-safe exp range; fast_exp error grows toward the top"))
    # ToMixedPrecision on squeezenet: float16 conv inputs overflow above 65504 and
    # lose precision everywhere; images as raw pixel values [0, 255].
    out.append(("ToMixedPrecision", _squeezenet, "ToMixedPrecision,zero", "default", 0.0, 255.0, real_budget,
                "squeezenet on raw pixel values [0, 255]"))
    # ToMixedPrecision on a small CNN (conv, relu, pool, conv, gemm, softmax) whose
    # user, having asked for float16, declares float16-level tolerances (rtol = atol
    # = 1e-2): rounding is accepted, only float16 overflow of activations (above
    # 65504) violates. Inputs are raw 16-bit samples [-32768, 32767] (not normalized).
    out.append(("ToMixedPrecision-fp16tol", _tiny_cnn, "ToMixedPrecision,zero", "default", -32768.0, 32767.0,
                None, "raw int16-scaled inputs; fp16 tolerances, so only overflow counts", FP16_TOL))
    # FoldBatchnormToConv2D on a conv+bn+relu+conv+bn model: folding rescales the
    # weights (a few ulps); image-normalized inputs [-3, 3].
    out.append(("FoldBatchnormToConv2D", lambda: from_irmodule(conv_bn_model(), "conv_bn", "conv_bn"),
                "FoldBatchnormToConv2D,zero", "default", -3.0, 3.0, None,
                "normalized image inputs [-3, 3]"))
    # The same two passes on real models (light models from the onnx wheel, seeded
    # weights), on standardized images [-3, 3] (ImageNet mean/std normalization
    # keeps pixels within about +-2.7).
    out.append(("FastMathTransform-squeezenet", _squeezenet, "FastMathTransform,zero", "default", -3.0, 3.0,
                None, "squeezenet (softmax output) on standardized images [-3, 3]"))
    out.append(("FoldBatchnormToConv2D-inception_v2", _inception_v2, "FoldBatchnormToConv2D,zero", "default",
                -3.0, 3.0, real_budget, "inception v2 (69 conv+batch_norm) on standardized images [-3, 3]"))
    return out


FP16_TOL = Tolerance(rtol=1e-2, atol=1e-2)


def _tiny_cnn():
    with tempfile.TemporaryDirectory() as tmp:
        from tvm_numguard.testing import tiny_cnn_onnx
        return ng.load_model(tiny_cnn_onnx(os.path.join(tmp, "tiny_cnn.onnx"), seed=0))


def _inception_v2():
    with tempfile.TemporaryDirectory() as tmp:
        from tvm_numguard.testing import light_model
        return ng.load_model(light_model("inception_v2", seed=0, directory=tmp))  # 224x224: fixed 7x7 pooling


def _squeezenet():
    with tempfile.TemporaryDirectory() as tmp:
        from tvm_numguard.testing import light_model
        # 96x96 instead of 224x224 (global average pooling makes it valid): one
        # evaluation costs ~5x less on this 2-core machine; the network is the same
        return ng.load_model(light_model("squeezenet", seed=0, directory=tmp), shapes={"data_0": (1, 3, 96, 96)})


def run_case(case, budget, seeds, ceiling=0):
    name, make, pipeline, tir_pipeline, low, high, own_budget, why, *tol = case
    budget = own_budget or budget
    start = time.perf_counter()
    model = make()
    tol = tol[0] if tol else Tolerance()
    session = ShadowSession(model, ng.CompileConfig(pipeline=pipeline, tir_pipeline=tir_pipeline), tol=tol)
    session.prepare()
    # did the pass under test change the module? (patch passes: by their event name)
    named = [p for p in pipeline.split(",") if p not in ("zero", "default")]
    names = {p if ":" not in p else None for p in named} | set(PATCH_PASSES.get(name, ()))
    changed = [e.id for e in session.events if e.changed and e.id.split("#")[0].split("/")[-1] in names]
    ranges = resolve_ranges(model.inputs, low, high)
    scores = {}
    for strategy in ("evolve", "random"):
        best = []
        for seed in seeds:
            result = make_strategy(strategy, budget=Budget(evaluations=budget)).run(
                session.observe, model.inputs, ranges, seed)
            best.append(float(result.best_score))
        scores[strategy] = best
    evolve, random_ = statistics.median(scores["evolve"]), statistics.median(scores["random"])
    # Headroom: the best score any run found, including one long evolve run. It
    # bounds (from below) what a perfect search could score, so best / random
    # bounds the ratio a search can show on this case at this budget.
    best = max(scores["evolve"] + scores["random"])
    if ceiling and not own_budget:
        long = make_strategy("evolve", budget=Budget(evaluations=ceiling * budget)).run(
            session.observe, model.inputs, ranges, seeds[0])
        best = max(best, float(long.best_score))
    return {
        "case": name, "pipeline": pipeline, "tir_pipeline": tir_pipeline, "low": low, "high": high,
        "range_rationale": why, "tolerance": tol.to_json(), "budget": budget, "seeds": list(seeds), "changed_events": changed,
        "evolve_scores": scores["evolve"], "random_scores": scores["random"],
        "evolve": evolve, "random": random_, "ratio": _ratio(evolve, random_),
        "best_known": best, "headroom": _ratio(best, random_), "ceiling_run": bool(ceiling and not own_budget),
        "seconds": round(time.perf_counter() - start, 2),
    }


def _ratio(a, b):
    """evolve / random; equal scores (both inf, both 0) count as 1."""
    if a == b:
        return 1.0
    if b > 0:
        return a / b
    return 1.0 if a <= 0 else math.inf


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=100, help="evaluations per search (both strategies)")
    parser.add_argument("--real-budget", type=int, default=30, help="evaluations per search on the real ONNX model")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--json", help="also write the numbers here")
    parser.add_argument("--ceiling", type=int, default=0, metavar="K",
                        help="also run evolve once with K times the budget (not on the real ONNX models) to "
                             "estimate each case's headroom: best score known / random's")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]

    started = time.perf_counter()
    rows = []
    selected = cases(args.real_budget)
    if args.only:
        wanted = set(args.only.split(","))
        selected = [c for c in selected if c[0] in wanted]
    print(f"{'case':34} {'range':>16} {'budget':>6} {'evolve':>11} {'random':>11} {'ratio':>8} "
          f"{'best/rnd':>9} {'time s':>7}")
    for case in selected:
        row = run_case(case, args.budget, seeds, args.ceiling)
        rows.append(row)
        rng = f"[{row['low']:g}, {row['high']:g}]"
        print(f"{row['case']:34} {rng:>16} {row['budget']:>6} {row['evolve']:>11.4g} {row['random']:>11.4g} "
              f"{row['ratio']:>8.3g} {row['headroom']:>9.3g} {row['seconds']:>7.1f}", flush=True)
        if not row["changed_events"]:
            print(f"  warning: no pass of {row['pipeline']!r} changed the module")

    n = len(rows)
    found_evolve = sum(r["evolve"] > 1.0 for r in rows)
    found_random = sum(r["random"] > 1.0 for r in rows)
    median_ratio = statistics.median(r["ratio"] for r in rows) if rows else float("nan")
    ok = found_evolve > found_random and median_ratio >= 2.0
    elapsed = time.perf_counter() - started
    print(f"evolve found violations in {found_evolve}/{n} cases, random in {found_random}/{n}; "
          f"median score ratio evolve/random {median_ratio:.3g}")
    roomy = sum(r["headroom"] >= 2.0 for r in rows)
    median_headroom = statistics.median(r["headroom"] for r in rows) if rows else float("nan")
    print(f"cases where some run scored at least 2x random's median (best/rnd >= 2): {roomy}/{n}; "
          f"median best/rnd {median_headroom:.3g} (the median ratio of a search that always matched the best "
          "score known)" + ("" if args.ceiling else "; add --ceiling K for a long evolve run per case"))
    print(f"bar (evolve finds more, median ratio >= 2): {'met' if ok else 'NOT met'}; {elapsed:.0f} s in all")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": rows, "evolve_found": found_evolve, "random_found": found_random, "n": n,
                       "median_ratio": median_ratio, "headroom_at_least_2": roomy, "median_headroom": median_headroom, "bar_met": ok, "seconds": round(elapsed, 1)}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
