"""In which float the model itself computes each value: the import question's tolerance.

An output's tolerance follows the narrowest float in which arithmetic on its
path rounded (``tolerance.Tolerance.through``). For the import question that
must be read off the model as its framework defines it, not off TVM's import:
a converter that computes a float32 operator in float16 would otherwise loosen
the very tolerance that should catch it. Storage is not arithmetic: an input,
a constant, a reshape, a gather or a cast up of a float16 value rounds nothing.

``onnx_history(model, dtypes)`` reads an ONNX graph (``dtypes``: each value's
numpy dtype, from a run of the model); ``fx_history(graph_module)`` a torch
program's FX graph (each node's ``meta["val"]``). Both give {value name:
narrowest float dtype, or None} and, by ``outputs``, one entry per output.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

FLOAT_WIDTHS = ("bfloat16", "float16", "float32", "float64")

# ONNX operators whose every result element is an element of an input (or a constant)
EXACT_ONNX = frozenset({
    "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Gather", "GatherElements",
    "GatherND", "Slice", "Concat", "Split", "Tile", "Pad", "Relu", "Max", "Min", "Abs", "Neg", "Where", "Clip",
    "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin", "Floor", "Ceil", "Round", "Sign", "ScatterElements",
    "ScatterND", "Scatter", "DepthToSpace", "SpaceToDepth", "Shape", "Size", "Constant", "ConstantOfShape",
    "TopK", "Dropout", "SequenceConstruct", "SequenceAt", "SequenceInsert", "SequenceErase", "SplitToSequence",
    "ConcatFromSequence", "Compress", "NonZero", "OneHot", "Trilu", "ReverseSequence", "Optional",
    "OptionalGetElement",
})
# aten operators (the decomposed program's) of the same kind
EXACT_ATEN = frozenset({
    "view", "reshape", "_unsafe_view", "permute", "transpose", "t", "expand", "unsqueeze", "squeeze", "select",
    "slice", "cat", "stack", "split", "split_with_sizes", "chunk", "clone", "contiguous", "alias", "index",
    "index_select", "gather", "embedding", "relu", "clamp", "clamp_min", "clamp_max", "maximum", "minimum", "max",
    "min", "amax", "amin", "abs", "neg", "where", "flatten", "repeat", "constant_pad_nd", "max_pool2d_with_indices",
    "max_pool1d", "max_pool2d", "max_pool3d", "detach", "floor", "ceil", "round", "sign", "zeros", "ones", "full",
    "empty", "zeros_like", "ones_like", "full_like", "scalar_tensor", "getitem", "unbind", "narrow", "roll", "flip",
    "_assert_tensor_metadata", "lift_fresh_copy", "masked_fill", "topk", "sort",
})
_CASTS_ATEN = frozenset({"_to_copy", "to", "type_as", "_to_dim_order_copy"})


def narrower(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """The narrower of two float dtypes (None and other dtypes count as no float)."""
    ranks = [d for d in (a, b) if d in FLOAT_WIDTHS]
    return min(ranks, key=FLOAT_WIDTHS.index) if ranks else None


def _step(exact: bool, cast: bool, source: Optional[str], result: Optional[str], read: Optional[str]) -> Optional[str]:
    """One value's history: ``read`` (its arguments'), and the rounding of its own computation."""
    if exact or result not in FLOAT_WIDTHS:
        return read
    if cast and source in FLOAT_WIDTHS and FLOAT_WIDTHS.index(result) >= FLOAT_WIDTHS.index(source):
        return read  # a cast to a float at least as wide is exact
    if cast and source not in FLOAT_WIDTHS and result in ("float32", "float64"):
        return read  # an integer to a wide float
    return narrower(read, result)


def onnx_history(model, dtypes: Mapping[str, str]) -> dict:
    """{tensor name: the narrowest float its value's computation rounded in} for an ONNX graph."""
    history: dict = {}
    for node in model.graph.node:
        read = None
        for name in node.input:
            read = narrower(read, history.get(name))
        for name in node.output:
            if name:
                source = dtypes.get(node.input[0]) if node.input else None
                history[name] = _step(node.op_type in EXACT_ONNX, node.op_type in ("Cast", "CastLike"), source,
                                      dtypes.get(name), read)
    return history


def fx_history(module) -> dict:
    """{FX node name: the narrowest float its value's computation rounded in} for a torch program."""
    import torch

    def dtype(node) -> Optional[str]:
        value: Any = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        value = value[0] if isinstance(value, (tuple, list)) and value else value
        return str(value.dtype).replace("torch.", "") if hasattr(value, "dtype") else None

    history: dict = {}
    for node in module.graph.nodes:
        if node.op != "call_function":
            history[node.name] = None
            continue
        read = None
        for arg in node.all_input_nodes:
            read = narrower(read, history.get(arg.name))
        name = getattr(node.target, "__name__", str(node.target)).split(".")[0]
        source = dtype(node.all_input_nodes[0]) if node.all_input_nodes else None
        history[node.name] = _step(name in EXACT_ATEN, name in _CASTS_ATEN, source, dtype(node), read)
    return history


__all__ = ["EXACT_ATEN", "EXACT_ONNX", "fx_history", "narrower", "onnx_history"]
