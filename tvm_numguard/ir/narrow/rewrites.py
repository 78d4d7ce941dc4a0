"""What one pass event rewrote: the places a narrow fix can keep it from.

A **place** is one value of the module the pass received, named as trace names
values (``values.graph``): a binding of ``main`` (``lv3``, the operator it
calls), or a whole function (a kernel, a Relax function besides ``main``).
The pass **rewrote** a binding of ``main`` when the value matched to it after
the pass (``narrow.matching``: structure, casts looked through) is
computed otherwise: another operator or kernel, other attributes, another
dtype, arguments that are not the matched ones or come through a new cast;
or when no value after the pass matches it. It rewrote a function when the
function of that name changed. Values computed from constants alone (weights
being prepared) are not places: they are not the model's run.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import tvm
import tvm_ffi
from tvm import relax

from ..relax_ir import TENSOR_CONSTANT, op_name, tensor_type
from ..values.value_graph import named_values, value_graph
from ..values.value_match import runtime_values
from .change import Change
from .matching import constant_change, match_across


@dataclasses.dataclass(frozen=True)
class Place:
    """One place a pass acted: ``binding`` of ``function`` (main), or the whole
    ``function`` (``binding`` None). ``op`` checks that a module the fix is
    applied to has the same value there. ``provenance``: where the value is in
    the user's model (shown, not compared)."""

    function: str
    binding: Optional[str]
    op: str
    provenance: Optional[str] = dataclasses.field(default=None, compare=False)
    # a Change value, as fix documents write it: "rewrite" (the pass changed what it
    # computes) or "follow" (another dtype only: not counted as a rewrite)
    kind: str = dataclasses.field(default=Change.REWRITE.value, compare=False)

    def describe(self) -> str:
        where = f"{self.binding} ({self.op})" if self.binding else f"function {self.function} ({self.op})"
        return f"{where}: {self.provenance}" if self.provenance else where

    def to_json(self) -> dict:
        return {"function": self.function, "binding": self.binding, "op": self.op, "provenance": self.provenance,
                "kind": self.kind}

    @classmethod
    def from_json(cls, data) -> "Place":
        return cls(data["function"], data.get("binding"), data["op"],
                   data.get("provenance", data.get("origin")),  # "origin": fix files before 0.2
                   data.get("kind", Change.REWRITE.value))


