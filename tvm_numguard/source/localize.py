"""Which node of the model TVM's import gets wrong.

The framework runs the model with every intermediate value kept (ONNX Runtime
with each node output made a graph output; PyTorch node by node through FX),
TVM runs its imported ``main`` legalized and built plainly with every kernel's
output captured (``capture/``), and the two meet through the frontend's own
tables (``provenance.py``: a binding's ``key`` is its ONNX tensor or FX node).
The first value in the framework's execution order whose TVM counterpart
differs beyond the tolerance (or in shape) is the origin: values after it
inherit its error.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import tvm
from tvm import relax

from ..capture import CaptureError, capture_values, value_graph
from ..errors import summarize_error
from ..framework import FrameworkError
from ..relax_ir import float_history
from ..shadow.build import compile_plain
from ..shadow.compare import compare_output
from ..tolerance import Tolerance
from ..targets import target_of
from .judgement import ImportOrigin


# operators whose result jumps where their input crosses a threshold: a difference
# within the tolerance upstream may flip them (as the oracle excuses for passes)
DISCONTINUOUS = frozenset({
    "relax.ceil", "relax.floor", "relax.round", "relax.sign", "relax.equal", "relax.not_equal", "relax.less",
    "relax.less_equal", "relax.greater", "relax.greater_equal", "relax.argmax", "relax.argmin",
    "relax.isnan", "relax.isinf", "relax.isfinite", "relax.trunc",
})


def is_discontinuous(op, dtype) -> bool:
    """A discontinuous operator, or a cast to an integer or bool (``dtype``: the value's)."""
    return op in DISCONTINUOUS or (op == "relax.astype" and np.dtype(dtype).kind in "iub")


def tvm_values(model, witness: Mapping[str, np.ndarray], target) -> dict:
    """{binding name of the imported main: its value on the witness} for every
    binding a kernel computes, and the inputs."""
    target = target_of(target)
    with target:
        legal = relax.transform.LegalizeOps()(model.mod)
    graph = value_graph(legal, model.mod)
    build = compile_plain(legal, target)
    if not build.ok:
        raise CaptureError(f"the imported module does not build on its own: {build.error}")
    values = capture_values(build.executable, build.device, graph, model.input_names(), witness)
    # a cast or an alias has its argument's value, in its own dtype (a cast to bool is no float)
    out = {}
    for name in graph.order:
        if graph.canon(name) in values:
            value = np.asarray(values[graph.canon(name)])
            dtype = graph.nodes[name].dtype
            out[name] = value.astype(dtype) if dtype and dtype != str(value.dtype) and dtype != "bfloat16" else value
    return out


def first_difference(model, framework, witness: Mapping[str, np.ndarray], target, tol: Tolerance) -> tuple:
    """(ImportOrigin or None, why none was named) for ``model`` (its provenance
    name the framework's values) on ``witness``."""
    named: dict = {}
    for name, origin in model.provenance.items():  # main's order: a value's own binding before its aliases
        if origin.key and not origin.inside:
            named.setdefault(origin.key, (name, origin))
    if not named:
        return None, "the model's frontend kept no names for its values"
    try:
        expected = framework.values(witness)
        computed = tvm_values(model, witness, target)
    except (FrameworkError, CaptureError) as err:
        return None, str(err)
    except Exception as err:  # TVM raises many types; naming the node is a help
        return None, summarize_error(err)
    history = float_history(model.mod["main"])
    compared = 0
    for key, value in expected.items():
        name, origin = named.get(key, (None, None))
        if name is None or name not in computed:
            continue
        mine, theirs = np.asarray(computed[name]), np.asarray(value)
        compared += 1
        # each value at the precision of the narrowest float it passed through
        metrics = compare_output(0, theirs, mine, tol.through([history.get(name)]), top_k=1)
        if metrics.violated:
            worst = metrics.worst[0] if metrics.worst else {}
            return ImportOrigin(origin.label, key, origin.op, list(mine.shape), list(theirs.shape), metrics.score,
                                metrics.max_abs, {"index": worst.get("index"), "tvm": worst.get("opt"),
                                                  "framework": worst.get("ref")},
                                binding=name, discontinuous=is_discontinuous(origin.op, theirs.dtype)), None
    if not compared:
        return None, "no value of the model could be paired with one TVM computes"
    return None, (f"none of the {compared} values both compute differs beyond the tolerance on the witness "
                  "(the difference is below it at every node, and adds up)")
