"""The contexts a planted defect is judged in: each places a defect's core
(the broken operator, ``PLANTED``) in a model written to a file, with the
input range where the defect shows.

- ``a``: float32, the core's output scaled by 2.
- ``b``: the same model all in float16.
- ``c``: two scales in one output: the core's output times 0.01 (~1e-2)
  concatenated with values in the hundreds (Concat / ``torch.cat``).
- ``d``: a discontinuous operator after the core (Floor, a comparison,
  ArgMax or a cast to int, by defect) as the first output, and the core's
  output scaled as a second, continuous one.
- ``e`` (ONNX): a second operator ONNX Runtime has no float64 kernel for
  (``Erf``, checked by ``tests/test_judge_table.py``) beside the core, as a
  second output: the framework's float64 copy cannot run.
- ``f`` (torch): a model mixing dtypes: a branch computed in float16 by an
  explicit ``.to(torch.float16)``, so ``.double()`` of the program is no
  float64 model.
- ``g``: context a's model, with the planted node's conversion ending in a
  reshape (no kernel of its own: the node's value is a view): the converter of
  the planted operator gets two reshapes appended (``ends_in_reshape``), so the
  node at fault must be named through them, not its consumer.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from . import DEFECTS, load
from ._graph import INPUT, PLANTED, OnnxGraph

CONTEXTS = {
    "a": "float32",
    "b": "float16",
    "c": "two scales in one output",
    "d": "discontinuous op after it",
    "e": "an op ONNX Runtime has no float64 kernel for",
    "f": "mixed float16/float32 torch model",
    "g": "a conversion that ends in a reshape",
}
FRAMEWORK_CONTEXTS = {"onnx": "abcdeg", "torch": "abcdfg"}
DISCONTINUOUS = ("floor", "greater", "argmax", "cast_int")
NO_FLOAT64_OP = "Erf"  # ONNX Runtime 1.32's CPU provider registers Erf for float only


@dataclasses.dataclass(frozen=True)
class Cell:
    """One (defect, context) model on disk: ``key`` is the planted node's name
    in it (ONNX output tensor / FX node) that a judge must name."""

    defect: str
    context: str
    path: str
    key: str
    low: float
    high: float


def contexts_for(name: str) -> str:
    """The context letters of defect ``name`` (unfair ones included: the table says why they are left out)."""
    return FRAMEWORK_CONTEXTS[load(name).FRONTEND]


def left_out(name: str) -> dict:
    """{context letter: why} for the contexts of defect ``name`` that are not judged:
    unfair ones first ("unfair: ..."), then those TVM 0.27 itself cannot import or build."""
    module = load(name)
    reasons = {c: f"TVM 0.27 fails unpatched: {why}" for c, why in module.UNBUILDABLE.items()}
    reasons.update({c: f"unfair: {why}" for c, why in module.UNFAIR.items()})
    return reasons


def discontinuous_kind(name: str) -> str:
    return DISCONTINUOUS[DEFECTS.index(name) % len(DISCONTINUOUS)]


def build(name: str, context: str, directory: str) -> Cell:
    """Write defect ``name``'s model in ``context`` to ``directory``; its Cell."""
    module = load(name)
    if context not in contexts_for(name):
        raise ValueError(f"context {context!r} is not one of {name}'s ({contexts_for(name)})")
    path = os.path.join(directory, f"{name}-{context}")
    if module.FRONTEND == "onnx":
        path, key = _onnx_model(module, name, context, path + ".onnx"), PLANTED
    else:
        path, key = _torch_model(module, name, context, path + ".pt2")
    return Cell(name, context, path, key, float(module.RANGE[0]), float(module.RANGE[1]))


def _onnx_model(module, name: str, context: str, path: str) -> str:
    import onnx

    graph = OnnxGraph(np.float16 if context == "b" else np.float32, module.OPSET)
    planted = module.core(graph, INPUT)
    onnx.save(graph.model(module.SHAPE, _onnx_outputs(graph, module, name, context, planted)), path)
    return path


