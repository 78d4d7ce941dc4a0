"""Cost of ``numguard trace`` on a real ONNX model with a real unsafe pass.

Prints, from one run: the pass events (optional, changed, Relax-level changed),
the builds trace used (the session's builds: the bisection, snapshot builds of the
per-pass table, gated TIR builds), and the time of the whole trace relative to
one plain ``tvm.compile`` of the same pipeline, with one and with two worker
processes (``--jobs``), and the wall time of two over one, beside its floor measured in
the same run (the pipeline as written and the reference each compiled and its VM made,
one after the other: no trace of the model does less). Unchanged events must cost no
build: the snapshot builds must be exactly one per Relax event that changed
the module, plus one of the input module; exit code 0 iff so.

    .venv/bin/python benchmarks/trace_cost.py [--model squeezenet] [--pipeline ToMixedPrecision,default]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tvm_numguard as ng  # noqa: E402
from bisect_cost import floor_seconds, plain_compile_seconds  # noqa: E402  (benchmarks/ is the script's folder)
from tvm_numguard.testing import light_model  # noqa: E402
from tvm_numguard.build.workers import Workers  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--pipeline", default="ToMixedPrecision,default")
    parser.add_argument("--shape", default="1,3,224,224", help="input shape of the model's one input")
    parser.add_argument("--budget", default="20")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = light_model(args.model, seed=0, directory=tmp)
        probe = ng.load_model(path)
        shape = tuple(int(d) for d in args.shape.split(","))
        model = ng.load_model(path, shapes={probe.inputs[0].name: shape}, import_at_shapes=True)
    config = ng.CompileConfig(pipeline=args.pipeline)
    plain, plain_vm = plain_compile_seconds(model, config)  # (tvm.compile, its first VM): the compile alone is the unit
    floor = (plain + plain_vm + floor_seconds(model, config)) / plain
    walls = {}
    for jobs in (1, 2):
        start = time.perf_counter()
        report = ng.trace(model, config, ng.Options(low=0.0, high=1.0, budget=args.budget), workers=Workers(jobs=jobs))
        walls[jobs] = time.perf_counter() - start
    seconds = walls[1]
    data, traced = report.data, report.data["trace"]
    if traced is None:
        print(f"no violation with {args.pipeline} on {args.model}: nothing traced")
        return 1
    events = data["events"]
    optional = [e for e in events if e["optional"]]
    relax_changed = [e for e in events if e["level"] == "relax" and e["changed"] and not e["wrapper"]
                     and "/" not in e["id"]]
    rows = traced["passes"]
    ok = traced["snapshot_builds"] == len([r for r in rows if r["level"] == "relax"]) + 1 \
        and len([r for r in rows if r["level"] == "relax"]) == len(relax_changed)
    shadow_builds = data["builds"]["builds"]
    total = shadow_builds + traced["snapshot_builds"]
    print(f"model {args.model} {list(shape)}, pipeline {args.pipeline}; culprit {traced['culprit']}, "
          f"origin {(traced['origin'] or {}).get('value')} ({(traced['origin'] or {}).get('op')})")
    print(f"pass events        {len(events)} in all, {len(optional)} optional, "
          f"{sum(1 for e in optional if e['changed'])} optional ones changed the module; "
          f"{len(relax_changed)} Relax-level ones changed it")
    print(f"builds             {total} in all: {shadow_builds} session builds (search, bisection, "
          f"{traced['gated_builds']} of them gating TIR events for the table) + {traced['snapshot_builds']} "
          f"snapshot builds (input module + one per changed Relax event)")
    print(f"inputs evaluated   {data['search']['evaluations']}")
    print(f"time               plain compile {plain:.2f} s; trace --jobs 1 {walls[1]:.1f} s "
          f"({walls[1] / plain:.1f}x), --jobs 2 {walls[2]:.1f} s ({walls[2] / plain:.1f}x); "
          f"--jobs 2 / --jobs 1 {walls[2] / walls[1]:.2f}; floor {floor:.1f}x")
    print(f"matching           {traced['matching']['matched']}/{traced['matching']['values']} values "
          f"({100 * traced['matching']['share']:.0f}%)")
    print(f"unchanged events cost no build: {'yes' if ok else 'NO'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "pipeline": args.pipeline, "plain_s": plain, "trace_s": seconds,
                       "floor": floor, "ratio": seconds / plain, "trace_jobs2_s": walls[2],
                       "jobs2_over_jobs1": walls[2] / walls[1], "builds": total, "shadow_builds": shadow_builds,
                       "snapshot_builds": traced["snapshot_builds"], "relax_changed": len(relax_changed),
                       "ok": ok}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
