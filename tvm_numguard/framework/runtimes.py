"""Running the user's model in its own framework.

``open_framework(source, input_names)`` gives a ``Framework`` for an ONNX
model (ONNX Runtime, graph optimizations off so that its own fusions do not
move the numbers) or a torch ``ExportedProgram`` (PyTorch eager, through
``ExportedProgram.module()``), or a ``NoFramework`` saying why there is none
(a TVMScript model, a framework that is not installed or refuses the model).
A Framework answers three questions on one set of inputs: ``run`` (float32,
what the user's model computes), ``truth`` (the same model in float64, or a
FrameworkError where the framework has no float64 kernels) and ``values``
(every intermediate value, by its name in the model: the ONNX tensor name or
the FX node name, in execution order).
"""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Mapping, Optional, Sequence

import numpy as np

from ..errors import first_line


class FrameworkError(Exception):
    """The framework cannot answer (no float64 kernels, a run that fails)."""


@dataclasses.dataclass(frozen=True)
class NoFramework:
    """No framework runs this model; ``reason`` says why, in one line."""

    reason: str
    name: str = "none"


def open_framework(source, input_names: Sequence[str]):
    """A Framework for ``source`` (a model file path, an ``onnx.ModelProto``
    or a ``torch.export.ExportedProgram``), or a NoFramework saying why not."""
    kind = _kind_of(source)
    if kind is None:
        what = os.path.splitext(source)[1] if isinstance(source, str) else type(source).__name__
        return NoFramework(f"a {what or 'module'} model has no framework of its own: TVM's builds are compared "
                           "with each other only")
    try:
        return OnnxRuntime(source, input_names) if kind == "onnx" else TorchEager(source, input_names)
    except FrameworkError as err:
        return NoFramework(str(err))


def _kind_of(source) -> Optional[str]:
    if isinstance(source, (str, os.PathLike)):
        ext = os.path.splitext(os.fspath(source))[1].lower()
        return {".onnx": "onnx", ".pt2": "torch"}.get(ext)
    module = type(source).__module__
    if module.startswith("onnx"):
        return "onnx"
    if module.startswith("torch"):
        return "torch"
    return None


def _is_narrow_float(value: np.ndarray) -> bool:
    """A float input narrower than float64 (float32, float16, bfloat16): the truth feeds it as float64."""
    return value.dtype.kind == "f" and value.dtype.itemsize < 8 or value.dtype.name == "bfloat16"


class Framework:
    """What every framework answers; ``name`` says which one, with its version."""

    name = "framework"

    def run(self, inputs: Mapping[str, np.ndarray]) -> list:
        raise NotImplementedError

    def truth(self, inputs: Mapping[str, np.ndarray]) -> list:
        raise NotImplementedError

    def values(self, inputs: Mapping[str, np.ndarray]) -> dict:
        raise NotImplementedError


