"""Where the error starts and how it spreads.

For a Relax-level culprit: the snapshots before and after it are legalized
(their operators become kernels, binding names kept), built, run on the
witness with every kernel's output captured, and their values matched.

The **origin** is where the error starts growing: the first value, in
execution order, that the culprit computes otherwise (``narrow.rewrites``:
another operator, kernel, dtype or constant, or read through the pass's
round trip to another dtype) and whose difference from the reference is
material (``MATERIAL``: a tenth of the tolerance, past float32's own
rounding at its default rtol) and more than ``GROWTH`` times what its
arguments bring. A value the pass left as it was only carries the error on,
however much it amplifies it: the first value past the tolerance (a
transformer's q*k^T after a float16 rsqrt upstream) is no origin. Where no
value qualifies, or what the pass changed cannot be told, the first value
past the tolerance is named, and the origin says which rule named it.

Every value downstream of the origin, and of any value the culprit changed
before it with a difference, forms the **propagation graph**, with its error,
or marked unmatched: every value on the error's way is shown.

For a TIR-level culprit the two builds (with and without the culprit) share
their Relax structure: kernel calls pair up one to one, a kernel whose TIR the
culprit changed is computed otherwise, and the origin is found the same way,
shown as TIR before and after the pass.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import tvm

from ...base.errors import summarize_error
from ...build.compile import compile_plain, legalized
from ...base.compare import compare_output
from ...base.tolerance import Tolerance
from ...build.capture.kernels import CaptureError, capture_values, with_views
from ...ir.narrow.rewrites import Correspondence
from ...ir.values.value_graph import ValueGraph, value_graph
from ...ir.values.value_match import Matching, match_values

# a difference the culprit's own computation makes is material from a tenth of the tolerance on
# (at float32's default rtol 1e-5, some 8 units in its last place: past its own rounding) ...
MATERIAL = 0.1
# ... and where it is more than this many times what the value's arguments bring (as the oracle's
# rule calls an error worse than the reference's only past twice it): where the error starts growing
GROWTH = 2.0


@dataclasses.dataclass
class Localization:
    origin: Optional[dict]
    matching: Optional[dict]
    graph: dict
    reason: Optional[str] = None  # why there is no origin

    def to_json(self) -> dict:
        return {"origin": self.origin, "matching": self.matching, "graph": self.graph, "reason": self.reason}


def value_errors(before: ValueGraph, after: ValueGraph, matching: Matching, values_b: dict, values_a: dict,
                 tol: Tolerance) -> dict:
    """after name -> (score, max_abs) for every matched value both runs computed."""
    errors = {}
    for a_name, b_name in matching.pairs.items():
        if a_name in values_a and b_name in values_b:
            ref, opt = np.asarray(values_b[b_name]), np.asarray(values_a[a_name])
            if ref.shape != opt.shape:
                continue
            m = compare_output(0, ref, opt, tol.plain(), top_k=0)
            errors[a_name] = (m.score, m.max_abs)
    return errors


def arguments_score(after: ValueGraph, errors: dict, name: str) -> float:
    """The largest difference among the arguments of ``name`` (casts looked through; 0 for none measured)."""
    scores = [errors[arg][0] for arg in (after.canon(a) for a in after.nodes[name].args if a is not None)
              if arg in errors]
    return max(scores, default=0.0)


def grows(after: ValueGraph, errors: dict, name: str) -> bool:
    """Whether the difference at ``name`` is material and more than GROWTH times its arguments'."""
    if name not in errors:
        return False
    score = errors[name][0]
    return score >= MATERIAL and score > GROWTH * arguments_score(after, errors, name)


def find_origin(after: ValueGraph, errors: dict, changed: Optional[frozenset] = None) -> tuple:
    """(origin or None, the rule that named it): the first value ``changed``
    (the culprit computes it otherwise) whose error grows there ("grows"); else,
    or where ``changed`` is None (not known), the first value past the tolerance
    ("first past the tolerance")."""
    for name in after.order if changed else ():
        if changed is not None and name in changed and grows(after, errors, name):
            return name, "grows"
    for name in after.order:
        if name in errors and errors[name][0] > 1.0:
            return name, "first past the tolerance"
    return None, None


def error_sources(after: ValueGraph, errors: dict, origin: Optional[str], changed: Optional[frozenset]) -> list:
    """Where the propagation graph starts: the origin, and every value the culprit
    changed before it that differs at all (its error is on the way too)."""
    if origin is None:
        return []
    earlier = after.order[:after.order.index(origin)]
    return [n for n in earlier if changed and n in changed and errors.get(n, (0.0,))[0] > 0.0] + [origin]


def propagation_graph(after: ValueGraph, matching: Matching, errors: dict, origin: Optional[str],
                      before: ValueGraph, changed: Optional[frozenset] = None) -> dict:
    """The values downstream of ``origin`` and of the changed values before it
    that differ (``error_sources``; casts looked through), their errors, and
    which lie on a path from them to a violating output; ``op_before``: the op
    of the value each is matched with in ``before`` (what its provenance is
    checked by); ``changed``: whether the culprit computes it otherwise (None: not known)."""
    if origin is None:
        return {"nodes": [], "edges": []}
    users = after.users()
    down, stack = [], error_sources(after, errors, origin, changed)
    while stack:
        name = stack.pop()
        if name in down:
            continue
        down.append(name)
        stack.extend(users.get(name, []))
    down.sort(key=lambda n: after.nodes[n].order)
    outputs = {after.canon(o) for o in after.outputs}
    violating = {n for n in down if n in errors and errors[n][0] > 1.0}
    # on a path: downstream of the origin and upstream of a violating output
    upstream = {n for n in violating if n in outputs}
    for name in reversed(down):
        if any(u in upstream for u in users.get(name, [])):
            upstream.add(name)
    nodes, edges = [], []
    for name in down:
        node = after.nodes[name]
        score, max_abs = errors.get(name, (None, None))
        nodes.append({
            "id": name, "op": node.op, "kernel": node.kernel, "shape": list(node.shape or []),
            "dtype": node.dtype, "matched": matching.pairs.get(name), "score": score, "max_abs": max_abs,
            "op_before": before.nodes[matching.pairs[name]].op if name in matching.pairs else None,
            "origin": name == origin, "output": name in outputs, "violating": name in violating,
            "on_path": name in upstream, "changed": None if changed is None else name in changed,
        })
        for arg in node.args:
            src = after.canon(arg)
            if src in down and src != name:
                edges.append({"src": src, "dst": name, "on_path": src in upstream and name in upstream})
    return {"nodes": nodes, "edges": edges}


