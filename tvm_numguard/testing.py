"""Helpers for tests and for pass authors: small seeded models and real ones.

* :func:`tiny_cnn_onnx`, :func:`tiny_mlp_onnx`: cheap ONNX models (build and run
  in well under a second) with seeded weights, for fast tests.
* :func:`light_model_path`, :func:`light_model`: the "light" ImageNet models that
  ship inside the ``onnx`` wheel (AlexNet, ResNet-50, DenseNet-121, ...), with
  their constant placeholder weights replaced by seeded random ones of a realistic
  scale, so that a forward pass on inputs in [0, 1] gives finite, non-degenerate
  outputs.
* :func:`randomize_onnx_weights`: that weight replacement, for any ONNX model.

Nothing here imports pytest.
"""

from __future__ import annotations

import math
import os
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]

LIGHT_MODELS = (
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
)

# ops that pass a weight through unchanged in meaning (only its layout changes):
# the op that consumes their output decides how the weight is initialized
_PASS_THROUGH = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose", "Identity", "Cast", "Expand"}

_FLOAT_TYPES = (1, 10, 11, 16)  # FLOAT, FLOAT16, DOUBLE, BFLOAT16


# ---------------------------------------------------------------------------
# light models from the onnx wheel


def light_model_path(name: str) -> str:
    """Path of ``onnx/backend/test/data/light/light_<name>.onnx`` in the installed onnx."""
    import onnx

    if name.startswith("light_"):
        name = name[len("light_"):]
    if name.endswith(".onnx"):
        name = name[: -len(".onnx")]
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx")
    if name not in LIGHT_MODELS or not os.path.isfile(path):
        raise ValueError(f"unknown light model '{name}' (known: {', '.join(LIGHT_MODELS)})")
    return path


def light_model(
    name: str,
    seed: int = 0,
    directory: Optional[PathLike] = None,
    randomize_initializers: bool = True,
) -> str:
    """Write light model ``name`` with seeded random weights to ``directory/<name>.onnx``.

    The light models keep a few trained tensors as ordinary initializers next to
    the placeholders; by default those are randomized too, so the whole model
    follows one consistent scale. Returns the path written.
    """
    import onnx

    if directory is None:
        import tempfile

        directory = tempfile.mkdtemp(prefix="numguard_light_")
    os.makedirs(os.fspath(directory), exist_ok=True)
    model = onnx.load(light_model_path(name))
    model = randomize_onnx_weights(model, seed, randomize_initializers=randomize_initializers)
    path = os.path.join(os.fspath(directory), f"{name}.onnx")
    onnx.save(model, path)
    return path


# ---------------------------------------------------------------------------
# weight randomization


def randomize_onnx_weights(model, seed: int, randomize_initializers: bool = False):
    """Return a copy of ``model`` whose placeholder weights are seeded random tensors.

    The light models store each float weight ``w`` as ``ConstantOfShape(w__SHAPE)``
    (one constant everywhere). Each such node is replaced by an initializer ``w``
    holding random values whose scale depends on the op that consumes it (looked up
    through layout ops such as Unsqueeze or Reshape):

    * Conv / Gemm / MatMul weights (rank >= 2): normal, std ``sqrt(2 / fan_in)`` (He);
    * biases and other rank-1 tensors: normal, std 0.01;
    * BatchNormalization: scale uniform(0.8, 1.2), bias and mean normal(0, 0.1),
      variance uniform(0.5, 1.5) (always positive);
    * a per-channel multiplier (Mul) near 1, a per-channel offset (Add) small.

    With ``randomize_initializers`` the ordinary float initializers get the same
    treatment (integer initializers, e.g. shapes, are never touched); otherwise
    they are kept. The result passes ``onnx.checker``.
    """
    import onnx
    from onnx import helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    rng = np.random.default_rng(seed)
    producers, consumers = _graph_maps(graph)
    init_by_name = {init.name: init for init in graph.initializer}
    needs_input_entry = out.ir_version < 4  # before IR 4 every initializer is also a graph input
    input_names = {inp.name for inp in graph.input}

    # 1. placeholders: ConstantOfShape(<w>__SHAPE) with a float value
    new_nodes = []
    replaced_shapes = set()
    for node in graph.node:
        tensor = _placeholder_tensor(node, init_by_name)
        if tensor is None:
            new_nodes.append(node)
            continue
        shape, dtype = tensor
        name = node.output[0]
        values = _random_weight(rng, shape, _role(name, graph, producers, consumers)).astype(dtype)
        graph.initializer.append(numpy_helper.from_array(values, name))
        if needs_input_entry or name in input_names:
            if name not in input_names:
                graph.input.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(values.dtype), values.shape))
                input_names.add(name)
        replaced_shapes.add(node.input[0])
    del graph.node[:]
    graph.node.extend(new_nodes)

    # 2. the shape initializers that only fed the placeholders are now unused
    still_used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    dead = {name for name in replaced_shapes if name not in still_used}
    if dead:
        kept = [init for init in graph.initializer if init.name not in dead]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        kept_inputs = [inp for inp in graph.input if inp.name not in dead]
        del graph.input[:]
        graph.input.extend(kept_inputs)
        kept_info = [vi for vi in graph.value_info if vi.name not in dead]
        del graph.value_info[:]
        graph.value_info.extend(kept_info)

    # 3. ordinary float initializers, on request
    if randomize_initializers:
        placeholder_names = {n.output[0] for n in model.graph.node if _placeholder_tensor(n, init_by_name) is not None}
        for i, init in enumerate(graph.initializer):
            if init.name in placeholder_names or init.data_type not in _FLOAT_TYPES:
                continue
            if not consumers.get(init.name):
                continue  # unused: leave it as it is
            array = numpy_helper.to_array(init)
            values = _random_weight(rng, array.shape, _role(init.name, graph, producers, consumers)).astype(array.dtype)
            graph.initializer[i].CopyFrom(numpy_helper.from_array(values, init.name))

    onnx.checker.check_model(out)
    return out


