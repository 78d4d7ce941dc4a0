"""An ONNX model in float64: a float64 copy of the whole graph, and the model
node by node, the truth where ONNX Runtime has no float64 copy of the whole
model.

The float64 copy (``to_float64``): every float32, float16 and bfloat16 tensor,
type, constant and cast made float64, so ONNX Runtime computes the same model
in double precision (where it has the kernels: the session refuses the copy
otherwise). The float16 ones too: the truth is the real-number result, which a
float16 model's framework run (float32 inside many of ONNX Runtime's float16
kernels) does not give; a float16 copy would be no truth at all.

ONNX Runtime's CPU provider registers many kernels for float only (``Conv``,
``Erf``, ``GlobalAveragePool``, the inverse trigonometric functions, ...), so
one such node anywhere refuses the whole float64 copy (``to_float64``). Here
each node runs on its own, on float64 values: in ONNX Runtime where it has the
node's float64 kernel, else in the ``onnx`` package's own numpy reference
(``onnx.reference``; ``ConvTranspose``, which ONNX Runtime has only in float, in
numpy here first: ``NUMPY_NODES``), else (a node neither can run in float64, such as
``MeanVarianceNormalization``, whose function body carries a float32
epsilon) in float32, which ``ran_in_float32`` reports. A node nothing runs
leaves the outputs it feeds without a truth (None), and ``failed`` says why:
the other outputs keep theirs. Nothing here uses TVM: the truth must not share
the import it judges.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ...base.errors import first_line
from ..summation import is_mean, magnitudes_of, onnx_terms, rounded, summation_bound

FLOAT, DOUBLE = 1, 11  # onnx.TensorProto.FLOAT, DOUBLE
NARROW = (1, 10, 16)  # FLOAT, FLOAT16, BFLOAT16: the float types made float64
# attributes that name an element type (Cast's "to", ConstantOfShape's value's, RandomNormal's "dtype")
_TYPE_ATTRIBUTES = ("to", "dtype")


def to_float64(model):
    """A copy of the ONNX ``model`` computing in float64 (its inputs and
    outputs float64 too); raises ValueError for what it cannot convert."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    _graph(copy.graph)
    return copy


def _graph(graph) -> None:
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        _value_info(info)
    for tensor in graph.initializer:
        _tensor(tensor)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.name in _TYPE_ATTRIBUTES and attribute.i in NARROW:
                attribute.i = DOUBLE
            if attribute.HasField("t"):
                _tensor(attribute.t)
            if attribute.HasField("g") or len(attribute.graphs):
                raise ValueError(f"{node.op_type} has a subgraph (not converted to float64)")


def _value_info(info) -> None:
    tensor_type = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if tensor_type is not None and tensor_type.elem_type in NARROW:
        tensor_type.elem_type = DOUBLE


def _tensor(tensor) -> None:
    import numpy as np
    from onnx import numpy_helper

    if tensor.data_type not in NARROW:
        return
    converted = numpy_helper.from_array(np.asarray(numpy_helper.to_array(tensor), dtype=np.float64), tensor.name)
    tensor.CopyFrom(converted)


# a value that no implementation could compute: everything computed from it is too
MISSING = object()
# how a node was run where ONNX Runtime has no float64 kernel for it, as the truth's name says it
HOW = {"reference": "onnx.reference", "expand": "its ONNX function body", "float32": "float32", "numpy": "numpy"}
# numpy dtype -> ONNX element type, for the one-node models' inputs
_ELEMENT_TYPES = {"float64": 11, "float32": 1, "float16": 10, "int64": 7, "int32": 6, "int8": 3, "uint8": 2,
                  "bool": 9, "int16": 5, "uint16": 4, "uint32": 12, "uint64": 13}


def widen(value):
    """A float value (or a sequence of them) as float64; other values as they are."""
    if isinstance(value, (list, tuple)):
        return [widen(v) for v in value]
    if value is None:
        return None
    value = np.asarray(value)
    if value.dtype.kind == "f" or value.dtype.name == "bfloat16":
        return value.astype(np.float64)
    return value


