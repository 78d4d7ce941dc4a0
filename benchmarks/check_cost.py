"""numguard check: its time on real models, and how tight its intervals are.

Time: the check (both modules, drivers included) on the onnx wheel's light
models (weights randomized) at standardized-image ranges [-3, 3], with the
default pipeline and with ToMixedPrecision; the issue's bar is under 2 s on
ResNet-50. Tightness: for every tensor binding of generated models (and of the
small ONNX models), the spread of values that sampled runs reach over the width
of the binding's interval (1 = exact, 0.1 = ten times too wide); sampled values
outside their interval (unsound) are counted too and must be 0.

    .venv/bin/python benchmarks/check_cost.py [--models resnet50,squeezenet] [--generated 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import tvm_numguard as ng  # noqa: E402
from tvm_numguard.testing.generate import generate  # noqa: E402
from tvm_numguard.judge.rangecheck.analysis import analyse  # noqa: E402
from tvm_numguard.judge.rangecheck.check import check  # noqa: E402
from tvm_numguard.judge.rangecheck.interval import Interval  # noqa: E402
from tvm_numguard.locate import resolve_ranges  # noqa: E402
from tvm_numguard.testing import light_model, tiny_cnn_onnx, tiny_mlp_onnx  # noqa: E402
from tvm_numguard.testing.sampled import corner_samples, escapes, sampled_values  # noqa: E402


def timing(names) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model = ng.load_model(light_model(name, seed=0, directory=tmp))
            ranges = resolve_ranges(model.inputs, -3.0, 3.0)
            for pipeline in ("default", "ToMixedPrecision,default"):
                started = time.perf_counter()
                result = check(model, ng.CompileConfig(pipeline=pipeline), ranges)
                seconds = time.perf_counter() - started
                print(f"{name:12} {pipeline:26} {seconds:6.2f} s  {result.bindings} bindings, "
                      f"{len(result.warnings)} warnings, unknown ops {result.unknown or '-'}", flush=True)


def tightness(mod, ranges, rng) -> tuple:
    """(ratios of sampled spread to interval width, number of unsound bindings)."""
    analysis = analyse(mod["main"], ranges)
    sampled = sampled_values(mod, corner_samples(mod, ranges, 12, rng))
    ratios = []
    for position, arrays in sampled.items():
        interval = getattr(analysis.values.get(position), "interval", None)
        values = np.concatenate([a.astype(np.float64).reshape(-1) for a in arrays])
        values = values[np.isfinite(values)]
        if interval is not None and interval.finite and interval.hi > interval.lo and values.size:
            ratios.append((values.max() - values.min()) / (interval.hi - interval.lo))
    return ratios, len(escapes(analysis.values, sampled))


def corpus_sweep(name: str, rng) -> int:
    """Checks over a corpus; returns the tool errors plus unsound models."""
    import collections

    from tvm_numguard.base.errors import UsageError
    from tvm_numguard.testing.regress.corpus import collect

    counts, unknown = collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for member in collect([name]):
            try:
                model = member.load(tmp)
                given = {n: (lo, hi) for n, lo, hi in member.ranges}
                ranges = resolve_ranges(model.inputs, member.low, member.high, given) if (
                    given or member.low is not None) else resolve_ranges(model.inputs, -1.0, 1.0)
            except (UsageError, ValueError):
                counts["not loadable or no range"] += 1
                continue
            for pipeline in ("default", "FastMathTransform,default", "ToMixedPrecision,default"):
                try:
                    result = check(model, ng.CompileConfig(pipeline=pipeline), ranges)
                except UsageError:
                    counts["pipeline refused (one line)"] += 1
                    continue
                except Exception as err:  # a tool error: what this sweep is for
                    counts["TOOL ERROR"] += 1
                    print(f"  tool error: {member.name} {pipeline}: {type(err).__name__}: {err}"[:200])
                    continue
                counts["checks"] += 1
                counts["checks with warnings"] += bool(result.warnings)
                unknown.update(result.unknown)
            params = model.mod["main"].params
            if all(str(p.ty.dtype).startswith("float") for p in params):
                intervals = {p.name: Interval(ranges[s.name].low, ranges[s.name].high)
                             for p, s in zip(params, model.inputs)}
                try:
                    _, bad = tightness(model.mod, intervals, rng)
                except Exception:  # a model the sampling build cannot take (dynamic shapes)
                    counts["not sampled"] += 1
                    continue
                counts["models sampled"] += 1
                counts["UNSOUND models"] += bool(bad)
    print(f"{name}: {dict(counts)}; unknown operators {dict(unknown.most_common(8))}")
    return counts["TOOL ERROR"] + counts["UNSOUND models"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,squeezenet")
    parser.add_argument("--generated", type=int, default=40, help="generated models to measure tightness on")
    parser.add_argument("--corpus", help="also sweep this corpus (onnx-node): tool errors and soundness")
    args = parser.parse_args()
    timing([m for m in args.models.split(",") if m])
    rng = np.random.default_rng(0)
    ratios, unsound = [], 0
    for index in range(args.generated):
        graph = generate(seed=21, index=index)
        r, bad = tightness(graph.to_irmodule(),
                           {n: Interval(lo, hi) for n, (lo, hi) in graph.ranges().items()}, rng)
        ratios += r
        unsound += bad
    print(f"generated models: {args.generated}, {len(ratios)} bindings; sampled spread / interval width: "
          f"median {statistics.median(ratios):.3f}, 10th percentile {np.percentile(ratios, 10):.3f}; "
          f"unsound bindings {unsound}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, path, (lo, hi) in (("tiny cnn", tiny_cnn_onnx(os.path.join(tmp, "c.onnx")), (-3.0, 3.0)),
                                      ("tiny mlp", tiny_mlp_onnx(os.path.join(tmp, "m.onnx")), (-2.0, 2.0))):
            model = ng.load_model(path)
            r, bad = tightness(model.mod, {s.name: Interval(lo, hi) for s in model.inputs}, rng)
            print(f"{label}: per binding (in order) {' '.join(f'{x:.2f}' for x in r)}; unsound {bad}")
            unsound += bad
    if args.corpus:
        unsound += corpus_sweep(args.corpus, rng)
    return 0 if unsound == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
