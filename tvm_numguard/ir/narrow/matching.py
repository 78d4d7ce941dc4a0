"""Which value after one pass stands for which value before it.

Trace's matching (``values.match``) pairs values of two builds by name first,
which suits builds whose names a pipeline kept. One pass re-emitting a
function through a BlockBuilder renumbers its values (``lv`` before may be an
``exp`` and ``lv`` after a ``multiply`` of the pass's own), so here names
count for the inputs only, and the rest is structure, casts looked through
on both sides (a pass that changes precision adds them):

  1. anchors: parameters by name, ``main``'s results by position;
  2. backward: the arguments of two paired values pair position by position
     when they have as many (a call_tir's tuple opened): what a rewritten
     value reads stands for what the value before it read (``exp(c)`` and
     ``call_tir(fast_exp, (c,))``); a rewrite that computes from more or fewer
     values (``where(x < 10, exp(x), tail)`` for ``exp(x)``) stops it there;
  3. forward, to a fixed point with 2: a value before the pass pairs with the
     one value after it computed by the same operator, attributes and
     constants from the paired arguments (what comes before a rewrite).

Pairs need the same shape, and dtypes that are equal or both floating point.
The value after the pass that consumers read is the one paired: a value the
pass keeps inside its rewrite (the exact ``exp`` under the ``where``) is not.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from ..relax_ir import TENSOR_CONSTANT, op_name
from ..values.value_graph import ValueGraph
from .change import Change


def match_across(before: ValueGraph, after: ValueGraph, values_before: dict, values_after: dict) -> dict:
    """{before name: after name} (canonical names: casts and aliases looked through)."""
    return _Matcher(before, after, values_before, values_after).run()


class _Matcher:
    """One matching of ``before`` against ``after`` (the module docstring's
    steps): ``pairs`` grows only through ``pair``, which keeps it one to one."""

    def __init__(self, before: ValueGraph, after: ValueGraph, values_before: dict, values_after: dict):
        self.before, self.after = before, after
        self.values_before, self.values_after = values_before, values_after
        self.pairs: dict = {}  # before name -> after name
        self._used: set = set()  # after names paired

    def run(self) -> dict:
        before, after = self.before, self.after
        for name in before.order:
            if before.nodes[name].kind == "param" and name in after.nodes and after.nodes[name].kind == "param":
                self.pair(name, name)
        for b_out, a_out in zip(before.outputs, after.outputs):
            self.pair(b_out, a_out)
        while True:  # backward to a fixed point first: the values consumers read win over look-alikes
            while self.backward():
                pass
            if not self.forward():
                return self.pairs

    def pair(self, b: Optional[str], a: Optional[str]) -> bool:
        b, a = self.before.canon(b), self.after.canon(a)
        if b is None or a is None or b in self.pairs or a in self._used:
            return False
        if b not in self.before.nodes or a not in self.after.nodes:
            return False
        if not _compatible(self.before.nodes[b], self.after.nodes[a]):
            return False
        self.pairs[b] = a
        self._used.add(a)
        return True

    def backward(self) -> bool:
        """Pair the arguments of paired values, position by position."""
        changed = False
        for b, a in list(self.pairs.items()):
            args_b, args_a = self.before.nodes[b].args, self.after.nodes[a].args
            if self.before.nodes[b].kind != "param" and len(args_b) == len(args_a):
                for xb, xa in zip(args_b, args_a):
                    changed |= self.pair(xb, xa)
        return changed

    def forward(self) -> bool:
        """Pair each unpaired value before the pass with the one after it computed the same way."""
        before, after, pairs = self.before, self.after, self.pairs
        changed = False
        waiting: dict = {}
        for a in after.order:
            node = after.nodes[a]
            if a in self._used or node.passes_through or node.kind == "param":
                continue
            args = tuple(after.canon(x) for x in node.args)
            waiting.setdefault((node.op, args), []).append(a)
        for b in before.order:
            node = before.nodes[b]
            if b in pairs or node.passes_through or node.kind == "param":
                continue
            args = tuple(before.canon(x) for x in node.args)
            if any(x is not None and x not in pairs for x in args):
                continue
            key = (node.op, tuple(None if x is None else pairs[x] for x in args))
            same = [a for a in waiting.get(key, []) if a not in self._used
                    and _same_operation(self.values_before[b][1], self.values_after[a][1])]
            if len(same) == 1:
                changed |= self.pair(b, same[0])
        return changed


def _same_operation(value_b, value_a) -> bool:
    """Same operator, attributes and constant operands (variables are the caller's to compare)."""
    if type(value_b) is not type(value_a):
        return False
    if isinstance(value_b, relax.Call):
        if op_name(value_b) != op_name(value_a) or len(value_b.args) != len(value_a.args):
            return False
        if (value_b.attrs is None) != (value_a.attrs is None) or (
                value_b.attrs is not None and not tvm_ffi.structural_equal(value_b.attrs, value_a.attrs)):
            return False
        return all(_same_leaf(xb, xa) for xb, xa in zip(value_b.args, value_a.args))
    if isinstance(value_b, relax.TupleGetItem):
        return value_b.index == value_a.index
    return True


def _same_leaf(xb, xa) -> bool:
    if isinstance(xb, relax.Var) or isinstance(xa, relax.Var):
        return isinstance(xb, relax.Var) and isinstance(xa, relax.Var)
    if isinstance(xb, relax.Tuple) and isinstance(xa, relax.Tuple):
        return len(xb.fields) == len(xa.fields) and all(_same_leaf(b, a) for b, a in zip(xb.fields, xa.fields))
    if isinstance(xb, TENSOR_CONSTANT) and isinstance(xa, TENSOR_CONSTANT):
        return constant_change(xb, xa) is not Change.REWRITE
    if isinstance(xb, tvm.ir.GlobalVar) and isinstance(xa, tvm.ir.GlobalVar):
        return xb.name_hint == xa.name_hint
    return bool(tvm_ffi.structural_equal(xb, xa, map_free_vars=True))


def _compatible(b, a) -> bool:
    if b.shape != a.shape:
        return False
    if b.dtype == a.dtype:
        return True
    return bool(b.dtype and a.dtype and _kind(b.dtype) == "f" == _kind(a.dtype))


def _kind(dtype: str) -> str:
    return "f" if dtype in ("float16", "bfloat16", "float32", "float64") else np.dtype(dtype).kind


def constant_change(before, after) -> Change:
    """A constant operand after the pass against the one before: SAME, FOLLOW
    (the same values in another dtype) or REWRITE (``after`` None: no constant)."""
    if after is None:
        return Change.REWRITE
    if tvm_ffi.structural_equal(before, after):
        return Change.SAME
    b, a = before.value.numpy(), after.value.numpy()
    if b.shape == a.shape and b.dtype != a.dtype and np.array_equal(b.astype(a.dtype), a):
        return Change.FOLLOW
    return Change.REWRITE