class NodeByNode:
    """``model`` (an onnx.ModelProto) computed in float64 one node at a time."""

    def __init__(self, model):
        from onnx import numpy_helper

        self._model = model
        graph = model.graph
        self._constants = {t.name: widen(numpy_helper.to_array(t)) for t in graph.initializer}
        self._sessions: dict = {}  # (node index, kind, signature) -> a runner, or the error it gave
        self.how: dict = {}  # label -> how a node ONNX Runtime could not run in float64 was run (HOW)
        self.failed: dict = {}  # label -> why nothing ran it

    def run_by(self, how: str) -> list:
        """The labels of the nodes run ``how`` (one of HOW's values)."""
        return [label for label, said in self.how.items() if said == how]

    def outputs(self, inputs: Mapping[str, np.ndarray], move=None, sums=None) -> list:
        """Each graph output in float64, or None where a node it needs could not run;
        ``move(name, value)``, where given, gives each node output's value as used on;
        ``sums`` (rng, {name: dtype}), where given, moves each sum by a random share of its
        summation bound (``judge/summation.py``)."""
        wanted = [o.name for o in self._model.graph.output]
        values = self.values(inputs, keep=set(wanted), move=move, sums=sums)
        return [None if values.get(name, MISSING) is MISSING else values[name] for name in wanted]

    def values(self, inputs: Mapping[str, np.ndarray], keep: Optional[set] = None, move=None, sums=None) -> dict:
        """{tensor name: float64 value, or MISSING} for every input, initializer
        and node output; with ``keep``, node outputs not in it are dropped after
        their last reader (a DenseNet's every feature map in float64 is gigabytes)."""
        env = dict(self._constants)
        env.update({name: widen(value) for name, value in inputs.items()})
        last = _last_readers(self._model.graph) if keep is not None else {}
        for index, node in enumerate(self._model.graph.node):
            args = [env.get(name, MISSING) if name else None for name in node.input]
            results = self._node(index, node, args) if all(a is not MISSING for a in args) else None
            if results and sums is not None:
                results = self._rounded(index, node, args, results, *sums)
            for k, name in enumerate(node.output):
                if name:
                    env[name] = MISSING if results is None or k >= len(results) else results[k]
                    if move is not None and env[name] is not MISSING and not isinstance(env[name], list):
                        env[name] = move(name, env[name])
            for name in node.input:
                if keep is not None and last.get(name) == index and name not in keep and name not in self._constants:
                    env.pop(name, None)
        return env

    def _rounded(self, index: int, node, args: Sequence, results: list, rng, dtypes: Mapping) -> list:
        """``results`` of ``node`` with its first moved by a random share of its summation bound, where it sums."""
        dtype = dtypes.get(node.output[0])
        # a float32 or float64 sum: a narrow one moves by its own roundings, an integer one is exact, and one
        # whose float shape inference does not tell is not excused
        if dtype not in ("float32", "float64") or np.asarray(results[0]).dtype.kind != "f":
            return results
        terms = onnx_terms(node, args, results[0])
        if terms is None:
            return results
        magnitudes = self._node(index, node, magnitudes_of(list(args)))
        squares = self._node(index, node, magnitudes_of(list(args), 2))
        if not magnitudes or not squares or np.shape(magnitudes[0]) != np.shape(results[0]):
            return results
        bound = summation_bound(magnitudes[0], terms, dtype, results[0], squares[0], is_mean(node.op_type))
        return [rounded(np.asarray(results[0], np.float64), bound, rng)] + list(results[1:])

    def _node(self, index: int, node, args: Sequence) -> Optional[list]:
        label = node_label(node)
        attempts = [("ort", True), ("reference", True), ("expand", True), ("ort", False)]
        if node.op_type in NUMPY_NODES:  # ONNX Runtime has no float64 kernel; onnx.reference's is slow
            attempts.insert(0, ("numpy", True))
        if any(isinstance(a, list) for a in args) or _has_subgraph(node):
            attempts = [("reference", True)]
        errors = []
        for kind, double in attempts:
            try:
                results = self._runner(index, node, args, kind, double)(args)
            except Exception as err:  # every implementation raises its own types
                errors.append(f"{kind}: {first_line(err, 160)}")
                continue
            if (kind, double) != ("ort", True):
                self.how.setdefault(label, HOW[kind] if double else HOW["float32"])
            return [widen(r) for r in results]
        self.failed.setdefault(label, "; ".join(errors))
        return None

    def _runner(self, index, node, args, kind: str, double: bool):
        signature = tuple(_signature(a, double) for a in args)
        key = (index, kind, double, signature)
        runner = self._sessions.get(key)
        if runner is None:
            try:
                runner = _make_runner(self._model, node, signature, kind, double)
            except Exception as err:  # remembered: a node ONNX Runtime refuses once refuses always
                runner = err
            self._sessions[key] = runner
        if isinstance(runner, Exception):
            raise runner
        return runner


def _last_readers(graph) -> dict:
    """{tensor name: the index of the last node that reads it} (a subgraph's reads count for its node)."""
    last: dict = {}
    for index, node in enumerate(graph.node):
        for name in list(node.input) + _subgraph_reads(node):
            if name:
                last[name] = index
    return last


