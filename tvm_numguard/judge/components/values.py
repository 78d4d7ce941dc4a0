"""TVM's own values of one binding's arguments, read off a run of the imported ``main``.

Each component judges one binding (or one node's bindings) on the values TVM
itself computed for its arguments on the witness: upstream differences then
say nothing about it, and a binding is judged alone. ``Arguments`` turns a
Relax call's argument expressions into what an ``OpMeaning`` evaluates: a
tensor's captured value (vars), a constant's data, a shape's integers, a
PrimValue's number, a tuple's items.
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from tvm import relax

from ...ir.relax_ir import function_bindings, tensor_type
from ...ir.values.value_graph import named_values


class MissingValue(Exception):
    """An argument whose value no run captured (a kernel a build folded away)."""


class Arguments:
    """The values of main's bindings on one witness, read as a call's arguments:
    ``captured``, each kernel's own output (value-graph name -> array), else
    ``computed``, the value a binding without a kernel of its own has (a view, an alias)."""

    def __init__(self, func: relax.Function, captured: Mapping[str, np.ndarray],
                 computed: Optional[Mapping[str, np.ndarray]] = None, missing=None):
        self.named = named_values(func)  # unique name -> (var, value); value None for a parameter
        self.name_of = {var: name for name, (var, _) in self.named.items()}
        self.captured, self.computed = captured, computed or {}
        # name -> its value, for a binding no run captured (a kernel of constants the build folded away)
        self.missing = missing

    def call_of(self, name: str):
        """The Relax call bound to ``name`` (None: a parameter, or not a call)."""
        value = self.named.get(name, (None, None))[1]
        return value if isinstance(value, relax.Call) else None

    def value_of(self, var) -> np.ndarray:
        name = self.name_of.get(var, getattr(var, "name", None))
        for values in (self.captured, self.computed):
            if name is not None and name in values:
                return np.asarray(values[name])
        if self.missing is not None:
            return np.asarray(self.missing(name))
        raise MissingValue(f"no captured value of {name}")

    def argument(self, expr):
        """``expr`` (an argument of a call) as a value."""
        if isinstance(expr, relax.Var):
            return self.value_of(expr)
        if isinstance(expr, relax.Tuple):
            return [self.argument(field) for field in expr.fields]
        if isinstance(expr, relax.ShapeExpr):
            try:
                return [int(v) for v in expr.values]
            except TypeError:  # a symbolic dimension: its value is the run's, not the IR's
                raise MissingValue(f"a symbolic shape {list(expr.values)}") from None
        data = getattr(expr, "data", None)
        if data is not None and hasattr(data, "numpy"):
            return data.numpy()
        value = getattr(expr, "value", None)
        if value is not None:
            return value.numpy() if hasattr(value, "numpy") else value
        raise MissingValue(f"an argument numguard cannot read: {type(expr).__name__}")

    def arguments(self, call) -> list:
        return [self.argument(arg) for arg in call.args]


def widened(value, dtype: str = "float64"):
    """``value`` with its float arrays in ``dtype`` (lists item by item; others as they are)."""
    if isinstance(value, (list, tuple)):
        return [widened(v, dtype) for v in value]
    array = np.asarray(value) if isinstance(value, np.ndarray) else value
    if isinstance(array, np.ndarray) and (array.dtype.kind == "f" or array.dtype.name == "bfloat16"):
        return array.astype(dtype)
    return value


def result_dtype(var) -> Optional[str]:
    """The dtype a binding declares for its (tensor) result."""
    return tensor_type(var)[1]


def binding_names(func: relax.Function) -> list:
    """main's bindings' unique names, in order (as ``value_graph`` names them)."""
    names = named_values(func)
    order = {b.var: i for i, b in enumerate(function_bindings(func))}
    return [name for name, (var, value) in names.items() if value is not None and var in order]


def is_tensor(value) -> bool:
    return isinstance(value, np.ndarray)


__all__ = ["Arguments", "MissingValue", "binding_names", "is_tensor", "result_dtype", "widened"]
