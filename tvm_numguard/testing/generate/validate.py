"""Is a generated model valid? It imports, builds, and its float32 reference is
finite at its range's corners and at random points inside (the generator's
≥ 95 % target is measured with this: benchmarks/random_models.py)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .model_graph import Graph


def invalid_reason(graph: Graph, trials: int = 6, seed: int = 0) -> Optional[str]:
    """None when ``graph`` is valid, else why not (one line)."""
    import tvm
    from tvm import relax

    from ...base.errors import summarize_error

    try:
        mod = graph.to_irmodule()
    except Exception as err:  # noqa: BLE001 - the generator wrote something Relax refuses
        return f"not a valid Relax module: {summarize_error(err)}"
    try:
        executable = tvm.compile(mod, target="llvm")
    except Exception as err:  # noqa: BLE001
        return f"does not build: {summarize_error(err)}"
    from ...build.compile import call_main
    from ...base.compare import is_finite_outputs

    device = tvm.cpu()
    vm = relax.VirtualMachine(executable, device)
    inputs = [n for n in graph.nodes if n.op == "input"]
    ranges = graph.ranges()
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        values = {name: (np.full(node.shape, (lo, hi)[trial]) if trial < 2 else rng.uniform(lo, hi, node.shape))
                  .astype("float32") for node, (name, (lo, hi)) in zip(inputs, ranges.items())}
        if not is_finite_outputs(call_main(vm, device, list(ranges), values)):
            return f"NaN/Inf at trial {trial} ({'corner' if trial < 2 else 'random point'})"
    return None
