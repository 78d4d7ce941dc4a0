"""The values of a model as a graph: one node per binding of ``main``.

``value_graph(module, source)`` reads a Relax module whose operators are
``call_tir`` kernels (a legalized snapshot, or a fused one) and, where the
binding came from a high-level operator, takes its name and TVMScript from
``source`` (the same module before legalization: legalization keeps binding
names). Casts (``astype``) and aliases (``gv = lv``) pass a value through:
matching looks through them, because a pass that changes precision inserts
casts around the values it keeps, and importers end ``main`` with an alias
(``gv = lv167; R.output(gv)``). ``outputs`` are the values ``main`` returns,
aliases followed and tuples opened, in the order ``call_main`` flattens them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

import tvm
from tvm import relax
from ..relax_ir import function_bindings, tensor_type


@dataclasses.dataclass
class ValueNode:
    name: str
    kind: str  # "param", "kernel" (call_tir), "op" (any other call), "tuple", "get_item", "var"
    op: str  # high-level operator (relax.matmul), else the kernel's base name
    kernel: Optional[str]
    args: list  # argument value names in position order; None for a constant
    shape: Optional[tuple]
    dtype: Optional[str]
    text: str  # the binding as TVMScript (one line)
    output: bool = False
    order: int = 0
    n_outputs: int = 1  # a kernel's destination arguments

    @property
    def passes_through(self) -> bool:
        """A cast or an alias: its value is its one argument's (a cast's in another dtype)."""
        is_cast = self.op in ("relax.astype", "cast")
        return (is_cast or self.kind == "var") and len(self.args) == 1 and self.args[0] is not None

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "op": self.op, "kernel": self.kernel,
                "shape": None if self.shape is None else list(self.shape), "dtype": self.dtype,
                "output": self.output}


class ValueGraph:
    def __init__(self, nodes: list, outputs: list):
        self.nodes = {n.name: n for n in nodes}
        self.order = [n.name for n in nodes]
        self.outputs = outputs  # names of main's results, in position order

    def kernels(self) -> list:
        """The call_tir nodes in execution order."""
        return [self.nodes[n] for n in self.order if self.nodes[n].kind == "kernel"]

    def canon(self, name: Optional[str]) -> Optional[str]:
        """``name`` with casts and aliases looked through."""
        seen = set()
        while name in self.nodes and self.nodes[name].passes_through and name not in seen:
            seen.add(name)
            name = self.nodes[name].args[0]
        return name

    def users(self) -> dict:
        """name -> names of the nodes that take it (casts and aliases looked through) as an argument."""
        out: dict = {n: [] for n in self.order}
        for n in self.order:
            node = self.nodes[n]
            if node.passes_through:
                continue
            for a in node.args:
                a = self.canon(a)
                if a in out and n not in out[a]:
                    out[a].append(n)
        return out


def base_kernel_name(name: str) -> str:
    """A kernel's name less its counter (``fused_conv2d_add3`` -> ``fused_conv2d_add``)."""
    return re.sub(r"\d+$", "", name).rstrip("_") or name


def binding_text(binding) -> str:
    """The line of TVMScript that defines ``binding.var``, with the constants it
    uses shown (TVMScript leaves them in metadata, where a pass's change to
    them would not show)."""
    name = binding.var.name
    line = f"{name} = {binding.value}".splitlines()[0]
    # free variables the binding uses are printed first, the binding itself last
    for candidate in reversed(str(binding).splitlines()):
        stripped = candidate.strip()
        if stripped.startswith((f"{name} =", f"{name}:")):
            line = stripped
            break
    constants = [a for a in getattr(binding.value, "args", []) if isinstance(a, tvm.ir.expr.GenericConst)]
    if constants:
        line += "  # constants: " + "; ".join(_constant_text(c) for c in constants)
    return line


def _constant_text(const, shown: int = 4) -> str:
    value = const.value.numpy()
    flat = value.reshape(-1)[:shown]
    items = ", ".join(repr(float(v)) for v in flat) + (", ..." if value.size > shown else "")
    return f"{value.dtype}{list(value.shape)} [{items}]"


