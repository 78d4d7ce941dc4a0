"""Seeded weights of a realistic scale for ONNX models whose weights are placeholders.

``randomize_onnx_weights`` replaces constant placeholder weights (the onnx
wheel's light models ship them) by seeded random tensors initialized by the
role each plays (convolution, batch norm, bias, ...), so that a forward pass
on inputs in [0, 1] gives finite, non-degenerate outputs.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union

import numpy as np

if TYPE_CHECKING:  # onnx is imported where used
    from onnx import NodeProto

PathLike = Union[str, "os.PathLike[str]"]

# ops that pass a weight through unchanged in meaning (only its layout changes):
# the op that consumes their output decides how the weight is initialized
_PASS_THROUGH = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose", "Identity", "Cast", "Expand"}

# ops whose output is non-negative when their (first) input is
_KEEPS_SIGN = _PASS_THROUGH | {
    "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Pad", "Concat", "Dropout", "LRN",
    "Split", "Slice", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth",
}

_FLOAT_TYPES = (1, 10, 11, 16)  # FLOAT, FLOAT16, DOUBLE, BFLOAT16



# ---------------------------------------------------------------------------
# weight randomization


def randomize_onnx_weights(model, seed: int, randomize_initializers: bool = False):
    """Return a copy of ``model`` whose placeholder weights are seeded random tensors.

    The light models store each float weight ``w`` as ``ConstantOfShape(w__SHAPE)``
    (one constant everywhere). Each such node is replaced by an initializer ``w``
    holding random values whose scale depends on the op that consumes it (looked up
    through layout ops such as Unsqueeze or Reshape):

    * Conv / Gemm / MatMul weights (rank >= 2): normal, std ``sqrt(2 / fan_in)``
      (He) where they act on ReLU outputs (or the model input), ``sqrt(1 / fan_in)``
      where they act on signed values, so activations keep their scale;
    * biases and other rank-1 tensors: normal, std 0.01;
    * BatchNormalization: scale uniform(0.9, 1.1), bias and mean normal(0, 0.1),
      variance uniform(0.8, 1.25) (always positive; about unit gain). A
      BatchNormalization that ends a residual branch gets a small scale (0.2-0.3),
      or about 1/sqrt(2) when both summands are branches, so deep residual nets
      (ResNet-50, ShuffleNet) neither blow up nor saturate their softmax;
    * a per-channel multiplier (Mul) near 1, a per-channel offset (Add) small.

    With ``randomize_initializers`` the ordinary float initializers get the same
    treatment (integer initializers, e.g. shapes, are never touched); otherwise
    they are kept. The result passes ``onnx.checker``.
    """
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    rng = np.random.default_rng(seed)
    info = _Graph(out.graph)
    if randomize_initializers:  # while the graph is intact
        _randomize_initializers(out.graph, info, rng)
    replaced_shapes = _replace_placeholders(out, info, rng)
    _drop_unused(out.graph, replaced_shapes)
    onnx.checker.check_model(out)
    return out


def _randomize_initializers(graph, info: "_Graph", rng) -> None:
    """Ordinary float initializers that something uses get random values."""
    from onnx import numpy_helper

    for i, init in enumerate(graph.initializer):
        if init.data_type not in _FLOAT_TYPES or not info.consumers.get(init.name):
            continue  # integer (shapes) or unused: left as it is
        array = numpy_helper.to_array(init)
        values = _random_weight(rng, array.shape, info.role(init.name, array.shape)).astype(array.dtype)
        graph.initializer[i].CopyFrom(numpy_helper.from_array(values, init.name))


def _replace_placeholders(model, info: "_Graph", rng) -> set:
    """Each ``ConstantOfShape(<w>__SHAPE)`` with a float value becomes an
    initializer ``w`` of random values; returns the shape inputs they read."""
    from onnx import helper, numpy_helper

    graph = model.graph
    init_by_name = {init.name: init for init in graph.initializer}
    needs_input_entry = model.ir_version < 4  # before IR 4 every initializer is also a graph input
    input_names = {inp.name for inp in graph.input}
    new_nodes, replaced_shapes = [], set()
    for node in graph.node:
        tensor = _placeholder_tensor(node, init_by_name)
        if tensor is None:
            new_nodes.append(node)
            continue
        shape, dtype = tensor
        name = node.output[0]
        values = _random_weight(rng, shape, info.role(name, shape)).astype(dtype)
        graph.initializer.append(numpy_helper.from_array(values, name))
        if needs_input_entry and name not in input_names:
            graph.input.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(values.dtype),
                                                             values.shape))
            input_names.add(name)
        replaced_shapes.add(node.input[0])
    del graph.node[:]
    graph.node.extend(new_nodes)
    return replaced_shapes


def _drop_unused(graph, replaced_shapes: set) -> None:
    """The shape initializers that only fed the placeholders are now unused: gone."""
    still_used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    dead = {name for name in replaced_shapes if name not in still_used}
    if not dead:
        return
    for field in (graph.initializer, graph.input, graph.value_info):
        kept = [entry for entry in field if entry.name not in dead]
        del field[:]
        field.extend(kept)


def _graph_maps(graph) -> Tuple[Dict[str, NodeProto], Dict[str, List[Tuple[NodeProto, int]]]]:
    producers: Dict[str, NodeProto] = {}
    consumers: Dict[str, List[Tuple[NodeProto, int]]] = {}
    for node in graph.node:
        for name in node.output:
            producers[name] = node
        for k, name in enumerate(node.input):
            if name:
                consumers.setdefault(name, []).append((node, k))
    return producers, consumers


def _placeholder_tensor(node, init_by_name) -> Optional[Tuple[tuple, np.dtype]]:
    """(shape, dtype) when ``node`` is ConstantOfShape of a constant shape with a float value."""
    from onnx import numpy_helper

    if node.op_type != "ConstantOfShape" or not node.input or node.input[0] not in init_by_name:
        return None
    value = next((a.t for a in node.attribute if a.name == "value"), None)
    if value is None or value.data_type not in _FLOAT_TYPES:
        return None  # the default value is float32 0; not a weight placeholder we know
    shape = tuple(int(d) for d in numpy_helper.to_array(init_by_name[node.input[0]]).ravel())
    return shape, numpy_helper.to_array(value).dtype


class _Role:
    """How a weight is used: the op that really consumes it, and where."""

    def __init__(self, op: str = "", index: int = -1, attrs: Optional[dict] = None, shape: Optional[tuple] = None,
                 residual: str = ""):
        self.op = op
        self.index = index
        self.attrs = attrs or {}
        self.shape = shape  # the weight's shape as the consumer sees it (after Reshape etc.)
        self.residual = residual  # BatchNormalization feeding a residual Add: "identity" or "projection"
        self.rectified = True  # a weight applied to ReLU outputs (He gain 2) or to signed values (gain 1)


class _Graph:
    """Producer/consumer look-ups over one ONNX graph."""

    def __init__(self, graph):
        from onnx import numpy_helper

        self.producers, self.consumers = _graph_maps(graph)
        self.constants = {init.name: init for init in graph.initializer}
        self.weights = set(self.constants)
        for node in graph.node:
            if node.op_type in ("ConstantOfShape", "Constant") and all(i in self.constants for i in node.input):
                self.weights.update(node.output)
        self._numpy = numpy_helper.to_array

    def is_weight(self, name: str) -> bool:
        """True when ``name`` is a constant, or a layout op applied to one."""
        seen = set()
        while name not in seen:
            seen.add(name)
            if name in self.weights:
                return True
            node = self.producers.get(name)
            if node is None or node.op_type not in _PASS_THROUGH or not node.input:
                return False
            name = node.input[0]
        return False

    def const_array(self, name: str) -> Optional[np.ndarray]:
        init = self.constants.get(name)
        return None if init is None else self._numpy(init)

    def role(self, name: str, shape: tuple) -> _Role:
        """Follow ``name`` forward through layout ops to the op that uses it."""
        from onnx import helper

        frontier: List[Tuple[str, Optional[tuple]]] = [(name, tuple(shape))]
        seen = set()
        while frontier:
            current, cur_shape = frontier.pop(0)
            if current in seen:
                continue
            seen.add(current)
            for node, index in self.consumers.get(current, []):
                if node.op_type in _PASS_THROUGH and index == 0:
                    next_shape = self._layout_shape(node, cur_shape)
                    frontier.extend((out, next_shape) for out in node.output)
                    continue
                attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
                role = _Role(node.op_type, index, attrs, cur_shape)
                if node.op_type == "BatchNormalization" and index == 1:
                    role.residual = self._residual_kind(node.output[0])
                if node.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul") and index in (0, 1):
                    data = node.input[1 - index] if node.op_type in ("Gemm", "MatMul") else node.input[0]
                    role.rectified = self._is_rectified(data)
                return role
        return _Role(shape=tuple(shape))

    def _layout_shape(self, node, shape: Optional[tuple]) -> Optional[tuple]:
        """The shape after layout op ``node`` where it is known, else ``shape``."""
        if shape is None:
            return None
        try:
            if node.op_type == "Reshape" and len(node.input) > 1:
                target = self.const_array(node.input[1])
                if target is None:
                    return shape
                dims = [shape[i] if int(d) == 0 and i < len(shape) else int(d) for i, d in enumerate(target.ravel())]
                return tuple(np.empty(shape, dtype=np.uint8).reshape(dims).shape)
            if node.op_type == "Transpose":
                perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
                return tuple(shape[p] for p in perm) if perm else tuple(reversed(shape))
            if node.op_type == "Flatten":
                axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
                axis = axis + len(shape) if axis < 0 else axis
                return (int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))
        except Exception:  # an unusual layout op: keep the shape we had
            return shape
        return shape

    def _is_rectified(self, name: str) -> bool:
        """True when activation ``name`` comes from a ReLU (or a model input) through
        ops that keep values non-negative (pooling, concatenation, layout, dropout, LRN)."""
        seen = set()
        while name not in seen:
            seen.add(name)
            node = self.producers.get(name)
            if node is None:
                return name not in self.weights  # a model input: the inputs tested are in [0, 1]
            if node.op_type in ("Relu", "Clip", "Sigmoid", "Softmax"):
                return True
            if node.op_type not in _KEEPS_SIGN or not node.input:
                return False
            name = node.input[0]
        return False

    def _skip_affine_forward(self, name: str):
        """From activation ``name``, pass layout ops and per-channel affine ops with a constant operand."""
        seen = set()
        while name not in seen:
            seen.add(name)
            users = self.consumers.get(name, [])
            if len(users) != 1:
                return users
            node, index = users[0]
            if node.op_type in _PASS_THROUGH and index == 0:
                name = node.output[0]
                continue
            if node.op_type in ("Mul", "Add", "Sub", "Div") and self.is_weight(node.input[1 - index]):
                name = node.output[0]
                continue
            return users
        return []

    def _comes_from_batchnorm(self, name: str) -> bool:
        seen = set()
        while name not in seen:
            seen.add(name)
            node = self.producers.get(name)
            if node is None:
                return False
            if node.op_type == "BatchNormalization":
                return True
            if node.op_type in _PASS_THROUGH:
                name = node.input[0]
            elif node.op_type in ("Mul", "Add", "Sub", "Div") and len(node.input) == 2:
                if self.is_weight(node.input[1]):
                    name = node.input[0]
                elif self.is_weight(node.input[0]):
                    name = node.input[1]
                else:
                    return False
            else:
                return False
        return False

    def _residual_kind(self, bn_output: str) -> str:
        """'identity' / 'projection' when the BatchNormalization ends a residual branch."""
        users = self._skip_affine_forward(bn_output)
        if len(users) != 1:
            return ""
        node, index = users[0]
        others = [name for k, name in enumerate(node.input) if k != index and name]
        if node.op_type not in ("Add", "Sum") or not others or any(self.is_weight(name) for name in others):
            return ""
        return "projection" if all(self._comes_from_batchnorm(name) for name in others) else "identity"


def _fan_in(shape: tuple, op: str, index: int, attrs: dict) -> int:
    if op == "Gemm" and index in (0, 1) and len(shape) == 2:
        trans = attrs.get("transB" if index == 1 else "transA", 0)
        if index == 1:
            return int(shape[1]) if trans else int(shape[0])
        return int(shape[0]) if trans else int(shape[1])
    if op == "MatMul" and len(shape) >= 2:
        return int(shape[-2]) if index == 1 else int(shape[-1])
    # Conv (out, in/groups, *kernel), ConvTranspose, and anything else: all but the first axis
    return max(1, int(np.prod(shape[1:])))


def _random_weight(rng: np.random.Generator, shape: tuple, role: _Role) -> np.ndarray:
    shape = tuple(int(d) for d in shape)
    op, index = role.op, role.index
    if op == "BatchNormalization":
        if index == 1:  # scale (with the variance below: about unit gain on average)
            if role.residual == "identity":
                # ends a residual branch added to its own input: keep the branch small,
                # or the activations double in variance at every block (ResNet-50: 2**16)
                return rng.uniform(0.2, 0.3, shape)
            if role.residual == "projection":
                # both summands are normalized branches: 1/sqrt(2) keeps the sum's scale
                return rng.uniform(0.6, 0.8, shape)
            return rng.uniform(0.9, 1.1, shape)
        if index == 4:  # variance: must stay positive
            return rng.uniform(0.8, 1.25, shape)
        return rng.normal(0.0, 0.1, shape)  # bias, mean
    if op in ("Mul", "Div"):  # per-channel scale (Caffe2's Scale layer)
        return rng.uniform(0.8, 1.2, shape)
    if op in ("Add", "Sub") or len(shape) <= 1:
        return rng.normal(0.0, 0.01, shape)
    seen_shape = role.shape if role.shape is not None and int(np.prod(role.shape)) == int(np.prod(shape)) else shape
    gain = 2.0 if role.rectified else 1.0  # He for ReLU inputs, LeCun otherwise: keeps the variance
    std = math.sqrt(gain / _fan_in(seen_shape, op, index, role.attrs))
    return rng.normal(0.0, std, shape)
