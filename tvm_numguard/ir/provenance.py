"""Where a Relax value comes from in the user's own model.

TVM 0.27's ONNX and torch frontends keep no spans or names: the model's
values become ``lv``, ``lv1``... What they do keep, while they import, is the
table from each ONNX tensor (ONNX importer's ``_nodes``) or torch FX node
(``env``) to the Relax expression it became. ``name_bindings`` walks main's
bindings in order and names each one its importer made: a binding whose
var or value is in that table is the node's output; the bindings before it
that are in no table (a Conv's bias reshape, a Linear's weight transpose)
were made while converting that same node. A value a pass made later has no
entry: ``describe`` says so rather than guess.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

from tvm import relax

from .relax_ir import TENSOR_CONSTANT, op_name


@dataclasses.dataclass(frozen=True)
class Provenance:
    """A binding of the imported main: what made it (``label``) and its op, to
    check a later module's binding of the same name is still the same value."""

    label: str
    op: Optional[str]
    inside: bool = False  # made while converting the node, not its output
    key: Optional[str] = None  # the value's name in the model: ONNX tensor name, FX node name

    def text(self) -> str:
        return f"inside the conversion of {self.label}" if self.inside else self.label


def name_bindings(mod, labels: Mapping) -> dict:
    """{binding var name: Provenance} for main's bindings; ``labels`` maps the
    importer's Relax expressions to (what they were in the user's model, their
    name there). A binding in no table was made while converting the node whose
    named binding first reads it (directly or through other such bindings): a
    converter may return its result unemitted (ONNX Min returns ``R.min`` of a
    stack it emitted), and the importer emits it only where a later node reads
    it, after other nodes' bindings. One no named binding reads belongs to the
    next named binding, as the importer emitted it."""
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        return {}
    body = mod["main"].body
    if not isinstance(body, relax.SeqExpr):
        return {}
    bindings = [binding for block in body.blocks for binding in block.bindings]
    named = {}
    for binding in bindings:
        value = getattr(binding, "value", None)
        found = labels.get(binding.var) or (labels.get(value) if value is not None else None)
        if found is not None:
            named[binding.var] = found
    owner = _first_readers(bindings, named)
    provenance, pending = {}, []
    for binding in bindings:
        if binding.var not in named:
            pending.append(binding)
            continue
        label, key = named[binding.var]
        for earlier in pending:
            label_of = owner.get(earlier.var, label)
            provenance[earlier.var.name] = Provenance(label_of, op_name(getattr(earlier, "value", None)), inside=True)
        pending = []
        provenance[binding.var.name] = Provenance(label, op_name(binding.value), key=key)
    return provenance


def _first_readers(bindings: list, named: Mapping) -> dict:
    """{an unnamed binding's var: the label of the first named binding that reads it, through unnamed ones}."""
    owner: dict = {}
    for binding in reversed(bindings):  # the earliest reader is visited last and wins
        label = named[binding.var][0] if binding.var in named else owner.get(binding.var)
        if label is None:
            continue
        for read in _vars_read(getattr(binding, "value", None)):
            if read not in named:
                owner[read] = label
    return owner


def _vars_read(value) -> list:
    found: list = []
    if value is not None:
        relax.analysis.post_order_visit(value, lambda e: found.append(e) if isinstance(e, relax.Var) else None)
    return found


@dataclasses.dataclass(frozen=True)
class FoldedConstant:
    """A value of the user's model that TVM's frontend computed at import and
    emitted as a constant (the ONNX converters fold nodes whose inputs are all
    constants with numpy): no binding holds it, so a wrong fold shows only in
    the bindings that read it. ``label`` names the node it was folded from."""

    label: str
    key: str
    value: object  # numpy array


def folded_constants(labels: Mapping) -> dict:
    """{the model's value name: FoldedConstant} for every value the importer's table
    (``labels``: Relax expression -> (label, name)) holds as a constant tensor."""
    folded = {}
    for expr, (label, key) in labels.items():
        data = getattr(expr, "value", None)
        if isinstance(expr, TENSOR_CONSTANT) and data is not None and hasattr(data, "numpy"):
            folded[key] = FoldedConstant(label, key, data.numpy())
    return folded


