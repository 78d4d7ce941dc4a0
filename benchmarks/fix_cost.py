"""The cost of safety: a narrow fix against the pass off, on real blocks.

For each case: ``numguard fix`` (bisect, narrow by delta debugging, verify on a
fresh search), then the three builds timed in this one process with TVM's
time evaluator (median of 21 calls each after a warm-up, the builds in turns): the unsafe build, the
narrow fix, the pass off. Prints per case the rewrites the fix keeps and the
share of the pass's speed-up it keeps:

    kept speed-up = (t_off - t_narrow) / (t_off - t_unsafe)

(1: the narrow fix is as fast as the unsafe build; 0: as slow as the pass
off; "-" where the pass makes nothing faster, so there is no speed-up to keep).

Cases: transformers BERT and ViT blocks (the zoo's, random weights) under
FastMathTransform, and convolution models under ToMixedPrecision, each at a
range where the search finds one place that breaks (or says it found none).

    .venv/bin/python benchmarks/fix_cost.py [--case bert-fastmath] [--budget 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tvm_numguard.build.session import RunContext  # noqa: E402
from tvm_numguard.engine.engine import as_model  # noqa: E402
from tvm_numguard.fixes import find_fix  # noqa: E402
from tvm_numguard.fixes.cost import cost_table  # noqa: E402
from tvm_numguard.locate.options import Options  # noqa: E402
from tvm_numguard.ir.pipeline import CompileConfig  # noqa: E402

# name -> (how to make the model in a folder, pipeline, low, high, rtol, atol)
CASES = {
    "bert-fastmath": ("bert-layer", "FastMathTransform,default", -60.0, 60.0, 1e-5, 1e-5),
    "vit-fastmath": ("vit-layer", "FastMathTransform,default", -60.0, 60.0, 1e-5, 1e-5),
    "exp-heads-fastmath": ("exp_heads", "FastMathTransform,default", 0.0, 1.0, 1e-5, 1e-5),
    "cnn-mixed": ("tiny_cnn", "ToMixedPrecision,default", 0.0, 15000.0, 1e-2, 1e-2),
    "mlp-mixed": ("mlp", "ToMixedPrecision,default", 0.0, 3.0, 1e-2, 1e-2),
}


def make_model(kind: str, folder: str) -> str:
    if kind in ("bert-layer", "vit-layer", "resnet-basic"):
        from tvm_numguard.testing.zoo.blocks import export
        return export(kind, folder)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from test_fix import exp_heads, mlp
    if kind == "exp_heads":
        return exp_heads(os.path.join(folder, "exp_heads.onnx"), width=1024, rows=256, op="Mul")
    if kind == "tiny_cnn":
        from tvm_numguard.testing.zoo.models import tiny_cnn_onnx
        return tiny_cnn_onnx(os.path.join(folder, "cnn.onnx"))
    return mlp(os.path.join(folder, "mlp.onnx"))


def pass_speedup(model, config: CompileConfig, event: str, witness) -> tuple:
    """(unsafe ms, pass off ms) where there is nothing to fix: what the pass buys here."""
    from tvm_numguard.fixes.cost import measure_all
    from tvm_numguard.ir.narrow import CulpritFix, FixPlan
    off = dataclasses.replace(config, fix=FixPlan((CulpritFix(event, "pass"),)))
    unsafe, off = measure_all([("unsafe", config, 0), ("pass off", off, 0)], model.mod, witness, model.input_names())
    return unsafe.median_ms, off.median_ms


def run_case(name: str, budget: str, folder: str) -> dict:
    kind, pipeline, low, high, rtol, atol = CASES[name]
    model = as_model(make_model(kind, folder))
    config = CompileConfig(pipeline=pipeline)
    options = Options(low=low, high=high, rtol=rtol, atol=atol, budget=budget, framework=False)
    outcome = find_fix(model, config, options, RunContext.of(lambda m: None))
    row = {"case": name, "pipeline": pipeline, "range": f"[{low:g}, {high:g}]", "verified": outcome.verified,
           "nothing": outcome.nothing_to_fix, "reason": outcome.reason}
    if outcome.nothing_to_fix:
        row["worst"] = outcome.first.comparison.score
        row["speedup"] = pass_speedup(model, config, f"{pipeline.split(',')[0]}#0", outcome.first.witness)
    if outcome.nothing_to_fix or not outcome.narrowings:
        return row
    narrowings = list(outcome.narrowings.values())
    row["rewrites"] = sum(n.rewrites for n in narrowings)
    row["kept"] = sum(n.kept for n in narrowings)
    row["places"] = sum(len(n.places) for n in narrowings)
    row["remedies"] = ",".join(sorted({n.remedy for n in narrowings}))
    row["cost"] = cost_table(model.mod, config, outcome.plan, narrowings, outcome.first.witness, model.input_names())
    return row


def show(row: dict) -> str:
    head = f"{row['case']:<14} {row['pipeline']:<27} {row['range']:<13}"
    if row["nothing"]:
        unsafe, off = row["speedup"]
        return head + (f" nothing to fix (worst score {row['worst']:.3g}); the pass alone: {unsafe:.3f} ms, "
                       f"off {off:.3f} ms")
    if "cost" not in row:
        return head + f" no fix: {row['reason']}"
    t = {c.label: c.median_ms for c in row["cost"]}
    gain = t["pass off"] - t["unsafe"]
    kept = f"{(t['pass off'] - t['narrow']) / gain:.2f}" if gain > 0 else "-"
    places = row["places"] if row["remedies"] == "narrow" else "off"  # "off": nothing narrower than the pass
    return (head + f" {'yes' if row['verified'] else 'NO':<8} {row['kept']}/{row['rewrites']:<6} {places:>6}"
            f" {t['unsafe']:>9.3f} {t['narrow']:>9.3f} {t['pass off']:>9.3f} {kept:>8}  weights "
            + "/".join(str(c.weight_bytes) for c in row["cost"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="default: every case")
    parser.add_argument("--budget", default="60", help="the search budget of the first round (--budget)")
    args = parser.parse_args()
    print(f"{'case':<14} {'pipeline':<27} {'range':<13} {'verified':<8} {'kept':<8} {'places':>6} "
          f"{'unsafe ms':>9} {'narrow ms':>9} {'off ms':>9} {'kept speed-up':>8}  weights unsafe/narrow/off")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.case or list(CASES):
            print(show(run_case(name, args.budget, folder)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
