"""A small ONNX graph builder for the defects' cores and the contexts around
them: nodes get readable names, constants become initializers in the
model's float type, and graph outputs get their types from ONNX's own shape
inference."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

PLANTED = "planted"  # the planted node's name and its (first) output's: what a judge must name
INPUT = "x"
IR_VERSION = 10  # what ONNX Runtime 1.32 reads at every opset used here


class OnnxGraph:
    """Nodes and initializers of one graph whose float tensors are ``dtype``."""

    def __init__(self, dtype, opset: int = 17):
        self.dtype, self.opset = np.dtype(dtype), opset
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    @property
    def elem(self) -> int:
        """The model's float type as an ONNX element type (a Cast's ``to``)."""
        from onnx import helper

        return helper.np_dtype_to_tensor_dtype(self.dtype)

    def _name(self, stem: str) -> str:
        self._count += 1
        return f"{stem.lower()}_{self._count}"

    def const(self, value, dtype=None) -> str:
        """An initializer holding ``value`` (in the model's float type unless ``dtype``)."""
        from onnx import numpy_helper

        name = self._name("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype or self.dtype), name))
        return name

    def ints(self, values) -> str:
        return self.const(values, np.int64)

    def node(self, op: str, inputs: Sequence[str], name: Optional[str] = None, outputs: int = 1, **attrs):
        """Add an ``op`` node; its output name (or names, for ``outputs`` > 1)."""
        from onnx import helper

        name = name or self._name(op)
        outs = [name] if outputs == 1 else [f"{name}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def planted(self, op: str, inputs: Sequence[str], **attrs) -> str:
        """The node whose converter carries the defect: named and output ``PLANTED``."""
        return self.node(op, inputs, name=PLANTED, **attrs)

    def model(self, input_shape: Sequence[int], outputs: Sequence[str]):
        """The ModelProto with the float input ``INPUT`` of ``input_shape`` and these outputs, typed."""
        import onnx
        from onnx import helper

        graph = helper.make_graph(self.nodes, "numguard_judge_table",
                                  [helper.make_tensor_value_info(INPUT, self.elem, list(input_shape))],
                                  [onnx.ValueInfoProto(name=o) for o in outputs], initializer=self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = IR_VERSION
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        types = {v.name: v.type for v in inferred.graph.value_info}
        for output in model.graph.output:
            output.type.CopyFrom(types[output.name])
        onnx.checker.check_model(model, full_check=True)
        return model

    def shape_of(self, input_shape: Sequence[int], name: str) -> tuple:
        """The shape ONNX infers for the tensor ``name`` of the graph so far."""
        model = self.model(input_shape, [name])
        dims = model.graph.output[0].type.tensor_type.shape.dim
        return tuple(int(d.dim_value) for d in dims)