def onnx_labels(nodes: Mapping, graph) -> dict:
    """Relax expression -> ("ONNX Conv node 'conv1' (output 'x1')", "x1") from
    the ONNX importer's tensor table ``nodes`` and the ONNX ``graph``."""
    labels = {}
    for node in graph.node:
        for output in node.output:
            expr = nodes.get(output)
            if expr is not None and expr not in labels:
                labels[expr] = (f"ONNX {node.op_type} node '{node.name}' (output '{output}')" if node.name
                                else f"ONNX {node.op_type} node producing '{output}'", output)
    return labels


def torch_labels(env: Mapping) -> dict:
    """Relax expression -> ("torch module fc (Linear), node 'linear'", "linear")
    from the torch importer's FX node table ``env``."""
    labels: dict = {}
    for node, expr in env.items():
        if getattr(node, "op", None) != "call_function" or not isinstance(expr, relax.Expr):
            continue
        stack = list((node.meta.get("nn_module_stack") or {}).values())
        path, cls = stack[-1] if stack else ("", "")
        where = f"module {path} ({str(cls).rsplit('.', 1)[-1]}), " if path else ""
        labels.setdefault(expr, (f"torch {where}node '{node.name}'{decomposed_from(node)}", node.name))
    return labels


def decomposed_from(node) -> str:
    """``" of the program's softplus (torch decomposed it, model.py:3)"`` for an FX
    node that torch made of another operator of the user's program (at export,
    or in the ``run_decompositions`` TVM's torch frontend runs first: its node
    names are the pieces', not the user's), else ``""``."""
    mine = _aten_name(node.target)
    theirs = [name for name in (_torch_fn_name(node.meta.get("torch_fn")), _aten_name(node.meta.get("original_aten")))
              if name and name != mine]
    if not mine or not theirs:
        return ""
    frames = [line.strip() for line in str(node.meta.get("stack_trace") or "").splitlines() if line.strip()]
    at = ""  # the user's line: 'File "/path/m.py", line 3, in forward', then its code
    if len(frames) >= 2 and frames[-2].startswith("File ") and frames[-2].count('"') >= 2:
        path, line = frames[-2].split('"')[1], frames[-2].rsplit("line ", 1)[-1].split(",")[0]
        at = f", {path.rsplit('/', 1)[-1]}:{line}"
    return f" of the program's {theirs[0]} (torch decomposed it{at})"


def _aten_name(target) -> Optional[str]:
    """``"elu"`` of ``aten.elu.default``; None for anything else."""
    parts = str(target).split(".") if target is not None else []
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else None


def _torch_fn_name(torch_fn) -> Optional[str]:
    """``"selu"`` of FX's ``torch_fn`` meta ``('selu_1', 'function.selu')``; None without one."""
    if not isinstance(torch_fn, (tuple, list)) or len(torch_fn) < 2:
        return None
    return str(torch_fn[1]).rsplit(".", 1)[-1] or None


def model_name(provenance: Mapping, name: Optional[str], op: Optional[str]) -> Optional[str]:
    """The value's own name in the user's model (an ONNX tensor, an FX node), or
    None where ``describe`` could not say one: made by a pass, or inside a conversion."""
    value_provenance = provenance.get(name) if provenance else None
    if value_provenance is None or value_provenance.inside or not value_provenance.key or (
            op is not None and value_provenance.op is not None and value_provenance.op != op):
        return None
    return value_provenance.key


def describe(provenance: Mapping, name: Optional[str], op: Optional[str]) -> str:
    """Where the value ``name`` (an ``op`` binding of a module made from the model)
    comes from in the user's model, or why that cannot be said."""
    if not provenance:
        return "the model's frontend kept no names for its values"
    value_provenance = provenance.get(name)
    if value_provenance is None or (op is not None and value_provenance.op is not None and value_provenance.op != op):
        return f"{name} was made by a pass, not imported from the model: no name in the model"
    return value_provenance.text()