def _graph_maps(graph) -> Tuple[Dict[str, object], Dict[str, List[Tuple[object, int]]]]:
    producers: Dict[str, object] = {}
    consumers: Dict[str, List[Tuple[object, int]]] = {}
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


def _role(name: str, graph, producers, consumers) -> Tuple[str, int, dict]:
    """(op type, input index, attributes) of the op that really uses ``name``.

    Follows layout ops (Unsqueeze, Reshape, ...) forward; the first real consumer
    wins. ``("", -1, {})`` when nothing consumes it.
    """
    from onnx import helper

    seen = set()
    frontier = [name]
    while frontier:
        current = frontier.pop(0)
        if current in seen:
            continue
        seen.add(current)
        for node, index in consumers.get(current, []):
            if node.op_type in _PASS_THROUGH and index == 0:
                frontier.extend(node.output)
                continue
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            return node.op_type, index, attrs
    return "", -1, {}


def _fan_in(shape: tuple, op: str, index: int, attrs: dict) -> int:
    if op == "Gemm" and index in (0, 1):
        trans = attrs.get("transB" if index == 1 else "transA", 0)
        if index == 1:
            return int(np.prod(shape[1:])) if trans else int(shape[0])
        return int(shape[0]) if trans else int(np.prod(shape[1:]))
    if op == "MatMul" and len(shape) >= 2:
        return int(shape[-2]) if index == 1 else int(shape[-1])
    # Conv (out, in/groups, *kernel), ConvTranspose, and anything else: all but the first axis
    return max(1, int(np.prod(shape[1:])))


def _random_weight(rng: np.random.Generator, shape: tuple, role: Tuple[str, int, dict]) -> np.ndarray:
    op, index, attrs = role
    shape = tuple(int(d) for d in shape)
    if op == "BatchNormalization":
        if index == 1:  # scale
            return rng.uniform(0.8, 1.2, shape)
        if index == 4:  # variance: must stay positive
            return rng.uniform(0.5, 1.5, shape)
        return rng.normal(0.0, 0.1, shape)  # bias, mean
    if op in ("Mul", "Div"):  # per-channel scale (Caffe2's Scale layer)
        return rng.uniform(0.8, 1.2, shape)
    if op in ("Add", "Sub") or len(shape) <= 1:
        return rng.normal(0.0, 0.01, shape)
    std = math.sqrt(2.0 / _fan_in(shape, op, index, attrs))
    return rng.normal(0.0, std, shape)


# ---------------------------------------------------------------------------
# tiny models


def _he(rng: np.random.Generator, shape: tuple, fan_in: int) -> np.ndarray:
    return rng.normal(0.0, math.sqrt(2.0 / fan_in), shape).astype(np.float32)


def _save(graph, path: PathLike) -> str:
    import onnx
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tvm_numguard.testing")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    onnx.save(model, path)
    return path


def tiny_cnn_onnx(path: PathLike, seed: int = 0) -> str:
    """Write a small CNN: input ``x`` 1x3x16x16 float32, output ``y`` 1x10 (softmax).

    Conv(8, 3x3, pad 1) + Relu + MaxPool(2) + Conv(16, 3x3, pad 1) + Relu +
    GlobalAveragePool + Flatten + Gemm(10) + Softmax; seeded He-scaled weights as
    initializers. Returns ``path``.
    """
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weights = {
        "conv1_w": _he(rng, (8, 3, 3, 3), 27),
        "conv1_b": rng.normal(0.0, 0.05, (8,)).astype(np.float32),
        "conv2_w": _he(rng, (16, 8, 3, 3), 72),
        "conv2_b": rng.normal(0.0, 0.05, (16,)).astype(np.float32),
        "fc_w": _he(rng, (10, 16), 16),
        "fc_b": rng.normal(0.0, 0.05, (10,)).astype(np.float32),
    }
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["x", "conv1_w", "conv1_b"], ["c1"], name="conv1", **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2_w", "conv2_b"], ["c2"], name="conv2", **conv),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    return _save(graph, path)


def tiny_mlp_onnx(path: PathLike, seed: int = 0) -> str:
    """Write a small MLP: input ``x`` 1x32 float32, output ``y`` 1x16.

    MatMul(32x64) + Add + Relu + MatMul(64x16) + Add + Exp; seeded weights as
    initializers (the Exp makes it sensitive to approximate math). Returns ``path``.
    """
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weights = {
        "w1": _he(rng, (32, 64), 32),
        "b1": rng.normal(0.0, 0.05, (64,)).astype(np.float32),
        "w2": _he(rng, (64, 16), 64),
        "b2": rng.normal(0.0, 0.05, (16,)).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"], name="matmul1"),
        helper.make_node("Add", ["m1", "b1"], ["a1"], name="add1"),
        helper.make_node("Relu", ["a1"], ["h"], name="relu"),
        helper.make_node("MatMul", ["h", "w2"], ["m2"], name="matmul2"),
        helper.make_node("Add", ["m2", "b2"], ["a2"], name="add2"),
        helper.make_node("Exp", ["a2"], ["y"], name="exp"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    return _save(graph, path)


__all__ = [
    "LIGHT_MODELS",
    "light_model",
    "light_model_path",
    "randomize_onnx_weights",
    "tiny_cnn_onnx",
    "tiny_mlp_onnx",
]
