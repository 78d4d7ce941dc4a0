"""The cost of safety: the unsafe build, the narrow fix and the pass off, side by side.

Each build is timed with TVM's own time evaluator (``vm.time_evaluator``, one
call per measurement, after one warm-up call; the median of ``RUNS``) on one
set of inputs, and weighed: the bytes of the tensor constants its Relax
pipeline left in the module (float16 weights are half of float32's). The
three are timed in one process, in turns (one call of each per round), so
their ratios are measured in one run and the machine's drift falls on all.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Mapping, Sequence

import tvm
from tvm import relax

from ..ir.narrow import FixPlan
from ..base.numbers import measured, unmeasured
from ..ir.pipeline import CompileConfig
from ..ir.relax_ir import TENSOR_CONSTANT
from ..build.compile import compile_model, device_array
from ..ir.targets import is_gpu
from ..build.workers import ForkPool, Workers
from ..build.workers import memory

RUNS = 21  # timed calls per build (the issue asks for a median of at least 10)


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
        return {"build": self.label, "median_ms": measured(round(self.median_ms, 4)), "weight_bytes": self.weight_bytes,
                "rewrites_kept": self.rewrites_kept, "runs": self.runs, "error": self.error or None}

    @classmethod
    def from_json(cls, data) -> "BuildCost":
        return cls(data["build"], unmeasured(data["median_ms"]), int(data["weight_bytes"]), int(data["rewrites_kept"]),
                   int(data.get("runs", RUNS)), data.get("error") or "")


def cost_table(mod: tvm.IRModule, config: CompileConfig, plan: FixPlan, narrowings: Sequence,
               inputs: Mapping, input_names: Sequence[str], workers: Workers = Workers()) -> list:
    """[unsafe, narrow, pass off] BuildCosts of ``mod`` under ``config`` (whose
    own fix, if any, is left out), the fix ``plan`` (whose ``narrowings`` give
    the rewrite counts), and the same culprits switched off; timed in a worker
    where ``workers`` run a GPU target's builds in workers (``for_target``), as
    the fix's own search did, else here."""
    base = dataclasses.replace(config, fix=None)
    off = FixPlan(tuple(n.fix.switched_off() for n in narrowings))
    rows = [("unsafe", base, sum(n.rewrites for n in narrowings)),
            ("narrow", dataclasses.replace(base, fix=plan or None), sum(n.kept for n in narrowings)),
            ("pass off", dataclasses.replace(base, fix=off or None), 0)]
    if workers.for_target(is_gpu(config.make_target())).runs_elsewhere:
        return measure_in_worker(rows, mod, inputs, input_names)
    return measure_all(rows, mod, inputs, input_names)


def measure_in_worker(rows: Sequence, mod: tvm.IRModule, inputs: Mapping, input_names: Sequence[str]) -> list:
    """``measure_all`` in a worker forked for it: a GPU target's builds run on
    the device, which numguard's own process never initializes (a process that
    did could fork no worker that uses it). Where the worker gives no answer,
    every row's ``error`` says why."""
    pool = ForkPool(lambda: (rows, mod, inputs, input_names), 1, memory.machine_bytes())

    def lost(why: str) -> list:
        return [BuildCost(label, float("nan"), 0, kept, 0, why) for label, _, kept in rows]

    try:
        return pool.submit(_measure_all, lost=lost).result()
    finally:
        pool.stop()


def _measure_all(context: tuple) -> list:
    return measure_all(*context)


def measure_all(rows: Sequence, mod: tvm.IRModule, inputs: Mapping, input_names: Sequence[str]) -> list:
    """A BuildCost per (label, config, rewrites kept) of ``rows``: the builds
    timed in turns, one call each per round, so that the machine's drift
    (10-30% from one minute to the next here) falls on all of them alike."""
    builds = [compile_model(mod, cfg) for _, cfg, _ in rows]
    timers: list
    times: list
    timers, times = [], [[] for _ in rows]
    for build in builds:
        if not build.ok:
            timers.append(None)
            continue
        vm = build.vm()
        args = [tvm.runtime.tensor(device_array(inputs[name]), build.device) for name in input_names]
        vm["main"](*args)  # warm-up
        timer = vm.time_evaluator("main", build.device, number=1, repeat=1)
        timers.append((timer, args))
    for _ in range(RUNS):
        for k, entry in enumerate(timers):
            if entry is not None:
                times[k].append(float(entry[0](*entry[1]).median))
    out = []
    for (label, _, kept), build, samples in zip(rows, builds, times):
        if not build.ok:
            out.append(BuildCost(label, float("nan"), 0, kept, 0, build.error or "does not build"))
            continue
        weights = weight_bytes(build.relax_phase.module) if build.relax_phase is not None else 0
        out.append(BuildCost(label, statistics.median(samples) * 1e3, weights, kept))
    return out


def weight_bytes(mod: tvm.IRModule) -> int:
    """Bytes of the distinct tensor constants in ``mod``'s Relax functions."""
    seen: dict = {}

    def visit(expr) -> None:
        if isinstance(expr, TENSOR_CONSTANT) and hasattr(expr.value, "numpy"):
            seen.setdefault(expr, expr.value)  # TVM objects hash by identity

    for _, func in mod.functions.items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return int(sum(v.numpy().nbytes for v in seen.values()))
