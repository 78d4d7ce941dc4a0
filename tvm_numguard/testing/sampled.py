"""The values a model's bindings take on given inputs: what the static range
check's intervals must hold (its soundness test, its tightness benchmark)."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import tvm

from .reduce.cut import cut, is_tensor, main_bindings
from ..build.compile import call_main, compile_plain
from ..ir.targets import target_of


def sampled_values(mod: tvm.IRModule, samples: list, target: str = "llvm") -> dict:
    """{binding position: [array per sample]} for every tensor binding of main
    (positions in main's bindings, as the analysis keys them), from one build
    that returns them all; ``samples`` are dicts of input arrays."""
    bindings = main_bindings(mod)
    tensors = [k for k, b in enumerate(bindings) if is_tensor(b.var)]
    probe = mod.clone()  # with the kernels a pass put in beside main
    probe.update_func(probe.get_global_var("main"), cut(mod, range(len(bindings)), tensors).mod["main"])
    build = compile_plain(probe, target_of(target))
    if not build.ok:
        raise RuntimeError(build.error)
    names = [p.name for p in probe["main"].params]
    out: dict = {k: [] for k in tensors}
    for inputs in samples:
        values = call_main(build.vm(), build.device, names, inputs)
        for k, value in zip(tensors, values):
            out[k].append(np.asarray(value))
    return out


def corner_samples(mod: tvm.IRModule, ranges: Mapping, count: int, rng: np.random.Generator) -> list:
    """``count`` inputs of main (``ranges``: param name -> Interval): every element at
    the low end, every element at the high end, elements at either end (a mixed
    corner), then uniform samples; what a bound must hold."""
    out = []
    for k in range(count):
        sample = {}
        for p in mod["main"].params:
            shape, r = [int(d) for d in p.ty.shape.values], ranges[p.name]
            if k == 0:
                v = np.full(shape, r.lo)
            elif k == 1:
                v = np.full(shape, r.hi)
            elif k == 2:
                v = np.where(rng.random(shape) < 0.5, r.lo, r.hi)
            else:
                v = rng.uniform(r.lo, r.hi, size=shape)
            sample[p.name] = v.astype(str(p.ty.dtype))
        out.append(sample)
    return out


def escapes(analysis_values: Mapping, sampled: Mapping) -> list:
    """(binding position, sampled min, sampled max, interval) where a sampled finite value
    lies outside the binding's interval (an unsound interval)."""
    found = []
    for name, arrays in sampled.items():
        abstract = analysis_values.get(name)
        interval = getattr(abstract, "interval", None)
        if interval is None:
            continue
        values = np.concatenate([np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays])
        values = values[np.isfinite(values)]
        if values.size and (values.min() < interval.lo or values.max() > interval.hi):
            found.append((name, float(values.min()), float(values.max()), interval))
    return found
