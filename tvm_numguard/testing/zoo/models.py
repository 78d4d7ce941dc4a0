"""Small seeded models and the onnx wheel's light ImageNet models, for tests and pass authors.

* :func:`tiny_cnn_onnx`, :func:`tiny_mlp_onnx`: cheap ONNX models (build and run
  in well under a second) with seeded weights, for fast tests.
* :func:`light_model_path`, :func:`light_model`: the "light" ImageNet models that
  ship inside the ``onnx`` wheel (AlexNet, ResNet-50, DenseNet-121, ...), with
  their placeholder weights replaced by seeded random ones (weights.py).
"""

from __future__ import annotations

import math
import os
from typing import Any, Optional, Union

import numpy as np

from .weights import randomize_onnx_weights

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
    conv: dict[str, Any] = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
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