class OnnxRuntime(Framework):
    """An ONNX model in ONNX Runtime's CPU provider, graph optimizations off."""

    def __init__(self, source, input_names: Sequence[str]):
        try:
            import onnx
            import onnxruntime
        except ImportError as err:
            raise FrameworkError(f"ONNX Runtime is not installed ({err.name}): pip install onnxruntime") from None
        self.name = f"onnxruntime {onnxruntime.__version__}"
        self._names = list(input_names)
        try:
            self._model = onnx.load(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
        except Exception as err:  # protobuf raises several unrelated types
            raise FrameworkError(f"ONNX Runtime cannot read the model: {first_line(err, 240)}") from None
        self._session = self._open(self._model, "float32")
        self._truth_session = None  # made on first use: most checks never need it
        self._values_session = None

    @staticmethod
    def _open(model, what: str):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3  # its warnings about unused initializers are not ours
        options.intra_op_num_threads = 1  # the runs beside TVM's stay deterministic and cheap
        try:
            return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own unrelated types
            raise FrameworkError(f"ONNX Runtime cannot run the model in {what}: {first_line(err, 240)}") from None

    def _feed(self, session, inputs: Mapping[str, np.ndarray], dtype=None) -> dict:
        """The inputs by the model's own names; positionally where TVM's names
        are not the model's (a frontend that sanitized them: ``input.1`` -> ``input_1``)."""
        wanted = [i.name for i in session.get_inputs()]
        names = self._names if set(wanted) <= set(self._names) else wanted
        feed = {}
        for mine, theirs in zip(self._names, names):
            if theirs in wanted:
                value = np.asarray(inputs[mine])
                feed[theirs] = value.astype(dtype) if dtype is not None and _is_narrow_float(value) else value
        return feed

    def _run(self, session, inputs, dtype=None, names=None) -> list:
        try:
            return [np.asarray(v) for v in session.run(names, self._feed(session, inputs, dtype))]
        except Exception as err:  # onnxruntime raises its own unrelated types
            raise FrameworkError(f"ONNX Runtime fails to run the model: {first_line(err, 240)}") from None

    def run(self, inputs):
        return self._run(self._session, inputs)

    def truth(self, inputs):
        if self._truth_session is None:
            self._truth_session = self._open_double()
        if isinstance(self._truth_session, FrameworkError):  # tried once: the model has no float64 run
            raise self._truth_session
        return self._run(self._truth_session, inputs, np.float64)

    def _open_double(self):
        """A session of the model's float64 copy, or the FrameworkError that says why there is none."""
        from .double import to_float64

        try:
            return self._open(to_float64(self._model), "float64")
        except ValueError as err:
            return FrameworkError(f"no float64 copy of the model: {err}")
        except FrameworkError as err:
            return err

    def values(self, inputs) -> dict:
        """{ONNX tensor name: value} of every node output, in node order."""
        import onnx

        order = [out for node in self._model.graph.node for out in node.output if out]
        if self._values_session is None:
            exposed = onnx.ModelProto()
            exposed.CopyFrom(self._model)
            present = {o.name for o in exposed.graph.output}
            for name in order:
                if name not in present:
                    exposed.graph.output.append(onnx.ValueInfoProto(name=name))
                    present.add(name)
            self._values_session = self._open(exposed, "float32 with every node output exposed")
        names = [o.name for o in self._values_session.get_outputs()]
        got = dict(zip(names, self._run(self._values_session, inputs, names=names)))
        return {name: got[name] for name in order if name in got}


class TorchEager(Framework):
    """A torch ExportedProgram run eagerly (``ExportedProgram.module()``)."""

    def __init__(self, source, input_names: Sequence[str]):
        try:
            import torch
        except ImportError:
            raise FrameworkError("PyTorch is not installed: pip install torch") from None
        self.name = f"PyTorch {torch.__version__.split('+')[0]} eager"
        self._names = list(input_names)
        try:
            self._program = torch.export.load(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
            self._module = self._program.module()
        except Exception as err:  # torch raises many types while loading
            raise FrameworkError(f"PyTorch cannot load the program: {first_line(err, 240)}") from None
        self._double = None

    def _call(self, module, inputs, dtype=None) -> list:
        import torch
        from torch.utils._pytree import tree_leaves

        args = []
        for name in self._names:
            value = np.asarray(inputs[name])
            if dtype is not None and _is_narrow_float(value):
                value = value.astype(dtype)
            args.append(torch.from_numpy(np.ascontiguousarray(value)))
        try:
            with torch.no_grad():
                result = module(*args)
        except Exception as err:  # a program that fails eagerly
            raise FrameworkError(f"PyTorch fails to run the program: {first_line(err, 240)}") from None
        return [leaf.detach().cpu().numpy() for leaf in tree_leaves(result) if isinstance(leaf, torch.Tensor)]

    def run(self, inputs):
        return self._call(self._module, inputs)

    def truth(self, inputs):
        if self._double is None:
            try:
                self._double = copy.deepcopy(self._module).double()
            except Exception as err:  # tried once: the program has no float64 copy
                self._double = FrameworkError(f"no float64 copy of the program: {first_line(err, 240)}")
        if isinstance(self._double, FrameworkError):
            raise self._double
        outputs = self._call(self._double, inputs, np.float64)
        if any(o.dtype.kind == "f" and o.dtype.itemsize < 8 for o in outputs):
            raise FrameworkError("the program computes in float32 (or float16) even with float64 weights and inputs")
        return outputs

    def values(self, inputs) -> dict:
        """{FX node name: value} of every call in the decomposed program (the
        graph TVM's importer reads), in execution order."""
        import torch

        program = self._program.run_decompositions()
        recorded: dict = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(self, node):
                result = super().run_node(node)
                # a call that returns several tensors (native_group_norm: out, mean, rstd) is
                # named by its first, as TVM's importer names it
                first = result[0] if isinstance(result, (tuple, list)) and result else result
                if node.op == "call_function" and isinstance(first, torch.Tensor):
                    recorded[node.name] = first.detach().cpu().numpy().copy()
                return result

        args = [torch.from_numpy(np.ascontiguousarray(np.asarray(inputs[n]))) for n in self._names]
        try:
            with torch.no_grad():
                Recorder(program.module()).run(*args)
        except Exception as err:
            raise FrameworkError(f"PyTorch fails to run the program node by node: {first_line(err, 240)}") from None
        return recorded
