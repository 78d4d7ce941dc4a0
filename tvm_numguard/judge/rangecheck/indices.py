"""Index ranges: an input that indexes a tensor must stay inside it.

Token ids given ``--high 5000`` for a 1000-row vocabulary are the user's
mistake, not the compiler's: ONNX Runtime refuses them ("indices out of
bounds") and TVM's ``take`` (mode "fast") reads past the table, so every
build differs and no pass is to blame.

``index_reaches`` follows each ``take`` whose indices are computed from
integer inputs, through the integer arithmetic between them (add, subtract,
multiply, clip, minimum, maximum, casts, moves, the frontends' wrap of
negative indices as ``where(x < 0, x + n, x)``), with exact values where they
are constants and one interval per tensor elsewhere; a ``where`` on a
comparison of a value with a constant evaluates each branch with that value
restricted to its side. An operator it does not know leaves the reach unknown
(and then nothing is refused). ``check_index_ranges`` refuses a range whose
indices leave the table, in one line naming the operator, where they reach,
and the input values that stay inside; never a range the model's framework
runs (``framework_runs``: it asks the framework at the range's ends).
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Callable, Mapping, Optional

import numpy as np
from tvm import relax

from ...base.errors import RangeError, named
from ...ir.relax_ir import TENSOR_CONSTANT, function_bindings, op_name, tensor_type

_INDEXING = ("relax.take",)
_SCAN_LIMIT = 200_000  # integers scanned for the input values that stay inside a table
_MOVES = {"relax.reshape", "relax.expand_dims", "relax.squeeze", "relax.flatten", "relax.permute_dims",
          "relax.broadcast_to", "relax.astype", "relax.strided_slice", "relax.concat"}
_ARITHMETIC = {"relax.add": operator.add, "relax.subtract": operator.sub, "relax.multiply": operator.mul,
               "relax.minimum": np.minimum, "relax.maximum": np.maximum}
# a comparison "x OP c" -> (the bounds of x where it holds, where it does not), for an integer x
_SIDES = {
    "relax.less": lambda c: ((-np.inf, c - 1), (c, np.inf)),
    "relax.less_equal": lambda c: ((-np.inf, c), (c + 1, np.inf)),
    "relax.greater": lambda c: ((c + 1, np.inf), (-np.inf, c)),
    "relax.greater_equal": lambda c: ((c, np.inf), (-np.inf, c - 1)),
}


@dataclasses.dataclass(frozen=True)
class IndexReach:
    """The indices of ``binding`` (a ``take`` of an axis of ``size``, ``label``
    in the user's model) computed from the integer ``inputs``, reaching
    [``low``, ``high``] on the ranges given (None: not known)."""

    binding: str
    label: str
    size: int
    inputs: tuple
    low: Optional[float]
    high: Optional[float]

    @property
    def leaves(self) -> bool:
        return self.low is not None and self.high is not None and (self.low < 0 or self.high > self.size - 1)


class _Evaluator:
    """Integer values of main's bindings: an exact array, or a (low, high) interval."""

    def __init__(self, func, ranges: Mapping):
        self.producers = {b.var.name: b.value for b in function_bindings(func)}
        self.params = {p.name: p for p in func.params}
        self.ranges = ranges

    def value(self, expr, restricted: tuple = ()):
        """``expr``'s value (None: unknown); ``restricted``: (name, (low, high)) pairs in force."""
        if isinstance(expr, TENSOR_CONSTANT):
            return expr.value.numpy()
        if isinstance(getattr(expr, "value", None), (int, float)):  # a PrimValue (clip's bounds)
            return np.asarray(expr.value)
        name = getattr(expr, "name", None)
        if name is None:
            return None
        found = self._own(name, restricted)
        if isinstance(found, np.generic):
            found = np.asarray(found)
        bound = dict(restricted).get(name)
        if bound is not None and found is not None:
            low, high = _hull(found)
            found = (max(low, bound[0]), min(high, bound[1]))
        return found

    def _own(self, name: str, restricted: tuple):
        if name in self.params:
            given = self.ranges.get(name)
            if given is None or not _is_integer(self.params[name]):
                return None
            return (float(np.ceil(given.low)), float(np.floor(given.high)))
        value = self.producers.get(name)
        if isinstance(value, relax.ShapeExpr):
            return np.asarray([int(v) for v in value.values])
        op = op_name(value)
        args = list(getattr(value, "args", []))
        if op == "relax.shape_of":
            shape, _ = tensor_type(args[0])
            return None if shape is None else np.asarray(shape)
        if op in ("relax.shape_to_tensor", *_MOVES):
            return self._moved(op, value, args, restricted)
        if op == "relax.take" and value is not None:
            table, index = self.value(args[0], restricted), self.value(args[1], restricted)
            if isinstance(table, np.ndarray) and isinstance(index, np.ndarray):
                return np.take(table, index, axis=int(value.attrs.axis or 0), mode="wrap")
            return None if table is None else _hull(table)
        if op in _ARITHMETIC:
            return _combine(_ARITHMETIC[op], self.value(args[0], restricted), self.value(args[1], restricted))
        if op == "relax.clip":
            x, low, high = (self.value(a, restricted) for a in args)
            if x is None or low is None or high is None:
                return None
            return _combine(np.minimum, _combine(np.maximum, x, low), high)
        if op == "relax.where":
            return self._where(args, restricted)
        return None

    def _moved(self, op, value, args, restricted):
        x = self.value(args[0], restricted) if args else None
        if x is None or op == "relax.concat":
            if op == "relax.concat" and isinstance(args[0], relax.Tuple):
                parts = [self.value(f, restricted) for f in args[0].fields]
                return None if any(p is None for p in parts) else _hull_all(parts)
            return x
        if op == "relax.astype" and isinstance(x, np.ndarray):
            return x.astype(np.float64)
        return _hull(x) if op not in ("relax.shape_to_tensor", "relax.astype") else x

    def _where(self, args, restricted):
        """Each branch with the compared value restricted to its side, where the condition says which."""
        condition, then, other = args
        cond: Any = self.producers.get(getattr(condition, "name", None))  # a relax.Call, or None
        sides = _SIDES.get(op_name(cond) or "") if cond is not None else None
        compared = cond.args[0] if sides is not None else None
        bound = self.value(cond.args[1], restricted) if sides is not None else None
        if (compared is None or sides is None or not isinstance(bound, np.ndarray) or bound.size != 1
                or not hasattr(compared, "name")):  # sides is given where compared is
            branches = [self.value(then, restricted), self.value(other, restricted)]
        else:
            holds, fails = sides(float(bound))
            branches = []
            for side, branch in ((holds, then), (fails, other)):
                low, high = _hull(self.value(compared, restricted) or (-np.inf, np.inf))
                if max(low, side[0]) <= min(high, side[1]):  # this side can happen
                    branches.append(self.value(branch, restricted + ((compared.name, side),)))
        return None if not branches or any(b is None for b in branches) else _hull_all(branches)


def _hull(value) -> tuple:
    if isinstance(value, np.ndarray):
        return (float(np.min(value)), float(np.max(value))) if value.size else (0.0, 0.0)
    return value


def _hull_all(values) -> tuple:
    hulls = [_hull(v) for v in values]
    return (min(h[0] for h in hulls), max(h[1] for h in hulls))


def _combine(fn, a, b):
    """``fn`` of two values: exactly where both are arrays, else over the corners of their intervals
    (every operation here is monotone in each argument on each sign)."""
    if a is None or b is None:
        return None
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return fn(a, b)
    (a0, a1), (b0, b1) = _hull(a), _hull(b)
    with np.errstate(invalid="ignore"):
        corners = [float(fn(x, y)) for x in (a0, a1) for y in (b0, b1)]
    corners = [c for c in corners if not np.isnan(c)]
    return (min(corners), max(corners)) if corners else None


def _is_integer(var) -> bool:
    dtype = tensor_type(var)[1]
    return dtype is not None and dtype.startswith(("int", "uint"))


def _integer_inputs(expr, producers: Mapping, params) -> tuple:
    """The integer inputs ``expr`` is computed from through integer values."""
    reached, stack, seen = set(), [expr], set()
    while stack:
        var = stack.pop()
        name = getattr(var, "name", None)
        if name is None or name in seen or not _is_integer(var):
            continue
        seen.add(name)
        if name in params:
            reached.add(name)
        binding = producers.get(name)
        stack.extend(a for a in getattr(binding, "args", []) if hasattr(a, "name")) if binding is not None else None
    return tuple(sorted(reached))


def index_reaches(model, ranges: Mapping) -> list:
    """The IndexReach of every ``take`` (mode "fast": it reads past the table)
    whose indices come from an integer input, in binding order."""
    func = model.mod["main"]
    evaluator = _Evaluator(func, ranges)
    params = {p.name for p in func.params if _is_integer(p)}
    reaches = []
    for binding in function_bindings(func):
        value = binding.value
        if op_name(value) not in _INDEXING or str(getattr(value.attrs, "mode", "fast")) != "fast":
            continue
        shape, _ = tensor_type(value.args[0])
        inputs = _integer_inputs(value.args[1], evaluator.producers, params)
        if not shape or not inputs:
            continue
        axis = int(value.attrs.axis) if value.attrs.axis is not None else 0
        reach = evaluator.value(value.args[1])
        low, high = _hull(reach) if reach is not None else (None, None)
        provenance = model.provenance.get(binding.var.name)
        label = provenance.label if provenance is not None else f"{op_name(value)} {binding.var.name}"
        reaches.append(IndexReach(binding.var.name, label, shape[axis], inputs, low, high))
    return reaches


def inside_values(model, reach: IndexReach, name: str, ranges: Mapping) -> Optional[tuple]:
    """The values of input ``name`` (the others over their ranges) whose indices
    stay inside the table: the run of them nearest its range, or None."""
    given = ranges[name]
    low, high = int(np.ceil(given.low)) - reach.size, int(np.floor(given.high)) + reach.size
    if high - low > _SCAN_LIMIT:
        return None
    evaluator, func = None, model.mod["main"]
    inside = []
    for x in range(low, high + 1):
        evaluator = _Evaluator(func, {**ranges, name: type(given)(x, x)})
        found = evaluator.value(_binding_value(func, reach.binding).args[1])
        lo, hi = _hull(found) if found is not None else (None, None)
        inside.append(lo is not None and lo >= 0 and hi <= reach.size - 1)
    runs, start = [], None
    for k, ok in enumerate(inside + [False]):
        if ok and start is None:
            start = k
        elif not ok and start is not None:
            runs.append((low + start, low + k - 1))
            start = None
    if not runs:
        return None
    centre = (given.low + given.high) / 2
    return min(runs, key=lambda r: 0 if r[0] <= centre <= r[1] else min(abs(r[0] - centre), abs(r[1] - centre)))


def _binding_value(func, name: str):
    return next(b.value for b in function_bindings(func) if b.var.name == name)


def check_index_ranges(model, ranges: Mapping, framework_runs: Optional[Callable[[str, str], bool]] = None) -> None:
    """Raise RangeError where a range's indices leave a table TVM reads past,
    unless ``framework_runs(input, "low"|"high")`` says the model's framework
    runs that input at both ends of its range."""
    for reach in index_reaches(model, ranges):
        if not reach.leaves:
            continue
        for name in reach.inputs:
            if name not in ranges:
                continue
            if framework_runs is not None and framework_runs(name, "low") and framework_runs(name, "high"):
                continue
            given = ranges[name]
            inside = inside_values(model, reach, name, ranges)
            hint = "" if inside is None else (
                f"; the values of '{name}' that stay inside are [{inside[0]}, {inside[1]}]: give "
                + _range_hint(name, inside, given))
            raise RangeError(
                f"input '{name}' indexes {reach.label} (size {reach.size} on that axis): on its range "
                f"[{given.low:g}, {given.high:g}] the indices reach [{reach.low:g}, {reach.high:g}], past the "
                f"valid [0, {reach.size - 1}] that TVM reads without a check{hint}")


def _range_hint(name: str, inside: tuple, given) -> str:
    """The range to give ``name`` instead, as the caller gives ranges: the part of ``given`` inside,
    else all of ``inside``."""
    low = max(inside[0], int(np.ceil(given.low))) if _overlaps(inside, given) else inside[0]
    high = min(inside[1], int(np.floor(given.high))) if _overlaps(inside, given) else inside[1]
    return named("ranges", f"{name}={low}:{high}", f"{{{name!r}: ({low}, {high})}}")


def _overlaps(inside: tuple, given) -> bool:
    return inside[0] <= given.high and inside[1] >= given.low


def integer_note(specs, ranges: Mapping) -> list:
    """One line per integer input whose bounds are not whole: the integers it will take."""
    lines = []
    for spec in specs:
        given = ranges.get(spec.name)
        if given is None or not spec.is_integer or (float(given.low).is_integer() and float(given.high).is_integer()):
            continue
        lines.append(f"integer input '{spec.name}' takes the integers {int(np.ceil(given.low))} to "
                     f"{int(np.floor(given.high))} of [{given.low:g}, {given.high:g}]")
    return lines


__all__ = ["IndexReach", "check_index_ranges", "index_reaches", "inside_values", "integer_note"]