class Correspondence:
    """``main`` before and after one pass, its values matched; which bindings
    the pass rewrote (``rewritten``) and which of those can be undone alone
    (``undoable``: a value after the pass matches it)."""

    def __init__(self, before: tvm.IRModule, after: tvm.IRModule):
        self.before, self.after = before, after
        self.has_main = _relax_main(before) and _relax_main(after)
        if not self.has_main:
            self.graph_before = self.graph_after = None
            self.after_of, self.values_before, self.values_after, self.live = {}, {}, {}, set()
            self._name_before, self._name_after = {}, {}
            return
        self.graph_before, self.graph_after = value_graph(before), value_graph(after)
        self.values_before = named_values(before["main"])
        self.values_after = named_values(after["main"])
        # canonical before name -> after name
        self.after_of = match_across(self.graph_before, self.graph_after, self.values_before, self.values_after)
        self.live = runtime_values(self.graph_before)
        self._name_before = {var: name for name, (var, _) in self.values_before.items()}
        self._name_after = {var: name for name, (var, _) in self.values_after.items()}

    def binding_places(self) -> list:
        """(Place, undoable) for each binding of ``main`` the pass rewrote, in order."""
        if not self.has_main:
            return []
        graph = self.graph_before
        assert graph is not None  # main is there
        out = []
        for name in graph.order:
            node = graph.nodes[name]
            if node.kind == "param" or node.passes_through or name not in self.live:
                continue
            partner = self.after_of.get(name)
            change = Change.REWRITE if partner is None else self.change(name, partner)
            if change is Change.SAME:
                continue
            out.append((Place("main", name, op_name(self.values_before[name][1]) or node.op, kind=change.value),
                        partner is not None))
        return out

    def function_places(self) -> list:
        """A Place for each function besides ``main`` that the pass changed (kept under its name)."""
        after = {gv.name_hint: gv for gv in self.after.get_global_vars()}
        out = []
        for gv in self.before.get_global_vars():
            name = gv.name_hint
            if name == "main" and self.has_main or name not in after:
                continue
            func_before, func_after = self.before[gv], self.after[after[name]]
            if not tvm_ffi.structural_equal(func_before, func_after, map_free_vars=True):
                kind = "prim_func" if isinstance(func_before, tvm.tirx.PrimFunc) else "function"
                out.append(Place(name, None, kind))
        return out

    # -- how a binding is computed after the pass ---------------------------
    def change(self, before_name: str, after_name: str) -> Change:
        """SAME; FOLLOW: the same operator and attributes on the matched
        arguments, only in another dtype because they arrive in it (what
        ToMixedPrecision calls its follow policy); REWRITE: anything else."""
        var_b, value_b = self.values_before[before_name]
        var_a, value_a = self.values_after[after_name]
        if type(value_b) is not type(value_a):
            return Change.REWRITE
        if isinstance(value_b, relax.Call):
            if not (self._same_callee(value_b.op, value_a.op) and _same_attrs(value_b.attrs, value_a.attrs)):
                return Change.REWRITE
            args = self._args(value_b.args, value_a.args)
        elif isinstance(value_b, relax.TupleGetItem):
            same_index = value_b.index == value_a.index
            args = self._args([value_b.tuple_value], [value_a.tuple_value]) if same_index else Change.REWRITE
        elif isinstance(value_b, relax.Tuple):
            args = self._args(value_b.fields, value_a.fields)
        else:
            args = _same_or_rewrite(tvm_ffi.structural_equal(value_b, value_a, map_free_vars=True))
        if args is Change.SAME and tensor_type(var_b)[1] != tensor_type(var_a)[1]:
            return Change.FOLLOW
        return args

    def _args(self, args_b, args_a) -> Change:
        """How the operands changed: the most changed of them (REWRITE: not as many)."""
        if len(args_b) != len(args_a):
            return Change.REWRITE
        return Change.worst(self._arg(xb, xa) for xb, xa in zip(args_b, args_a))

    def _arg(self, xb, xa) -> Change:
        if isinstance(xb, relax.Var) and isinstance(xa, relax.Var):
            wanted = self.partner(self.name_before(xb))
            assert self.graph_after is not None  # operands of main's bindings: main is there
            if wanted is None or wanted not in (self.name_after(xa), self.graph_after.canon(self.name_after(xa))):
                return Change.REWRITE
            # the dtypes the value passes through after the pass, against those it passed through before:
            # a cast the model has itself is not the pass's round trip
            through_before = _dtypes_on_the_way(self.graph_before, self.name_before(xb))
            through_after = _dtypes_on_the_way(self.graph_after, self.name_after(xa))
            return Change.SAME if through_after <= through_before else Change.FOLLOW
        if isinstance(xb, relax.Tuple) and isinstance(xa, relax.Tuple):
            return self._args(xb.fields, xa.fields)
        if isinstance(xb, tvm.ir.GlobalVar) and isinstance(xa, tvm.ir.GlobalVar):
            return _same_or_rewrite(self._same_callee(xb, xa))
        if isinstance(xb, TENSOR_CONSTANT):
            return constant_change(xb, self._cast_of_constant(xa))
        return _same_or_rewrite(tvm_ffi.structural_equal(xb, xa, map_free_vars=True))

    def _cast_of_constant(self, xa):
        """``xa`` if a constant, the constant a var casts (``astype`` of a constant), else None."""
        if isinstance(xa, TENSOR_CONSTANT):
            return xa
        value = self.values_after.get(self.name_after(xa), (None, None))[1] if isinstance(xa, relax.Var) else None
        if value is not None and op_name(value) == "relax.astype" and isinstance(value.args[0], TENSOR_CONSTANT):
            return value.args[0]
        return None

    def _same_callee(self, op_b, op_a) -> bool:
        if isinstance(op_b, tvm.ir.GlobalVar) and isinstance(op_a, tvm.ir.GlobalVar):
            return op_b.name_hint == op_a.name_hint and bool(tvm_ffi.structural_equal(
                self.before[op_b], self.after[op_a], map_free_vars=True))
        return bool(tvm_ffi.structural_equal(op_b, op_a))

    def partner(self, before_name: Optional[str]) -> Optional[str]:
        """The value after the pass that stands for ``before_name`` (its match, casts looked through)."""
        if before_name is None:
            return None
        assert self.graph_before is not None  # a name of main's: main is there
        return self.after_of.get(self.graph_before.canon(before_name))

    def name_before(self, var) -> Optional[str]:
        return self._name_before.get(var)

    def name_after(self, var) -> Optional[str]:
        return self._name_after.get(var)


def rewrites(before: tvm.IRModule, after: tvm.IRModule) -> list:
    """(Place, undoable) for every place the pass rewrote: ``main``'s bindings in
    order, then the functions it changed (a function can always be put back)."""
    correspondence = Correspondence(before, after)
    return correspondence.binding_places() + [(p, True) for p in correspondence.function_places()]


def _same_or_rewrite(same) -> Change:
    return Change.SAME if same else Change.REWRITE


def _same_attrs(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(tvm_ffi.structural_equal(a, b))


def _relax_main(mod: tvm.IRModule) -> bool:
    return any(gv.name_hint == "main" and isinstance(f, relax.Function) for gv, f in mod.functions.items())


def _dtypes_on_the_way(graph, name: Optional[str]) -> set:
    """The dtypes of ``name`` and of the casts and aliases it is reached through in
    ``graph``: a value read through a round trip to float16 and back is not the
    value it was, though its dtype is."""
    seen, out = set(), set()
    while name in graph.nodes and name not in seen:
        seen.add(name)
        out.add(graph.nodes[name].dtype)
        if not graph.nodes[name].passes_through:
            break
        name = graph.nodes[name].args[0]
    return out
