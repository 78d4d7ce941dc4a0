"""Bisection cost on a real ONNX model with one planted culprit.

Prints, from one run: the number of optional pass events, the builds used by
prefix bisection (with one and with two worker processes) and by linear
(TracNe-style) isolation, the inputs the search evaluated, the time of each
relative to one plain tvm.compile of the same pipeline, and the wall time of
``--jobs 2`` over ``--jobs 1``. Bisection must use at most log2(events) + 4
builds in all (optimized, reference, prefixes, confirmation).

Each time is the best of ``--repeat`` runs, the configurations taking turns
(this machine's timings drift by 10-20% from one run to the next). The plain
compile is ``tvm.compile`` alone; the VM a user makes before running
anything (where LLVM generates the machine code: each of the bisection's
builds pays it too, since it runs) is printed beside it. The floor, measured
in the same run: what no bisection of the model can leave out, the pipeline
as written and the reference (every optional pass skipped) each compiled and
its VM made, one after the other (with workers the reference is made beside
the other, so the floor of --jobs 2 on two cores lies between the two figures
printed), in plain compiles.
``bisect -j1 --no-framework`` is the same bisection without onnxruntime run
beside TVM: their ratio is the framework run's cost (target: at most 1.15).
``--search default`` uses the options' default search (budget 200
evaluations or 60 s, stopped early once a violation is certain) instead of
3 random inputs; ``--no-linear`` leaves out the linear scan (long on big models).

    .venv/bin/python benchmarks/bisect_cost.py [--model squeezenet] [--patch tir_tf32]
    .venv/bin/python benchmarks/bisect_cost.py --model resnet50 --search default --no-linear --repeat 1
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
from tvm_numguard.build.workers import Workers  # noqa: E402

PLANTS = {
    # patch name -> (relax pipeline, tir pipeline)
    "tir_tf32": ("default", "default,patches.tir_tf32:make_pass"),
    "fold_fp16": ("patches.fold_fp16:make_pass,default", "default"),
}


def plain_compile_seconds(model, config: ng.CompileConfig, repeat: int = 2) -> tuple:
    """(best tvm.compile seconds, best seconds to make the first VM on its result)."""
    target = config.make_target()
    best, best_vm = math.inf, math.inf
    for _ in range(repeat):
        relax_pass, tir_name = config.relax_pass(target), config.tir_pass(target)
        start = time.perf_counter()
        executable = tvm.compile(model.mod, target, relax_pipeline=relax_pass, tir_pipeline=tir_name)
        best = min(best, time.perf_counter() - start)
        start = time.perf_counter()
        tvm.relax.VirtualMachine(executable, tvm.cpu())
        best_vm = min(best_vm, time.perf_counter() - start)
    return best, best_vm


def floor_seconds(model, config: ng.CompileConfig, repeat: int = 2) -> float:
    """The best seconds of the reference (every optional pass skipped) compiled and its VM made."""
    from tvm_numguard.build.compile import BuildRequest, compile_model

    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        build = compile_model(model.mod, config, BuildRequest(reference=True))
        tvm.relax.VirtualMachine(build.executable, tvm.cpu())
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--patch", default="tir_tf32", choices=sorted(PLANTS))
    parser.add_argument("--low", type=float, default=0.0)
    parser.add_argument("--high", type=float, default=1.0)
    parser.add_argument("--search", default="3-random", choices=["3-random", "default"])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each configuration (best taken)")
    parser.add_argument("--no-linear", action="store_true", help="leave out the linear scan")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:  # the file stays while onnxruntime reads it
        return measure(args, ng.load_model(light_model(args.model, seed=0, directory=tmp)))


def measure(args, model) -> int:
    pipeline, tir_pipeline = PLANTS[args.patch]
    config = ng.CompileConfig(pipeline=pipeline, tir_pipeline=tir_pipeline)
    plain, plain_vm = plain_compile_seconds(model, config)
    reference = floor_seconds(model, config)
    options = ng.Options(low=args.low, high=args.high)
    if args.search == "3-random":
        options = options.replace(search="random", budget="3")

    runs = {}
    # (label, bisection strategy, jobs, framework run beside TVM)
    configurations = [("bisect -j1", "bisect", 1, True), ("bisect -j2", "bisect", 2, True),
                      ("bisect -j1 --no-framework", "bisect", 1, False)]
    if not args.no_linear:
        configurations.append(("linear -j1", "linear", 1, True))
    for _ in range(args.repeat):
        for label, strategy, jobs, framework in configurations:
            start = time.perf_counter()
            report = ng.bisect(model, config, options.replace(strategy=strategy, framework=framework),
                               workers=Workers(jobs=jobs))
            elapsed = time.perf_counter() - start
            if label not in runs or elapsed < runs[label]["seconds"]:
                runs[label] = record(report, elapsed)
    return emit(args, pipeline, tir_pipeline, (plain, plain_vm, reference), runs)


def record(report, elapsed: float) -> dict:
    bis = report.data["bisection"] or {}
    return {
        "inputs": report.data["search"]["evaluations"],
        "speculative_builds": report.data["workers"]["speculative_builds"],
        "culprit": report.culprit,
        "bisection_builds": bis.get("builds"),
        "total_builds": report.data["builds"]["builds"],
        "seconds": elapsed,
        "optional_events": bis.get("optional_events"),
        "changed_events": bis.get("changed_events"),
        "framework": report.imports.framework if report.imports is not None else None,
        "import": report.imports.verdict if report.imports is not None else None,
    }


def emit(args, pipeline, tir_pipeline, units: tuple, runs: dict) -> int:
    plain, plain_vm, reference = units
    one, two = runs["bisect -j1"], runs["bisect -j2"]
    events = one["optional_events"]
    bound = math.log2(events) + 4 if events else float("nan")
    ok = one["total_builds"] <= bound and one["culprit"] is not None
    same = one["culprit"] == two["culprit"]
    print(f"model {args.model}, planted {args.patch}: pipeline {pipeline!r}, TIR {tir_pipeline!r}; "
          f"search {args.search}, best of {args.repeat}")
    print(f"optional pass events                 {events} ({one['changed_events']} changed the module)")
    print(f"one plain tvm.compile                {plain:.2f} s (and {plain_vm:.2f} s for its first VM: "
          f"{(plain + plain_vm) / plain:.2f}x with it)")
    print(f"floor                                {(plain + plain_vm) / plain:.2f}x to "
          f"{(plain + plain_vm + reference) / plain:.2f}x (the pipeline as written compiled with its VM; "
          f"the reference too: {reference:.2f} s)")
    for label, r in runs.items():
        print(f"{label:<10} culprit {r['culprit']}: builds {r['total_builds']} in all "
              f"({r['bisection_builds']} for the search, {r['speculative_builds']} built ahead unused), "
              f"{r['inputs']} inputs evaluated, {r['seconds']:.1f} s, time / plain compile {r['seconds'] / plain:.1f}x")
    print(f"wall time --jobs 2 / --jobs 1        {two['seconds'] / one['seconds']:.2f} "
          f"(same culprit: {'yes' if same else 'NO'})")
    if "linear -j1" in runs:
        print(f"builds bisect / linear               {one['total_builds'] / runs['linear -j1']['total_builds']:.2f}")
    print(f"builds bisect / log2(events) + 4     {one['total_builds']} / {bound:.1f} -> {'OK' if ok else 'OVER'}")
    bare = runs["bisect -j1 --no-framework"]
    framework_ratio = one["seconds"] / bare["seconds"]
    print(f"framework run ({one['framework']}, import: {one['import']}): bisect -j1 with / without "
          f"{framework_ratio:.3f} (target <= 1.15: {'OK' if framework_ratio <= 1.15 else 'OVER'})")
    ok = ok and same
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "patch": args.patch, "search": args.search, "plain_compile_s": plain,
                       "plain_vm_s": plain_vm, "reference_with_vm_s": reference,
                       "floor": [(plain + plain_vm) / plain, (plain + plain_vm + reference) / plain],
                       "runs": runs, "bound": bound, "ok": ok}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