def _onnx_outputs(g: OnnxGraph, module, name: str, context: str, p: str) -> list:
    scaled = g.node("Mul", [p, g.const(2.0)])
    if context in "abg":
        return [scaled]
    if context == "c":
        shape = g.shape_of(module.SHAPE, p)
        big = np.random.default_rng(7).uniform(100.0, 400.0, shape)
        level = g.node("ReduceMean", [INPUT], keepdims=0)
        return [g.node("Concat", [g.node("Mul", [p, g.const(0.01)]), g.node("Add", [g.const(big), level])], axis=-1)]
    if context == "d":
        kind = discontinuous_kind(name)
        if kind == "floor":
            jump = g.node("Floor", [g.node("Mul", [p, g.const(4.0)])])
        elif kind == "greater":
            jump = g.node("Greater", [p, g.const(0.0)])
        elif kind == "argmax":
            jump = g.node("ArgMax", [p], axis=-1, keepdims=0)
        else:
            jump = g.node("Cast", [g.node("Mul", [p, g.const(4.0)])], to=6)  # INT32
        return [jump, scaled]
    return [scaled, g.node(NO_FLOAT64_OP, [g.node("Mul", [INPUT, g.const(0.5)])])]


def _torch_model(module, name: str, context: str, path: str) -> tuple:
    import torch

    from ._torch import ContextModule

    torch.manual_seed(0)
    core = module.core().eval()
    dtype = torch.float16 if context == "b" else torch.float32
    low, high = module.RANGE
    example = (torch.rand(module.SHAPE, generator=torch.Generator().manual_seed(0)) * (high - low) + low)
    with torch.no_grad():
        planted_shape = tuple(core(example).shape)
    wrapped = ContextModule(core, context, discontinuous_kind(name), planted_shape).to(dtype).eval()
    program = torch.export.export(wrapped, (example.to(dtype),))
    torch.export.save(program, path)
    return path, planted_key(path, module.TARGET)


def planted_in(name: str, context: str):
    """The defect ``name`` planted for ``context``: its own plant, and in context g the planted
    operator's stock converter (or the planted one) ending in two reshapes (a view of its result)."""
    import contextlib

    module = load(name)
    if context != "g":
        return module.planted()
    stack = contextlib.ExitStack()
    stack.enter_context(module.planted())
    stack.enter_context(ends_in_reshape(module))
    return stack


def ends_in_reshape(module):
    """The converter of ``module``'s operator with its result flattened and shaped back."""
    from tvm import relax

    from ._plant import onnx_converter, torch_converter

    def reshaped(bb, out):
        if isinstance(out, relax.Tuple):  # BatchNormalization's (Y, mean, var): Y ends in the reshape, as it is
            return relax.Tuple([reshaped(bb, out.fields[0]), *out.fields[1:]])
        out = bb.normalize(out)
        if isinstance(out.ty, relax.TupleType):  # LayerNormalization's (Y, Mean, InvStdDev), bound
            items = [bb.emit(relax.TupleGetItem(out, i)) for i in range(len(out.ty.fields))]
            return relax.Tuple([reshaped(bb, items[0]), *items[1:]])
        shape = [int(d) for d in out.ty.shape.values]
        return bb.emit(relax.op.reshape(bb.emit(relax.op.reshape(out, [-1])), shape))

    if module.FRONTEND == "onnx":
        return onnx_converter(module.OP, lambda original: lambda cls, bb, inputs, attr, params: reshaped(
            bb, original(bb, inputs, attr, params)))
    return torch_converter(module.TARGET, lambda importer, original: lambda node: reshaped(
        importer.block_builder, original(node)))


def planted_key(path: str, target: str) -> str:
    """The FX node name of the one ``aten.<target>`` call in the decomposed program
    (the graph TVM's importer reads and numguard names values by)."""
    import torch

    program = torch.export.load(path).run_decompositions()
    names = [n.name for n in program.graph.nodes if n.op == "call_function" and str(n.target) == f"aten.{target}"]
    if len(names) != 1:
        raise ValueError(f"{path}: {len(names)} aten.{target} calls, expected exactly one")
    return names[0]
