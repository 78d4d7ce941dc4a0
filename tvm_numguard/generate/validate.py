"""Is a generated model valid? It imports, builds, and its float32 reference is
finite at its range's corners and at random points inside (the generator's
≥ 95 % target is measured with this: benchmarks/random_models.py)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .graph import Graph


def invalid_reason(graph: Graph, trials: int = 6, seed: int = 0) -> Optional[str]:
    """None when ``graph`` is valid, else why not (one line)."""
    import tvm
    from tvm import relax

    from ..errors import summarize_error

    try:
        mod = graph.to_irmodule()
    except Exception as err:  # noqa: BLE001 - the generator wrote something Relax refuses
        return f"not a valid Relax module: {summarize_error(err)}"
    try:
        vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    except Exception as err:  # noqa: BLE001
        return f"does not build: {summarize_error(err)}"
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        args = []
        for param, (lo, hi) in zip(mod["main"].params, graph.ranges().values()):
            shape = [int(d) for d in param.ty.shape]
            value = np.full(shape, (lo, hi)[trial]) if trial < 2 else rng.uniform(lo, hi, shape)
            args.append(tvm.runtime.tensor(value.astype("float32")))
        out = vm["main"](*args)
        if not all(np.isfinite(o.numpy()).all() for o in ([out] if hasattr(out, "numpy") else list(out))):
            return f"NaN/Inf at trial {trial} ({'corner' if trial < 2 else 'random point'})"
    return None
