"""The mixed corner of a weighted sum: which input elements sit at which end.

A scalar interval says a convolution's output can overflow somewhere between
its inputs' ends, and ``drivers`` finds that neither end alone does it (a
``mixed`` corner). When the warned value is a matmul or conv of constant
weights over a model input (through casts and shape changes only) and
through elementwise steps that keep its sign (a cast, relu, a bias), the
corner is known exactly: each element at the end its weight's sign asks for,
for the output column (channel) of largest total weight. ``pattern`` gives it
in the input's shape (+1 high, -1 low), or None where it cannot tell.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import tvm

from ...ir.relax_ir import function_bindings, op_name, tensor_type

PASS_THROUGH = {"relax.astype", "relax.nn.relu", "relax.add", "relax.reshape", "relax.expand_dims",
                "relax.squeeze", "relax.flatten"}
WEIGHTED = {"relax.matmul", "relax.nn.conv2d"}
HOPS = 4


def _const(expr, producers) -> Optional[np.ndarray]:
    """A constant, or a constant through a cast (ToMixedPrecision's float16 weights)."""
    for _ in range(HOPS):
        if isinstance(expr, tvm.ir.expr.GenericConst):
            return expr.value.numpy().astype(np.float64)
        value = producers.get(expr)
        if value is None or op_name(value) != "relax.astype":
            return None
        expr = value.args[0]
    return None


def pattern(func, position: int, params: dict, upper: bool = True) -> Optional[tuple]:
    """(input name, pattern) for the binding at ``position`` of ``func``, or None.
    ``upper``: the warning is about large positive values (else large negative)."""
    bindings = function_bindings(func)
    producers = {b.var: b.value for b in bindings}
    value = bindings[position].value
    for _ in range(HOPS):
        if op_name(value) in WEIGHTED:
            break
        if op_name(value) not in PASS_THROUGH or not value.args:
            return None
        value = producers.get(value.args[0])
        if value is None:
            return None
    else:
        return None
    weights = _const(value.args[1], producers)
    data = value.args[0]
    for _ in range(HOPS):
        if data in params:
            break
        step = producers.get(data)
        if step is None or op_name(step) not in ("relax.astype",):
            return None
        data = step.args[0]
    else:
        return None
    shape = tensor_type(data)[0]
    if weights is None or shape is None:
        return None
    sign = 1.0 if upper else -1.0
    if op_name(value) == "relax.matmul":
        if weights.ndim != 2 or not shape or shape[-1] != weights.shape[0]:
            return None
        column = weights[:, int(np.abs(weights).sum(axis=0).argmax())]
        return params[data], np.broadcast_to(sign * np.sign(column), shape).copy()
    attrs = value.attrs
    if str(attrs.data_layout) != "NCHW" or str(attrs.kernel_layout) != "OIHW" or int(attrs.groups) != 1 \
            or len(shape) != 4:
        return None
    kernel = weights[int(np.abs(weights).sum(axis=(1, 2, 3)).argmax())]
    pad_h, pad_w = int(attrs.padding[0]), int(attrs.padding[1])
    c, kh, kw = kernel.shape
    rows = (np.arange(shape[2]) + pad_h) % kh
    cols = (np.arange(shape[3]) + pad_w) % kw
    tiled = kernel[:, rows][:, :, cols]
    return params[data], np.broadcast_to(sign * np.sign(tiled)[None], shape).copy()
