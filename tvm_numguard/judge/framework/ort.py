"""An ONNX model in ONNX Runtime's CPU provider, graph optimizations off (its
own fusions must not move the numbers), beside the float64 truth."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

import numpy as np

from ..summation import SUMMING_ONNX_OPS, is_mean, magnitudes_of, onnx_terms, summation_bound
from .runtimes import Framework, FrameworkError, InputsRefused, first_line, is_narrow_float, moved, note_list

if TYPE_CHECKING:  # imported where used
    from .onnx_truth import NodeByNode

_NARROW_TYPES = (10, 16)  # ONNX's FLOAT16 and BFLOAT16
_FLOAT_TYPES = (1, 10, 11, 16)  # ONNX's FLOAT, FLOAT16, DOUBLE and BFLOAT16


def open_session(model, what: str):
    """An ONNX Runtime session of ``model``; FrameworkError saying ``what`` was refused."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3  # its warnings about unused initializers are not ours
    options.intra_op_num_threads = 1  # the runs beside TVM's stay deterministic and cheap
    try:
        return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime raises its own unrelated types
        raise FrameworkError(f"ONNX Runtime cannot run the model in {what}: {first_line(err, 240)}") from None


class OnnxRuntime(Framework):
    """An ONNX model in ONNX Runtime; its truth is ONNX Runtime's float64 copy
    of the model, else the model node by node in float64."""

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
        try:
            self._session = open_session(self._model, "float32")
        except FrameworkError as err:  # no kernel for a node's dtype or opset: its float64 truth may still run
            self._session = err
        self._truth = None  # made on first use: most checks never need it
        self._nodes = None  # NodeByNode, where the float64 copy is refused
        self._why_nodes = ""
        self._values_sessions: dict = {}  # frozenset of grafted names -> session
        self._moving: Optional[NodeByNode] = None  # NodeByNode for moved_truth, whose narrow values move
        self._narrow: Optional[frozenset] = None  # the node outputs the model declares narrow, once asked
        self._dtypes: Optional[dict] = None  # {node output: its declared float}, once asked

    def _feed(self, session, inputs: Mapping[str, np.ndarray], dtype=None, extra=None) -> dict:
        """The inputs by the model's own names; positionally where TVM's names
        are not the model's (a frontend that sanitized them: ``input.1`` -> ``input_1``)."""
        wanted = [i.name for i in session.get_inputs()]
        names = self._names if set(self._names) & set(wanted) or not wanted else self._model_input_names()
        feed = {}
        for mine, theirs in zip(self._names, names):
            if theirs in wanted:
                value = np.asarray(inputs[mine])
                feed[theirs] = value.astype(dtype) if dtype is not None and is_narrow_float(value) else value
        for name, value in (extra or {}).items():
            if name in wanted:
                feed[name] = value
        return feed

    def _model_input_names(self) -> list:
        initializers = {t.name for t in self._model.graph.initializer}
        return [i.name for i in self._model.graph.input if i.name not in initializers]

    def _by_model_names(self, inputs: Mapping[str, np.ndarray]) -> dict:
        """``inputs`` (keyed by TVM's names) keyed by the model's own input names."""
        names = self._model_input_names()
        if set(self._names) <= set(names):
            return dict(inputs)
        return {theirs: inputs[mine] for mine, theirs in zip(self._names, names)}

    def _run(self, session, inputs, dtype=None, names=None, extra=None) -> list:
        try:
            return [np.asarray(v) for v in session.run(names, self._feed(session, inputs, dtype, extra))]
        except Exception as err:  # onnxruntime raises its own unrelated types
            raise FrameworkError(f"ONNX Runtime fails to run the model: {first_line(err, 240)}") from None

    def run(self, inputs, grafts=None):
        """The model's outputs on ``inputs``; each tensor named in ``grafts`` takes the given value."""
        self._refuse_undeclared(inputs)
        if isinstance(self._session, FrameworkError):
            raise self._session
        if not grafts:
            return self._run(self._session, inputs)
        values = self.values(inputs, grafts)
        known = {**values, **dict(grafts), **self._by_model_names(inputs)}
        return [np.asarray(known[o.name]) for o in self._model.graph.output]

    def _refuse_undeclared(self, inputs) -> None:
        """InputsRefused where an input's shape moves a dimension the model fixes."""
        declared = {i.name: [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
                    for i in self._model.graph.input}
        for name, value in self._by_model_names(inputs).items():
            dims = declared.get(name)
            shape = np.shape(value)
            if dims is not None and (len(dims) != len(shape) or any(d not in (None, s) for d, s in zip(dims, shape))):
                raise InputsRefused(f"the model fixes input '{name}' at {dims}, given {list(shape)}: "
                                    "ONNX Runtime has no answer for another size")

    def truth(self, inputs):
        if self._truth is None:
            self._truth = self._open_double()
        if not isinstance(self._truth, FrameworkError):
            return self._run(self._truth, inputs, np.float64)
        if self._nodes is None:
            from .onnx_truth import NodeByNode

            self._why_nodes = str(self._truth)
            self._nodes = NodeByNode(self._model)
        outputs = self._nodes.outputs(self._by_model_names(inputs))
        if all(o is None for o in outputs):
            raise FrameworkError(f"no float64 run of the model reaches an output: "
                                 f"{note_list('no implementation runs', list(self._nodes.failed))}")
        return outputs

    def moved_truth(self, inputs, seed, scale):
        """The model node by node in float64, its inputs moved, every value it declares in a narrow
        float moved, and every sum moved within its summation bound; where no float input can move
        (token ids), every value the model computes in float moves instead, as any implementation's
        roundings move it: one framework's exact-by-luck result is no bound."""
        moving = self._narrow_values() or (self._float_values() if self._integer_inputs(inputs) else frozenset())
        from .onnx_truth import NodeByNode

        if self._moving is None:
            self._moving = NodeByNode(self._model)
        rng = np.random.default_rng(seed)
        given = {name: moved(value, rng, scale) for name, value in self._by_model_names(inputs).items()}
        outputs = self._moving.outputs(given, move=lambda name, value: moved(value, rng, scale) if name in moving
                                       else value, sums=(np.random.default_rng((seed, 1)), self._value_dtypes()))
        if any(o is None for o in outputs) and not moving:  # a node nothing runs alone: the whole copy moves
            return super().moved_truth(inputs, seed, scale)
        if all(o is None for o in outputs):
            raise FrameworkError("no float64 run of the model reaches an output")
        return outputs

    def node_summation_bound(self, key, args, inputs, value):
        from .onnx_truth import run_alone, widen

        node = self._node_of(key)
        dtype = self._value_dtypes().get(key)
        if dtype not in ("float32", "float64") or node.op_type not in SUMMING_ONNX_OPS:
            return None  # no float sum, or one of no known float: nothing excused
        values = [widen(v) for v in self._node_values(node, args, inputs)]
        at = list(node.output).index(key)
        terms = onnx_terms(node, values, value)
        if terms is None:
            return None
        magnitudes = run_alone(self._model, node, magnitudes_of(values))[at]
        squares = run_alone(self._model, node, magnitudes_of(values, 2))[at]
        return summation_bound(magnitudes, terms, dtype, value, squares, is_mean(node.op_type))

    def _value_dtypes(self) -> dict:
        """{node output: the numpy name of its declared float type}."""
        from onnx.helper import tensor_dtype_to_np_dtype

        if self._dtypes is None:  # numpy has no bfloat16 of its own: ONNX's BFLOAT16 (16) is named here
            self._dtypes = {name: "bfloat16" if elem == 16 else np.dtype(tensor_dtype_to_np_dtype(elem)).name
                            for name, elem in self._value_types().items() if elem in _FLOAT_TYPES}
        return self._dtypes

    def _integer_inputs(self, inputs) -> bool:
        """Whether no input of the model holds a float (nothing to move but what the model computes)."""
        return all(np.asarray(v).dtype.kind in "iub" for v in self._by_model_names(inputs).values())

    def _float_values(self) -> frozenset:
        """The node outputs the model computes in a float (ONNX shape inference)."""
        return frozenset(name for name, elem in self._value_types().items() if elem in _FLOAT_TYPES)

    def _narrow_values(self) -> frozenset:
        """The node outputs the model declares float16 or bfloat16 (ONNX shape inference)."""
        if self._narrow is None:
            self._narrow = frozenset(name for name, elem in self._value_types().items() if elem in _NARROW_TYPES)
        return self._narrow

    def _value_types(self) -> dict:
        """{node output: its ONNX element type} (ONNX shape inference; {} where it refuses the model)."""
        import onnx

        try:
            inferred = onnx.shape_inference.infer_shapes(self._model)
        except Exception:  # a model shape inference refuses: its values' types are not known
            return {}
        graph = inferred.graph
        types = {v.name: v.type.tensor_type.elem_type for v in list(graph.value_info) + list(graph.output)}
        return {name: types[name] for node in graph.node for name in node.output if name in types}

    @property
    def truth_name(self) -> str:
        if self._nodes is None:
            return f"{self.name} in float64"
        from .onnx_truth import HOW

        notes = [note_list(f"by {how}" if key != "float32" else "in float32", self._nodes.run_by(how))
                 for key, how in HOW.items()] + [note_list("nothing ran", list(self._nodes.failed))]
        notes = [n for n in notes if n]
        return (f"the model node by node in float64 ({self.name}'s kernels"
                + "".join(f"; {n}" for n in notes) + ")")

    @property
    def truth_note(self) -> Optional[str]:
        """Why the truth is not ONNX Runtime's float64 copy of the whole model (None where it is)."""
        return self._why_nodes or None

    def _open_double(self):
        """A session of the model's float64 copy, or the FrameworkError that says why there is none."""
        from .onnx_truth import to_float64

        try:
            return open_session(to_float64(self._model), "float64")
        except ValueError as err:
            return FrameworkError(f"no float64 copy of the model: {err}")
        except FrameworkError as err:
            return err

    def values(self, inputs, grafts=None) -> dict:
        """{ONNX tensor name: value} of every node output, in node order; each
        tensor named in ``grafts`` takes the given value (its node is not run)."""
        grafts = {name: np.asarray(value) for name, value in (grafts or {}).items()}
        order = [out for node in self._model.graph.node for out in node.output if out and out not in grafts]
        key = frozenset((name, value.dtype.name, value.shape) for name, value in grafts.items())
        session = self._values_sessions.get(key)
        if session is None:
            session = open_session(self._exposed(grafts), "float32 with every node output exposed")
            self._values_sessions[key] = session
        names = [o.name for o in session.get_outputs()]
        got = dict(zip(names, self._run(session, inputs, names=names, extra=grafts)))
        return {name: got[name] for name in order if name in got}

    def _exposed(self, grafts: dict):
        """The model with every node output made a graph output, and the nodes
        computing ``grafts``' tensors replaced by graph inputs of those names (typed as the values given)."""
        import onnx
        from onnx import helper

        exposed = onnx.ModelProto()
        exposed.CopyFrom(self._model)
        graph = exposed.graph
        kept = [n for n in graph.node if not set(n.output) & set(grafts)]
        del graph.node[:]
        graph.node.extend(kept)
        graph.input.extend(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype),
                                                         list(value.shape))
                           for name, value in sorted(grafts.items()))
        present = {o.name for o in graph.output}
        for name in (out for node in kept for out in node.output if out):
            if name not in present:
                graph.output.append(onnx.ValueInfoProto(name=name))
                present.add(name)
        return exposed

    def float_history(self, inputs) -> tuple:
        from onnx import numpy_helper

        from .history import onnx_history

        dtypes = {t.name: numpy_helper.to_array(t).dtype.name for t in self._model.graph.initializer}
        dtypes.update({k: np.asarray(v).dtype.name for k, v in self._by_model_names(inputs).items()})
        dtypes.update({k: np.asarray(v).dtype.name for k, v in self.values(inputs).items()
                       if not isinstance(v, list)})
        history = onnx_history(self._model, dtypes)
        return history, tuple(history.get(o.name) for o in self._model.graph.output)

    def _node_values(self, node, args: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray]) -> list:
        """The values ``node`` reads: ``args`` by tensor name, the model's inputs and initializers for the rest."""
        from onnx import numpy_helper

        known = {t.name: numpy_helper.to_array(t) for t in self._model.graph.initializer}
        known.update(self._by_model_names(inputs))
        known.update(args)
        values = [np.asarray(known[name]) if name in known else None for name in node.input]
        if any(v is None for name, v in zip(node.input, values) if name):
            missing = [name for name, v in zip(node.input, values) if name and v is None]
            raise FrameworkError(f"no value for {', '.join(missing)}")
        return values

    def _node_of(self, key: str):
        node = next((n for n in self._model.graph.node if key in n.output), None)
        if node is None:
            raise FrameworkError(f"no node of the model computes '{key}'")
        return node

    def node_arguments(self, key: str) -> list:
        return list(self._node_of(key).input)

    def node_op(self, key: str) -> str:
        return self._node_of(key).op_type

    def run_node(self, key: str, args: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                 double: bool = False) -> np.ndarray:
        """The node computing ``key`` alone, in ONNX Runtime (else onnx.reference),
        in the dtypes of ``args`` (its arguments by tensor name); the model's
        inputs (``inputs``) and initializers fill the rest."""
        from .onnx_truth import run_alone, widen

        node = self._node_of(key)
        values = self._node_values(node, args, inputs)
        if double:
            values = [widen(v) for v in values]
        results = run_alone(self._model, node, values)
        return np.asarray(results[list(node.output).index(key)])
