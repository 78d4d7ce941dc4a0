"""The cost of safety: the unsafe build, the narrow fix and the pass off, side by side.

Each build is timed with TVM's own time evaluator (``vm.time_evaluator``:
``RUNS`` repeats of one call each, after one warm-up call; the median is
kept) on one set of inputs, and weighed: the bytes of the tensor constants its
Relax pipeline left in the module (float16 weights are half of float32's).
The three are timed in one process, one after another, so their ratios are
measured in one run.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import tvm
from tvm import relax

from ..narrow import FixPlan
from ..pipeline import CompileConfig
from ..shadow.build import compile_model, device_array

RUNS = 15  # timed calls per build (the issue asks for a median of at least 10)


@dataclasses.dataclass(frozen=True)
class BuildCost:
    """One build's row: ``label`` (unsafe | narrow | pass off), its median run
    time, its weight bytes and the culprits' rewrites it keeps."""

    label: str
    median_ms: float
    weight_bytes: int
    rewrites_kept: int
    runs: int = RUNS
    error: str = ""

    def to_json(self) -> dict:
        return {"build": self.label, "median_ms": None if self.median_ms != self.median_ms else round(self.median_ms, 4), "weight_bytes": self.weight_bytes,
                "rewrites_kept": self.rewrites_kept, "runs": self.runs, "error": self.error or None}

    @classmethod
    def from_json(cls, data) -> "BuildCost":
        return cls(data["build"], float("nan") if data["median_ms"] is None else float(data["median_ms"]), int(data["weight_bytes"]), int(data["rewrites_kept"]),
                   int(data.get("runs", RUNS)), data.get("error") or "")


def cost_table(mod: tvm.IRModule, config: CompileConfig, plan: FixPlan, narrowings: Sequence,
               inputs: Mapping, input_names: Sequence[str]) -> list:
    """[unsafe, narrow, pass off] BuildCosts of ``mod`` under ``config`` (whose
    own fix, if any, is left out), the fix ``plan`` (whose ``narrowings`` give
    the rewrite counts), and the same culprits switched off."""
    base = dataclasses.replace(config, fix=None)
    off = FixPlan(tuple(dataclasses.replace(n.fix, remedy="pass", places=()) for n in narrowings))
    rows = [("unsafe", base, sum(n.rewrites for n in narrowings)),
            ("narrow", dataclasses.replace(base, fix=plan or None), sum(n.kept for n in narrowings)),
            ("pass off", dataclasses.replace(base, fix=off or None), 0)]
    return [measure(label, mod, cfg, kept, inputs, input_names) for label, cfg, kept in rows]


def measure(label: str, mod: tvm.IRModule, config: CompileConfig, kept: int, inputs: Mapping,
            input_names: Sequence[str]) -> BuildCost:
    build = compile_model(mod, config)
    if not build.ok:
        return BuildCost(label, float("nan"), 0, kept, 0, build.error or "does not build")
    vm = build.vm()
    args = [tvm.runtime.tensor(device_array(inputs[name]), build.device) for name in input_names]
    vm["main"](*args)  # warm-up
    timer = vm.time_evaluator("main", build.device, number=1, repeat=RUNS)
    result = timer(*args)
    weights = weight_bytes(build.relax_phase.module) if build.relax_phase is not None else 0
    return BuildCost(label, float(result.median) * 1e3, weights, kept)


def weight_bytes(mod: tvm.IRModule) -> int:
    """Bytes of the distinct tensor constants in ``mod``'s Relax functions."""
    seen: dict = {}

    def visit(expr) -> None:
        if isinstance(expr, tvm.ir.expr.GenericConst) and hasattr(expr.value, "numpy"):
            seen.setdefault(expr, expr.value)  # TVM objects hash by identity

    for _, func in mod.functions.items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return int(sum(v.numpy().nbytes for v in seen.values()))