def _subgraph_reads(node) -> list:
    """Every name a node's subgraphs (If, Loop, Scan bodies) read, their own or from outside."""
    names = []
    for attribute in node.attribute:
        for graph in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
            for inner in graph.node:
                names.extend(inner.input)
                names.extend(_subgraph_reads(inner))
    return names


def node_label(node) -> str:
    """How a node is named to the user: its op type and name (or first output)."""
    return f"{node.op_type} '{node.name or (node.output[0] if node.output else '?')}'"


def _has_subgraph(node) -> bool:
    return any(a.HasField("g") or len(a.graphs) for a in node.attribute)


def _signature(value, double: Optional[bool]):
    """(element type, shape) of an argument as the one-node model declares it
    (None: absent); ``double`` False declares floats float32, None as they are."""
    if value is None:
        return None
    if isinstance(value, list):
        return ("sequence",)
    value = np.asarray(value)
    dtype = value.dtype.name
    if double is False and value.dtype.kind == "f":
        dtype = "float32"
    return (_ELEMENT_TYPES.get(dtype, 11), tuple(value.shape))


def run_alone(model, node, args: Sequence) -> list:
    """``node`` of ``model`` run alone on ``args`` in their own dtypes: numpy's
    float64 kernel where the node has one and its floats are float64, else ONNX
    Runtime, else onnx.reference (raises what the last raised)."""
    signature = tuple(_signature(a, None) for a in args)
    floats = [np.asarray(a).dtype.name for a in args if a is not None and np.asarray(a).dtype.kind == "f"]
    if node.op_type in NUMPY_NODES and floats and set(floats) == {"float64"}:
        try:
            return _make_runner(model, node, signature, "numpy", True)(args)
        except NotImplementedError:  # an attribute numpy's kernel leaves to the others
            pass
    try:
        return _make_runner(model, node, signature, "ort", None)(args)
    except Exception:  # ONNX Runtime has no kernel for these dtypes: the reference may
        return _make_runner(model, node, signature, "reference", None)(args)


