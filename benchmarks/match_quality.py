"""Matching quality on real models: how many values find their partner across
TVM's optimizing CPU pipeline, and whether the partners agree.

For each model (ONNX files of the onnx wheel, seeded random weights) the input
module, legalized, is "before"; the module after FuseTIR of
``relax.get_default_pipeline`` (fused kernels) is "after". Both are built, run on
one random input with every kernel output captured, and matched as ``numguard
trace`` matches them. Printed per model: values of the fused build, matched
ones, the share, and how many matched pairs agree within the float32 tolerance.
The default pipeline is clean on these models, so a pair that disagrees is a
wrong match: the share says how much the trace can show, the agreement says
whether what it shows is right. Fusion removes the values inside a fused group,
so values of "before" have no partner by design; the share counts "after".

    .venv/bin/python benchmarks/match_quality.py [--models squeezenet,shufflenet,inception_v1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import tvm  # noqa: E402
from tvm import relax  # noqa: E402

import tvm_numguard as ng  # noqa: E402
from tvm_numguard.build.compile import BuildRequest, compile_model  # noqa: E402
from tvm_numguard.base.tolerance import Tolerance  # noqa: E402
from tvm_numguard.testing import light_model  # noqa: E402
from tvm_numguard.build.capture import capture_values  # noqa: E402
from tvm_numguard.ir.values.value_graph import value_graph  # noqa: E402
from tvm_numguard.api.trace.origin import value_errors  # noqa: E402
from tvm_numguard.ir.values.value_match import match_values  # noqa: E402


def measure(name: str, shape) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = light_model(name, seed=0, directory=tmp)
        model = ng.load_model(path)
        if shape:
            try:
                model = ng.load_model(path, shapes={model.inputs[0].name: shape}, import_at_shapes=True)
            except ng.NumguardError:  # a model with shapes baked into it (ShuffleNet's reshapes)
                pass
    target = tvm.target.Target("llvm")
    build = compile_model(model.mod, ng.CompileConfig(pipeline="default"), BuildRequest(record=True))
    fused = build.snapshots["FuseTIR#0"]
    with target:
        legal = relax.transform.LegalizeOps()(model.mod)
    before, after = value_graph(legal, model.mod), value_graph(fused)
    names = model.input_names()
    rng = np.random.default_rng(0)
    inputs = {s.name: rng.uniform(0, 1, s.shape).astype(s.dtype) for s in model.inputs}
    values_b = capture_values(tvm.compile(legal, target), tvm.cpu(), before, names, inputs)
    values_a = capture_values(tvm.compile(fused, target), tvm.cpu(), after, names, inputs)
    matching = match_values(before, after)
    errors = value_errors(before, after, matching, values_b, values_a, Tolerance())
    agree = sum(1 for score, _ in errors.values() if score <= 1.0)
    return {"model": name, "values_before": len(before.order), **matching.to_json(), "compared": len(errors),
            "agree": agree}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="squeezenet,shufflenet,inception_v1")
    parser.add_argument("--shape", default="1,3,64,64",
                        help="input shape where the model allows it (global pooling; smaller is faster)")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()
    shape = tuple(int(d) for d in args.shape.split(",")) if args.shape else None
    rows = []
    print(f"{'model':14} {'values':>7} {'matched':>8} {'share':>6} {'agree':>10}  by rule")
    for name in args.models.split(","):
        row = measure(name, shape)
        rows.append(row)
        print(f"{name:14} {row['values']:>7} {row['matched']:>8} {row['share']:>6.0%} "
              f"{row['agree']:>4}/{row['compared']:<5}  {row['by_rule']}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0 if all(r["agree"] == r["compared"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
