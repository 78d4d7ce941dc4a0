"""numguard on a CUDA device, in one table: verdicts, culprits, builds and the
time of each check over a plain CUDA compile of the same pipeline.

    python benchmarks/gpu_check.py [--arch sm_90] [--budget 60]

Cases: the README demo (ToMixedPrecision on the MLP: the culprit must be
ToMixedPrecision#0), TVM's default CUDA pipeline on the MLP, SqueezeNet (the
onnx wheel's, weights randomized) and a BERT block (transformers config, no
download): each must be clean; the guard around tvm.compile of the demo (it
must judge it, never pass a model unjudged); ``numguard fix`` on a small CNN
under ToMixedPrecision (one place breaks at [0, 15000]): verified, and the
cost of safety timed on the device (TVM's time evaluator): unsafe, narrow and
pass-off milliseconds and the share of the pass's speed-up the fix keeps.
Then whether numguard's own process initialized CUDA: it must not (it
compiles; workers run), so a worker forked at any moment can use the GPU.
Last, the guard again after this process initialized CUDA itself, as a
caller's own GPU work would: it must check in this process.
Without a CUDA device it says so in one line and exits 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")


def plain_compile_seconds(model, pipeline: str, target: str) -> float:
    import tvm

    from tvm_numguard.ir.pipeline import make_target, relax_pipeline

    target_obj = make_target(target)
    start = time.perf_counter()
    tvm.compile(model.mod, target_obj, relax_pipeline=relax_pipeline(pipeline, target_obj))
    return time.perf_counter() - start


def check(name: str, model, pipeline: str, target: str, budget: str, expect: str) -> dict:
    import tvm_numguard as ng

    plain = plain_compile_seconds(model, pipeline, target)
    start = time.perf_counter()
    report = ng.bisect(model, ng.CompileConfig(pipeline=pipeline, target=target),
                       ng.Options(low=0.0, high=1.0, budget=budget))
    seconds = time.perf_counter() - start
    got = report.culprit or ("clean" if report.exit_code == 0 else ",".join(report.at_fault))
    return {"case": name, "verdict": report.data["verdict"], "culprit": report.culprit or "-", "expect": expect,
            "ok": got == expect, "builds": report.data["builds"]["builds"], "seconds": seconds, "plain": plain}


def guard_row(model, target: str, budget: str, case: str = "guard-demo") -> dict:
    import tvm
    from tvm import relax

    import tvm_numguard as ng
    from tvm_numguard.ir.pipeline import make_target

    target_obj = make_target(target)
    start = time.perf_counter()
    tvm.compile(relax.transform.ToMixedPrecision()(model.mod), target_obj)
    plain = time.perf_counter() - start
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ng.guard(0.0, 1.0, budget=budget) as guarded:  # the pass applied inside: the guard replays it
            tvm.compile(relax.transform.ToMixedPrecision()(model.mod), target_obj)
    seconds = time.perf_counter() - start
    data = guarded.report[0].data
    # checked, and what came back is not the unsafe build
    safe = data["verdict"] == "violation" and data["guard"].get("returned") != "optimized"
    return {"case": case, "builds_where": data["guard"]["builds"], "verdict": data["verdict"],
            "culprit": guarded.report[0].culprit or "-",
            "expect": "safe build back", "ok": safe, "builds": data["builds"]["builds"], "seconds": seconds,
            "plain": plain}


def guard_after_cuda_row(model, target: str, budget: str) -> dict:
    """The guard in a process whose own GPU work came first (``tvm.cuda(0).exist``
    initializes CUDA): no worker could use the device, so it must judge here
    (its builds "in-process: CUDA was initialized ..."), never pass the compile unjudged."""
    import tvm

    from tvm_numguard.ir.targets import parse_target

    gpu = parse_target(target).is_gpu
    if gpu:
        assert tvm.cuda(0).exist, "no CUDA device answered"
    row = guard_row(model, target, budget, "guard-after-cuda")
    row["ok"] = row["ok"] and (not gpu or row["builds_where"].startswith("in-process: CUDA was initialized"))
    return row


def fix_row(target: str, budget: str, directory: str) -> dict:
    import tvm_numguard as ng
    from tvm_numguard.build.session import RunContext
    from tvm_numguard.fixes import find_fix
    from tvm_numguard.fixes.cost import cost_table
    from tvm_numguard.testing.zoo.models import tiny_cnn_onnx

    model = ng.load_model(tiny_cnn_onnx(os.path.join(directory, "cnn.onnx")))
    pipeline = "ToMixedPrecision,default"
    config = ng.CompileConfig(pipeline=pipeline, target=target)
    options = ng.Options(low=0.0, high=15000.0, rtol=1e-2, atol=1e-2, budget=budget, framework=False)
    plain = plain_compile_seconds(model, pipeline, target)
    start = time.perf_counter()
    outcome = find_fix(model, config, options, RunContext.of(lambda message: None))
    seconds = time.perf_counter() - start
    row = {"case": "fix-cnn-mixed", "verdict": "verified" if outcome.verified else "unverified",
           "culprit": ",".join(outcome.narrowings) or "-", "expect": "verified", "ok": outcome.verified,
           "builds": None, "seconds": seconds, "plain": plain, "cost": ""}
    if outcome.narrowings:
        costs = cost_table(model.mod, config, outcome.plan, list(outcome.narrowings.values()),
                           outcome.first.witness, model.input_names())
        t = {c.label: c.median_ms for c in costs}
        gain = t["pass off"] - t["unsafe"]
        kept = f"{(t['pass off'] - t['narrow']) / gain:.2f}" if gain > 0 else "- (the pass buys nothing)"
        row["cost"] = (f"unsafe {t['unsafe']:.3f} ms, narrow {t['narrow']:.3f} ms, pass off {t['pass off']:.3f} ms; "
                       f"speed-up kept {kept}")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default=None, help="the GPU's arch (default: nvidia-smi's)")
    parser.add_argument("--budget", default="60")
    parser.add_argument("--target", default="cuda", help="another target runs the same table (llvm: to try the script)")
    args = parser.parse_args()
    from tvm_numguard.base.errors import PipelineError
    from tvm_numguard.ir.model import load_model
    from tvm_numguard.ir.targets import parse_target, require_device

    target = f'{{"kind": "{args.target}", "arch": "{args.arch}"}}' if args.arch else args.target
    try:
        require_device(parse_target(target))
    except PipelineError as err:
        print(f"gpu_check: {err}", file=sys.stderr)
        return 2
    from tvm_numguard.testing import light_model
    from tvm_numguard.testing.zoo.blocks import export, missing_requirements

    directory = tempfile.mkdtemp(prefix="gpu_check-")
    mlp = load_model(MLP)
    rows = [check("demo-mixed", mlp, "ToMixedPrecision,default", target, args.budget, "ToMixedPrecision#0"),
            check("mlp-default", mlp, "default", target, args.budget, "clean"),
            check("squeezenet-default", load_model(light_model("squeezenet", seed=0, directory=directory)),
                  "default", target, args.budget, "clean")]
    if not missing_requirements():
        rows.append(check("bert-default", load_model(export("bert-layer", directory)), "default", target,
                          args.budget, "clean"))
    rows.append(guard_row(mlp, target, args.budget))
    rows.append(fix_row(target, args.budget, directory))
    print_rows(rows)
    from tvm_numguard.ir.targets import cuda_started_here

    started = cuda_started_here()
    print(f"numguard's own process initialized CUDA: {'YES (a forked worker cannot use it)' if started else 'no'}")
    after = guard_after_cuda_row(mlp, target, args.budget)  # last: it initializes CUDA in this process
    print_rows([after], header=False)
    return 0 if all(r["ok"] for r in rows + [after]) and not started else 1


def print_rows(rows: list, header: bool = True) -> None:
    if header:
        print(f"{'case':20s} {'verdict':10s} {'culprit':22s} {'expected':20s} {'ok':4s} {'builds':>6s} "
              f"{'check s':>8s} {'plain s':>8s} {'ratio':>6s}")
    for r in rows:
        print(f"{r['case']:20s} {r['verdict']:10s} {r['culprit']:22s} {r['expect']:20s} "
              f"{'yes' if r['ok'] else 'NO':4s} "
              f"{'-' if r['builds'] is None else r['builds']:>6} {r['seconds']:8.1f} {r['plain']:8.2f} "
              f"{r['seconds'] / r['plain']:6.1f}x")
        if r.get("cost"):
            print(f"{'':20s} cost of safety: {r['cost']}")
        if r["case"] == "guard-after-cuda":
            print(f"{'':20s} builds: {r['builds_where']}")


if __name__ == "__main__":
    sys.exit(main())