def _make_runner(model, node, signature: tuple, kind: str, double: Optional[bool]):
    """A callable running ``node`` alone on arguments of ``signature``: in float64
    (``double``, its type attributes widened too), float32 (False) or as given (None)."""
    from onnx import ModelProto, TensorProto, helper

    inputs, names = [], []
    for k, (name, sig) in enumerate(zip(node.input, signature)):
        if sig is None or not name:
            names.append("")
            continue
        arg = f"arg{k}"
        names.append(arg)
        if sig == ("sequence",):
            inputs.append(helper.make_tensor_sequence_value_info(arg, TensorProto.DOUBLE, None))
        else:
            inputs.append(helper.make_tensor_value_info(arg, sig[0], list(sig[1])))
    copy = helper.make_node(node.op_type, names, [f"out{k}" if o else "" for k, o in enumerate(node.output)],
                            domain=node.domain or None)
    copy.attribute.extend(node.attribute)
    if double:
        _widen_attributes(copy)
    outputs = [helper.make_empty_tensor_value_info(f"out{k}") for k, o in enumerate(node.output) if o]
    one = helper.make_graph([copy], "node", inputs, outputs)
    made = helper.make_model(one, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    if isinstance(made, ModelProto) and model.functions:
        made.functions.extend(model.functions)
    present = [k for k, sig in enumerate(signature) if sig is not None and names[k]]
    if kind == "numpy":
        return lambda args: [NUMPY_NODES[node.op_type](node, [widen(a) if k in present else None
                                                               for k, a in enumerate(args)])]
    cast = _to_float32 if double is False else (lambda v: v)
    if kind == "expand":
        made = _expanded(made, copy)
        kind = "ort"
    if kind == "ort":
        session = _ort_session(made)
        feed_names = [i.name for i in session.get_inputs()]

        def run_ort(args):
            feed = {f"arg{k}": cast(np.asarray(args[k])) for k in present}
            return session.run(None, {n: feed[n] for n in feed_names})
        return run_ort
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(made)

    def run_reference(args):
        return evaluator.run(None, {f"arg{k}": args[k] if isinstance(args[k], list) else cast(np.asarray(args[k]))
                                    for k in present})
    return run_reference


def conv_transpose(node, args: Sequence) -> np.ndarray:
    """ONNX ``ConvTranspose`` in float64 with numpy, as the operator defines it: each input
    element scatters its weights, times itself, onto the output at ``stride * i + dilation * j``;
    the pads crop that full output at each end (``output_padding`` adds zeros at the end first).
    onnx.reference's takes 0.3 s on a 1024-to-64-channel upsampling of 8x8, where each moved truth
    run needs it three times (the value and its summation bound); this takes 0.02 s. Raises
    NotImplementedError for ``auto_pad`` and ``output_shape`` (onnx.reference computes those)."""
    x, w = np.asarray(args[0], np.float64), np.asarray(args[1], np.float64)
    bias = args[2] if len(args) > 2 else None
    from onnx.helper import get_attribute_value

    a: dict[str, Any] = {at.name: get_attribute_value(at) for at in node.attribute}
    if a.get("auto_pad", b"NOTSET") != b"NOTSET" or "output_shape" in a:
        raise NotImplementedError("ConvTranspose with auto_pad or output_shape")
    axes, groups = x.ndim - 2, int(a.get("group", 1) or 1)
    strides, dilations = a.get("strides") or [1] * axes, a.get("dilations") or [1] * axes
    pads, extra = a.get("pads") or [0] * 2 * axes, a.get("output_padding") or [0] * axes
    spatial, kernel = x.shape[2:], w.shape[2:]
    full = [(n - 1) * s + (k - 1) * d + 1 + e for n, k, s, d, e in zip(spatial, kernel, strides, dilations, extra)]
    per_group = w.shape[1]  # output channels per group
    y = np.zeros((x.shape[0], groups * per_group, *full))
    xs = x.reshape(x.shape[0], groups, x.shape[1] // groups, -1)  # [N, G, C/G, positions]
    ws = w.reshape(groups, w.shape[0] // groups, per_group, *kernel)  # [G, C/G, M/G, k...]
    for tap in np.ndindex(*kernel):
        part = np.einsum("ngcp,gcm->ngmp", xs, ws[(slice(None), slice(None), slice(None), *tap)])
        at = tuple(slice(t * d, t * d + (n - 1) * s + 1, s) for t, d, n, s in zip(tap, dilations, spatial, strides))
        y[(slice(None), slice(None), *at)] += part.reshape(x.shape[0], -1, *spatial)
    y = y[(slice(None), slice(None), *(slice(b, f - e) for b, e, f in zip(pads[:axes], pads[axes:], full)))]
    if bias is not None:
        y = y + np.asarray(bias, np.float64).reshape(1, -1, *([1] * axes))
    return y


# ONNX operators computed here in float64 (numpy) before anything else tries them
NUMPY_NODES = {"ConvTranspose": conv_transpose}

_EXPANDED_DOMAIN = "numguard.expanded"


def _expanded(made, node):
    """The one-node model ``made`` with ``node`` replaced by its ONNX function body
    (the operator's definition in its schema), every float in it made float64:
    an operator without a float64 kernel anywhere (MeanVarianceNormalization,
    whose body's epsilon is a float32 constant) computed by its own definition."""
    import onnx
    import onnx.inliner

    version = next((o.version for o in made.opset_import if o.domain == (node.domain or "")), None)
    # onnx's stub lacks the function-body API; no opset for the domain: its newest schema
    schema: Any = (onnx.defs.get_schema(node.op_type, node.domain or "") if version is None
                   else onnx.defs.get_schema(node.op_type, version, node.domain or ""))
    if not schema.has_function:
        raise ValueError(f"{node.op_type} has no function body to expand")
    versions = [v for v in schema.function_opset_versions if version is None or v <= version]
    body = onnx.FunctionProto()
    if versions:  # the binding returns the serialized FunctionProto
        body.ParseFromString(schema.get_function_with_opset_version(max(versions)))
    else:
        body.CopyFrom(schema.function_body)
    body.domain, body.name = _EXPANDED_DOMAIN, node.op_type
    expanded = onnx.ModelProto()
    expanded.CopyFrom(made)
    expanded.graph.node[0].domain = _EXPANDED_DOMAIN
    # the body runs at its own opset (the one-node model holds nothing else): the inliner needs them equal
    own = {o.domain: o.version for o in body.opset_import}
    for opset in expanded.opset_import:
        opset.version = own.get(opset.domain, opset.version)
    expanded.opset_import.append(onnx.helper.make_opsetid(_EXPANDED_DOMAIN, 1))
    expanded.functions.append(body)
    inlined = onnx.inliner.inline_local_functions(expanded)
    _graph(inlined.graph)
    return inlined


def _to_float32(value: np.ndarray) -> np.ndarray:
    return value.astype(np.float32) if value.dtype.kind == "f" else value


def _widen_attributes(node) -> None:
    """``node``'s element-type attributes and tensor attributes made float64."""
    for attribute in node.attribute:
        if attribute.name in _TYPE_ATTRIBUTES and attribute.i in NARROW:
            attribute.i = DOUBLE
        if attribute.HasField("t"):
            _tensor(attribute.t)


def _ort_session(model):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    # one session per node: an arena each would keep every node's largest output for good
    options.enable_cpu_mem_arena = False
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


__all__ = ["MISSING", "NodeByNode", "node_label", "to_float64", "widen"]
