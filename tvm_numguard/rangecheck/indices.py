"""Index ranges: an input that indexes a tensor must stay inside it.

Token ids given ``--high 5000`` for a 1000-row vocabulary are the user's
mistake, not the compiler's: ONNX Runtime refuses them ("indices out of
bounds") and TVM's ``take`` (mode "fast") reads past the table, so every
build differs and no pass is to blame. ``index_bounds`` finds each ``take``
whose indices come from an integer input through integer values only (casts,
reshapes, the ONNX frontend's wrap of negative indices), and the valid range
that input has there: ``[-n, n-1]`` where the frontend wraps negative indices
(ONNX's Gather allows them), else ``[0, n-1]``.
``check_index_ranges`` says in one line which operator a range leaves.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from ..errors import RangeError
from ..relax_ir import function_bindings, op_name, tensor_type

_INDEXING = ("relax.take",)


@dataclasses.dataclass(frozen=True)
class IndexBound:
    """Input ``name`` indexes ``binding`` (``op``, axis of size ``size``)."""

    name: str
    binding: str
    label: str  # where in the user's model
    size: int
    negative: bool  # negative indices allowed (wrapped by the frontend)

    @property
    def low(self) -> int:
        return -self.size if self.negative else 0

    @property
    def high(self) -> int:
        return self.size - 1


def _is_integer(var) -> bool:
    dtype = tensor_type(var)[1]
    return dtype is not None and dtype.startswith(("int", "uint"))


def index_bounds(model) -> list:
    """The IndexBounds of ``model``'s integer inputs, in binding order."""
    func = model.mod["main"]
    params = {p.name for p in func.params if _is_integer(p)}
    producers = {b.var.name: b for b in function_bindings(func)}
    bounds = []
    for binding in producers.values():
        value = binding.value
        if op_name(value) not in _INDEXING:
            continue
        shape, _ = tensor_type(value.args[0])
        axis = int(value.attrs.axis) if value.attrs.axis is not None else 0
        if shape is None or not shape:
            continue
        reached, wraps = _integer_sources(value.args[1], producers, params)
        origin = model.provenance.get(binding.var.name)
        label = origin.label if origin is not None else f"{op_name(value)} {binding.var.name}"
        for name in sorted(reached):
            bounds.append(IndexBound(name, binding.var.name, label, shape[axis], wraps))
    return bounds


def _integer_sources(expr, producers: Mapping, params) -> tuple:
    """(the integer inputs ``expr`` is computed from through integer values only, whether a where lies on the way)."""
    reached, wraps, stack, seen = set(), False, [expr], set()
    while stack:
        var = stack.pop()
        name = getattr(var, "name", None)
        if name is None or name in seen or not _is_integer(var):
            continue
        seen.add(name)
        if name in params:
            reached.add(name)
        binding = producers.get(name)
        if binding is None:
            continue
        wraps = wraps or op_name(binding.value) == "relax.where"
        stack.extend(a for a in getattr(binding.value, "args", []) if hasattr(a, "name"))
    return reached, wraps


def check_index_ranges(model, ranges: Mapping) -> None:
    """Raise RangeError where a range leaves the indices an input may take."""
    for bound in index_bounds(model):
        given = ranges.get(bound.name)
        if given is None:
            continue
        if np.ceil(given.low) < bound.low or np.floor(given.high) > bound.high:
            raise RangeError(
                f"input '{bound.name}' indexes {bound.label} (size {bound.size} on that axis): its range "
                f"[{given.low:g}, {given.high:g}] leaves the valid indices [{bound.low}, {bound.high}]; "
                f"give --range {bound.name}={max(bound.low, 0)}:{bound.high}")


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


__all__ = ["IndexBound", "check_index_ranges", "index_bounds", "integer_note"]