def _origin_json(after: ValueGraph, before: ValueGraph, matching: Matching, errors: dict, origin: str,
                 rule: str) -> dict:
    node = after.nodes[origin]
    b_name = matching.pairs[origin]
    return {"value": origin, "value_before": b_name, "op": node.op, "op_before": before.nodes[b_name].op,
            "kernel": node.kernel, "score": errors[origin][0], "max_abs": errors[origin][1],
            "arguments_score": arguments_score(after, errors, origin), "rule": rule,
            "binding_before": before.nodes[b_name].text, "binding_after": node.text,
            "tir_before": None, "tir_after": None}


def changed_values(before_mod: tvm.IRModule, after_mod: tvm.IRModule, matching: Matching) -> Optional[frozenset]:
    """The values after a Relax pass (their names in the after graph) that it
    computes otherwise (``Correspondence.binding_places``: rewritten, or
    following in another dtype); None where that cannot be told."""
    try:
        places = Correspondence(before_mod, after_mod).binding_places()
    except Exception:  # a module the matching of places does not read: the origin falls back to the tolerance
        return None
    before = {place.binding for place, _ in places}
    return frozenset(a for a, b in matching.pairs.items() if b in before)


def _legalized(mod: tvm.IRModule, target) -> tvm.IRModule:
    return legalized(mod, target)


def localize_relax(before_mod: tvm.IRModule, after_mod: tvm.IRModule, input_names: Sequence[str],
                   witness: Mapping[str, np.ndarray], target, tol: Tolerance,
                   build_module: Optional[Callable] = None) -> Localization:
    """Origin and propagation graph of a Relax-level pass that turned
    ``before_mod`` into ``after_mod``. ``build_module(mod) -> Build`` builds a
    module alone (a session's, which counts it; default: the plain lowering)."""
    build_module = build_module or (lambda mod: compile_plain(mod, target))
    graphs, values = [], []
    for mod in (before_mod, after_mod):
        legal = _legalized(mod, target)
        graph = value_graph(legal, mod)
        build = build_module(legal)
        if not build.ok:
            return Localization(None, None, {"nodes": [], "edges": []},
                                f"a snapshot does not build on its own: {build.error}")
        try:
            values.append(with_views(graph, capture_values(build.executable, build.device, graph, input_names,
                                                           witness)))
        except CaptureError as err:
            return Localization(None, None, {"nodes": [], "edges": []}, f"capture failed: {err}")
        except Exception as err:  # a snapshot that builds but does not run alone
            return Localization(None, None, {"nodes": [], "edges": []},
                                f"a snapshot does not run on its own: {summarize_error(err)}")
        graphs.append(graph)
    before, after = graphs
    matching = match_values(before, after)
    errors = value_errors(before, after, matching, values[0], values[1], tol)
    changed = changed_values(before_mod, after_mod, matching)
    origin, rule = find_origin(after, errors, changed)
    propagation = propagation_graph(after, matching, errors, origin, before, changed)
    if origin is None:
        return Localization(None, matching.to_json(), propagation, "no matched value violates the tolerance")
    return Localization(_origin_json(after, before, matching, errors, origin, rule), matching.to_json(), propagation)


def localize_kernels(graph: ValueGraph, values_before: dict, values_after: dict, tol: Tolerance,
                     tir_before: Optional[tvm.IRModule], tir_after: Optional[tvm.IRModule]) -> Localization:
    """Origin of a TIR-level pass: the two builds share ``graph`` (their Relax
    structure), so every value pairs with itself."""
    names = [n for n in graph.order if n in values_before and n in values_after]
    matching = Matching({n: n for n in names}, {n: "same structure" for n in names},
                        [n for n in graph.order if graph.nodes[n].kind in ("kernel", "param")])
    errors = value_errors(graph, graph, matching, values_before, values_after, tol)
    changed = None
    if tir_before is not None and tir_after is not None:  # a kernel whose TIR the culprit changed
        changed = frozenset(n for n in names if graph.nodes[n].kernel is not None and
                            _prim_func_text(tir_before, graph.nodes[n].kernel) !=
                            _prim_func_text(tir_after, graph.nodes[n].kernel))
    origin, rule = find_origin(graph, errors, changed)
    prop = propagation_graph(graph, matching, errors, origin, graph, changed)
    if origin is None:
        return Localization(None, matching.to_json(), prop, "no kernel output violates the tolerance")
    found = _origin_json(graph, graph, matching, errors, origin, rule)
    kernel = graph.nodes[origin].kernel
    found["tir_before"] = _prim_func_text(tir_before, kernel)
    found["tir_after"] = _prim_func_text(tir_after, kernel)
    return Localization(found, matching.to_json(), prop)


def _prim_func_text(mod: Optional[tvm.IRModule], name: Optional[str]) -> Optional[str]:
    if mod is None or name is None:
        return None
    for gv, func in mod.functions.items():
        if gv.name_hint == name:
            return func.script()
    return None
