"""Debug-executor capture: the output of every kernel call of one run.

``relax.VirtualMachine.set_instrument`` calls the instrument around every VM
call; kernels use destination passing, so after a kernel call its outputs are
its last arguments. They are copied at once (the VM reuses buffers). Kernel
calls run in the order of main's ``call_tir`` bindings, which is how a captured
value finds the binding it came from.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Sequence

import numpy as np
import tvm
from tvm import relax

from ..compile import device_array


class CaptureError(Exception):
    """The kernel calls of a run do not line up with the module's bindings."""


@dataclasses.dataclass
class KernelCall:
    symbol: str
    outputs: list  # numpy arrays


def capture_run(executable, device, input_names: Sequence[str], inputs: Mapping[str, np.ndarray],
                kernels: Mapping[str, int]) -> tuple:
    """Run ``main`` once; returns (kernel calls in order, the result of main).

    ``kernels`` maps the symbols that are kernels (the module's PrimFuncs) to
    their number of outputs; other VM calls (allocation, shape checks) are not kept."""
    calls: list = []

    def record(func, symbol, before_run, ret_value, *args):
        if not before_run and symbol in kernels:
            calls.append(KernelCall(symbol, [np.array(a.numpy()) for a in args[len(args) - kernels[symbol]:]]))
        return None

    vm = relax.VirtualMachine(executable, device)
    vm.set_instrument(record)
    result = vm["main"](*[tvm.runtime.tensor(device_array(inputs[n]), device) for n in input_names])
    return calls, result


def attach(graph, calls: list, inputs: Mapping[str, np.ndarray]) -> dict:
    """name -> captured value, for the params and every kernel node of ``graph``
    that ran. Calls are paired with kernel bindings in order; a binding whose
    kernel is not the next call's did not run (the build folded it: a kernel of
    constants only) and gets no value."""
    values = {name: np.asarray(v) for name, v in inputs.items() if name in graph.nodes}
    position, several = 0, {}
    for node in graph.kernels():
        if position < len(calls) and calls[position].symbol == node.kernel:
            values[node.name] = calls[position].outputs[0]
            several[node.name] = calls[position].outputs
            position += 1
    if position != len(calls):
        left = calls[position].symbol
        raise CaptureError(f"kernel call {position} ({left}) has no binding in the module's main: "
                           f"{len(calls)} calls, {len(graph.kernels())} call_tir bindings")
    # an item of a kernel's tuple result (batch_norm's output, mean and variance): its own output
    for node in graph.nodes.values():
        if node.kind == "get_item" and graph.canon(node.args[0]) in several:
            index = int(node.op.split("[")[1].rstrip("]"))
            outputs = several[graph.canon(node.args[0])]
            if index < len(outputs):
                values[node.name] = outputs[index]
    return values


def capture_values(executable, device, graph, input_names: Sequence[str], inputs: Mapping[str, np.ndarray]) -> dict:
    """Every value of ``graph`` that a run of ``executable`` computes: params and kernel outputs."""
    kernels = {k.kernel: k.n_outputs for k in graph.kernels()}
    calls, _ = capture_run(executable, device, input_names, inputs, kernels)
    return attach(graph, calls, inputs)


# operators whose result holds its argument's elements, rearranged or repeated: a
# build may turn their kernel into a view of the argument (TVM's RewriteDataflowReshape),
# so no kernel call computes them, and their value is their argument's, so made
_VIEWS: dict[str, Callable[[np.ndarray, tuple], np.ndarray]] = {
    "reshape": np.reshape, "expand_dims": np.reshape, "squeeze": np.reshape, "flatten": np.reshape,
    "broadcast_to": np.broadcast_to}


def with_views(graph, values: dict) -> dict:
    """``values`` (``capture_values``'s) and the value of every view no kernel
    call computed (a reshape, a broadcast: ``_VIEWS``), made from its
    argument's: they have its worst error, so a trace shows them with it."""
    out = dict(values)
    for name in graph.order:
        node = graph.nodes[name]
        make = _VIEWS.get(node.op.removeprefix("relax."))
        if name in out or make is None or not node.args or node.shape is None:
            continue
        arg = node.args[0] if node.args[0] in out else graph.canon(node.args[0])
        if arg in out and all(isinstance(d, int) for d in node.shape):
            try:
                out[name] = make(out[arg], tuple(node.shape))
            except ValueError:  # the argument's elements do not make that shape: no value to show
                continue
    return out