class _Names:
    """Unique value names in binding order, the way the TVMScript printer makes
    them: the second ``lv`` is ``lv_1`` (Relax keeps only name hints)."""

    def __init__(self):
        self.of: dict = {}
        self.taken: set = set()

    def add(self, var) -> str:
        base, name, k = var.name, var.name, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        self.of[var] = name
        return name

    def args(self, args) -> list:
        out = []
        for a in args:
            if isinstance(a, relax.Var):
                out.append(self.of.get(a, a.name))
            elif isinstance(a, relax.Tuple):
                out.extend(self.args(a.fields))
            else:
                out.append(None)  # a constant, a shape, a PrimValue
        return out


def _source_ops(source: Optional[tvm.IRModule]) -> dict:
    """binding var -> (operator name, TVMScript line) of ``source``'s main
    (legalization keeps the binding vars, so they key both modules)."""
    if source is None or "main" not in [g.name_hint for g in source.get_global_vars()]:
        return {}
    out = {}
    for b in function_bindings(source["main"]):
        value = b.value
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name != "relax.call_tir":
            out[b.var] = (value.op.name, binding_text(b))
    return out


def value_graph(module: tvm.IRModule, source: Optional[tvm.IRModule] = None) -> ValueGraph:
    func = module["main"]
    sources = _source_ops(source)
    names = _Names()
    nodes = []
    for p in func.params:
        shape, dtype = tensor_type(p)
        name = names.add(p)
        nodes.append(ValueNode(name, "param", "param", None, [], shape, dtype, f"{name}: input"))
    for b in function_bindings(func):
        value = b.value
        shape, dtype = tensor_type(b.var)
        text = binding_text(b)
        kernel = None
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name == "relax.call_tir":
            kind, kernel = "kernel", value.args[0].name_hint
            args = names.args(value.args[1].fields if isinstance(value.args[1], relax.Tuple) else [value.args[1]])
            op = base_kernel_name(kernel)
        elif isinstance(value, relax.Call):
            kind = "op"
            op = value.op.name if isinstance(value.op, tvm.ir.Op) else str(getattr(value.op, "name_hint", "call"))
            args = names.args(value.args)
        elif isinstance(value, relax.TupleGetItem):
            kind, op, args = "get_item", f"get_item[{value.index}]", names.args([value.tuple_value])
        elif isinstance(value, relax.Tuple):
            kind, op, args = "tuple", "tuple", names.args(value.fields)
        else:
            kind, op, args = "var", "var", names.args([value])
        if b.var in sources:
            op, text = sources[b.var]
        fields = getattr(getattr(b.var, "ty", None), "fields", None)
        nodes.append(ValueNode(names.add(b.var), kind, op, kernel, args, shape, dtype, text,
                               n_outputs=len(fields) if fields is not None else 1))
    by_name = {n.name: n for n in nodes}
    outputs = _returned(names.args([func.body.body]), by_name)
    for i, node in enumerate(nodes):
        node.order = i
        node.output = node.name in outputs
    return ValueGraph(nodes, outputs)


def _returned(names: list, nodes: dict) -> list:
    """The values behind ``main``'s result: aliases followed, tuples opened
    (``gv = (lv1, lv2); R.output(gv)`` returns lv1 and lv2), constants left out."""
    out = []
    for name in names:
        seen = set()
        while name in nodes and nodes[name].kind == "var" and nodes[name].args[0] is not None and name not in seen:
            seen.add(name)
            name = nodes[name].args[0]
        if name in nodes and nodes[name].kind == "tuple":
            out.extend(_returned(nodes[name].args, nodes))
        elif name is not None:
            out.append(name)
    return out


def named_values(func) -> dict:
    """{unique name: (var, bound value or None for a parameter)} of a Relax
    function, named as ``value_graph`` names its nodes."""
    names = _Names()
    out = {names.add(p): (p, None) for p in func.params}
    for b in function_bindings(func):
        out[names.add(b.var)] = (b.var, b.value)
    return out
