"""Matching the values of two versions of a model.

A pass renames values (FuseOps calls a fused group's output ``lv``;
ToMixedPrecision renumbers everything and adds casts), so names alone mislead.
In order, each rule only pairs values not paired yet whose shapes agree and
whose dtypes are both floating point or equal:

  1. anchors: inputs by name, results of ``main`` by position;
  2. names: the same name and the same operator;
  3. def-use, to a fixed point: the arguments at the same position of two
     paired values pair up (backward); an unpaired value whose arguments are
     all paired pairs with a value of the same operator on the paired
     arguments (forward; operators compared by their last name part, since a
     kernel is named ``max_pool2d`` where its operator was
     ``relax.nn.max_pool2d``); a kernel whose arguments are all paired pairs
     with the first value, computed from exactly those partners, of the
     operator its name ends in (FuseOps names a group after its operators in
     order: ``fused_conv2d_add_relu`` computes what ``relu`` did).

Casts are looked through everywhere: they stand for the value they cast.
Values computed from constants only (weights being prepared) are not values
of the model's run and are left out.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .value_graph import ValueGraph, ValueNode, base_kernel_name


@dataclasses.dataclass
class Matching:
    pairs: dict  # after name -> before name
    how: dict  # after name -> the rule that paired it
    candidates: list  # after names that could be paired (non-cast values of the run)

    @property
    def share(self) -> float:
        return len([n for n in self.candidates if n in self.pairs]) / len(self.candidates) if self.candidates else 1.0

    def to_json(self) -> dict:
        rules: dict = {}
        for name in self.pairs:
            rules[self.how[name]] = rules.get(self.how[name], 0) + 1
        return {"values": len(self.candidates), "matched": len([n for n in self.candidates if n in self.pairs]),
                "share": round(self.share, 4), "by_rule": rules}


def _compatible(a: ValueNode, b: ValueNode) -> bool:
    if a.shape is None or a.shape != b.shape:
        return False
    if a.dtype == b.dtype:
        return True
    return bool(a.dtype and b.dtype and np.dtype(_np(a.dtype)).kind == "f" == np.dtype(_np(b.dtype)).kind)


def _np(dtype: str) -> str:
    return "float16" if dtype == "bfloat16" else dtype


def runtime_values(graph: ValueGraph) -> set:
    """Names of the values that depend on an input (not on constants alone)."""
    live = set()
    for name in graph.order:
        node = graph.nodes[name]
        if node.kind == "param" or any(a in live for a in node.args if a is not None):
            live.add(name)
    return live


def match_values(before: ValueGraph, after: ValueGraph) -> Matching:
    live_a, live_b = runtime_values(after), runtime_values(before)
    pairs: dict = {}
    how: dict = {}
    used: set = set()

    def pair(a_name, b_name, rule) -> bool:
        a_name, b_name = after.canon(a_name), before.canon(b_name)
        if a_name is None or b_name is None or a_name in pairs or b_name in used:
            return False
        if a_name not in live_a or b_name not in live_b:
            return False
        if not _compatible(after.nodes[a_name], before.nodes[b_name]):
            return False
        pairs[a_name], how[a_name] = b_name, rule
        used.add(b_name)
        return True

    for name in after.order:
        if after.nodes[name].kind == "param" and name in before.nodes:
            pair(name, name, "input")
    for a_out, b_out in zip(after.outputs, before.outputs):
        pair(a_out, b_out, "output")
    for name in after.order:
        node = after.nodes[name]
        if not node.passes_through and name in before.nodes and _key(before.nodes[name]) == _key(node):
            pair(name, name, "name")
    changed = True
    while changed:
        changed = False
        for a_name, b_name in list(pairs.items()):
            a, b = after.nodes[a_name], before.nodes[b_name]
            if a.kind == "param" or len(a.args) != len(b.args):
                continue
            for xa, xb in zip(a.args, b.args):
                if xa is not None and xb is not None:
                    changed |= pair(xa, xb, "def-use")
        by_args: dict = {}
        for b_name in before.order:
            b = before.nodes[b_name]
            if b_name not in used and not b.passes_through and b.kind != "param":
                by_args.setdefault((_key(b), tuple(before.canon(x) for x in b.args)), b_name)
        for a_name in after.order:
            a = after.nodes[a_name]
            if a_name in pairs or a.passes_through or a.kind == "param" or a_name not in live_a:
                continue
            args = [after.canon(x) for x in a.args]
            if any(x is not None and x not in pairs for x in args):
                continue
            b_name = by_args.get((_key(a), tuple(None if x is None else pairs[x] for x in args)))
            if b_name is not None:
                changed |= pair(a_name, b_name, "forward")
        for a_name in after.order:
            changed |= _pair_fused(a_name, after, before, pairs, used, live_a, pair)
    candidates = [n for n in after.order if n in live_a and not after.nodes[n].passes_through]
    return Matching(pairs, how, candidates)


def _key(node: ValueNode) -> str:
    """What two values must share to be computed by the same operator: the kernel
    name (less its counter) where there is a kernel, since relax.concat's kernel is
    ``concatenate`` and relax.exp's ``tir_exp``; else the operator's last name part."""
    if node.kernel:
        return base_kernel_name(node.kernel)
    return node.op.rsplit(".", 1)[-1]


def _frontier(before: ValueGraph, name: str, used: set) -> frozenset:
    """The paired values (and inputs) that ``name`` is computed from through unpaired values only."""
    found, stack, seen = set(), list(before.nodes[name].args), set()
    while stack:
        arg = before.canon(stack.pop())
        if arg is None or arg in seen or arg not in before.nodes:
            continue
        seen.add(arg)
        if arg in used or before.nodes[arg].kind == "param":
            found.add(arg)
        else:
            stack.extend(before.nodes[arg].args)
    return frozenset(found)


def _pair_fused(a_name, after, before, pairs, used, live_a, pair) -> bool:
    a = after.nodes[a_name]
    if a_name in pairs or a.kind != "kernel" or a_name not in live_a:
        return False
    args = [after.canon(x) for x in a.args if x is not None]
    if not args or any(x not in pairs for x in args if x in live_a):
        return False
    wanted = frozenset(pairs[x] for x in args if x in pairs)

    group = _key(a)

    def candidate(b_name) -> bool:
        b = before.nodes[b_name]
        short = _key(b)
        return (b_name not in used and not b.passes_through and b.kind != "param"
                and (group == short or group.endswith("_" + short)) and _frontier(before, b_name, used) == wanted)

    users = before.users()
    # the group's output: the first candidate in execution order that does not
    # feed another candidate of the same operator (``fused_add_add`` ends in
    # the second add); later candidates are reached only through unpaired
    # values of other groups
    for b_name in before.order:
        if candidate(b_name) and not any(
                _key(before.nodes[u]) == _key(before.nodes[b_name]) and candidate(u)
                for u in users.get(b_name, [])):
            return pair(a_name, b_name, "fused")
    return False
