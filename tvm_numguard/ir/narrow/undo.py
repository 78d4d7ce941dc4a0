"""Undoing a pass's rewrite at chosen places, keeping the rest of what it did.

``narrowed(before, after, places)`` returns ``after`` with, at each place:

  - a binding of ``main``: the value matched to it after the pass computed as
    the module before the pass computed it: the same operator and attributes,
    its arguments taken from the values after the pass that match the
    arguments before it, each cast back to the dtype it had before (a value
    that the fix itself keeps is taken uncast, so a chain of kept places stays
    in the original precision: ToMixedPrecision's float32 stays float32 from one
    kept operator to the next). Its result is cast to the dtype the pass gave
    it, so every later binding reads what it read before;
  - a function: the function as it was before the pass, under its name.

A place the module does not have, or whose operator is not the one the place
names (a fix made for another module), raises ``CannotUndo`` too.

Limits (each raises ``CannotUndo``, and the place is then not narrowed alone):
a binding no value after the pass matches (a pass that fused or removed it);
an argument whose match is defined after the place (a pass that reordered);
a result of another shape; a kernel name the pass reused for another kernel;
a result that is not well formed. Places in Relax functions other than
``main`` are whole functions.
"""

from __future__ import annotations

from typing import Sequence

import tvm
import tvm_ffi
from tvm import relax

from ..relax_ir import function_bindings, op_name, pristine, tensor_type
from .rewrites import Correspondence, Place


class CannotUndo(Exception):
    """A place where the pass's rewrite cannot be undone alone; the message says why."""


def narrowed(before: tvm.IRModule, after: tvm.IRModule, places: Sequence[Place]) -> tvm.IRModule:
    """``after`` with the pass's rewrite undone at ``places`` (a new module;
    neither argument changes)."""
    out = pristine(after)
    functions = [p for p in places if p.binding is None]
    bindings = [p for p in places if p.binding is not None]
    for place in functions:
        if place.function not in _names(before) or place.function not in _names(after):
            raise CannotUndo(f"function {place.function} is not in the module before and after the pass")
        out[out.get_global_var(place.function)] = before[before.get_global_var(place.function)]
    if bindings:
        main = _Rebuild(Correspondence(before, after), bindings, out).function()
        out[out.get_global_var("main")] = main
    try:
        relax.analysis.well_formed(out)  # raises on the first violation
    except Exception as err:  # TVM raises many types; an ill-formed module is not a fix
        raise CannotUndo(f"the narrowed module is not well formed: {str(err).splitlines()[-1]}") from None
    return out


def _names(mod: tvm.IRModule) -> set:
    return {gv.name_hint for gv in mod.get_global_vars()}


class _Rebuild:
    """``main`` after the pass, rebuilt with ``places`` computed as before it;
    ``out``: the module it goes in (kernels the places call are added there)."""

    def __init__(self, correspondence: Correspondence, places: Sequence[Place], out: tvm.IRModule):
        self.c, self.out = correspondence, out
        if not correspondence.has_main:
            raise CannotUndo("the module has no Relax main before and after the pass")
        self.targets: dict[str, str] = {}  # after name -> before name
        for place in places:
            if place.binding is None or place.binding not in correspondence.values_before:
                raise CannotUndo(f"main has no value {place.binding}")
            have = op_name(correspondence.values_before[place.binding][1])
            if have is not None and have != place.op:  # a fix made for another module
                raise CannotUndo(f"{place.binding} is {have} here, the fix was made where it is {place.op}")
            partner = correspondence.after_of.get(place.binding)
            if partner is None:
                raise CannotUndo(f"no value after the pass matches {place.binding} ({place.op})")
            self.targets[partner] = place.binding
        self.kept: dict = {}  # before name -> var holding its value in its own dtype
        self.kept_for: dict = {}  # a place's var after the pass -> the var holding its kept value
        self.defined: set = set()
        self.params = {correspondence.name_after(p): p for p in correspondence.after["main"].params}
        self.emitted: list = []
        self.dataflow = False

    def function(self) -> relax.Function:
        func = self.c.after["main"]
        self.defined |= set(func.params)
        blocks = []
        for block in func.body.blocks:
            self.dataflow = isinstance(block, relax.DataflowBlock)
            self.emitted = []
            for binding in block.bindings:
                name = self.c.name_after(binding.var)
                if name in self.targets and isinstance(binding, relax.VarBinding):
                    self._undo(binding, self.targets[name])
                else:
                    self.emitted.append(self._recast(binding))
                self.defined.add(binding.var)
            blocks.append((self.dataflow, self.emitted))
        blocks = _pruned(blocks, func.body.body, _used(function_bindings(func), func.body.body))
        blocks = [relax.DataflowBlock(b) if dataflow else relax.BindingBlock(b) for dataflow, b in blocks]
        rebuilt = relax.Function(func.params, relax.SeqExpr(blocks, func.body.body), func.ret_ty, func.is_pure,
                                 func.attrs)
        return relax.BlockBuilder().normalize(rebuilt)

    def _undo(self, binding, before_name: str) -> None:
        value = relax.BlockBuilder().normalize(self._remap(self.c.values_before[before_name][1]))
        var = binding.var
        if tvm_ffi.structural_equal(value.ty, var.ty, map_free_vars=True):
            self.emitted.append(relax.VarBinding(var, value))
            self.kept[before_name] = var
            return
        shape_kept, dtype_kept = tensor_type(value.ty)
        shape_after, dtype_after = tensor_type(var.ty)
        if dtype_kept is None or dtype_after is None or shape_kept != shape_after:
            raise CannotUndo(f"{before_name} computed as before has type {value.ty}, the pass made {var.ty}")
        kept = self._emit(f"{before_name}_kept", value)
        self.emitted.append(relax.VarBinding(var, relax.BlockBuilder().normalize(relax.op.astype(kept, dtype_after))))
        self.kept[before_name] = kept
        self.kept_for[var] = kept

    def _recast(self, binding):
        """``binding``, where it casts a kept place's value (the pass's cast back
        to the original dtype, at an output), cast from the kept value instead:
        no round trip through the pass's dtype."""
        value = getattr(binding, "value", None)
        if not (isinstance(value, relax.Call) and value.op.same_as(tvm.ir.Op.get("relax.astype"))
                and value.args[0] in self.kept_for):
            return binding
        kept = self.kept_for[value.args[0]]
        if tvm_ffi.structural_equal(kept.ty, binding.var.ty, map_free_vars=True):
            return relax.VarBinding(binding.var, kept)
        return relax.VarBinding(binding.var, relax.BlockBuilder().normalize(relax.op.astype(kept, value.attrs.dtype)))

    def _emit(self, name: str, value) -> relax.Var:
        var = (relax.DataflowVar if self.dataflow else relax.Var)(name, value.ty)
        self.emitted.append(relax.VarBinding(var, value))
        self.defined.add(var)
        return var

    def _remap(self, expr):
        """``expr`` (of main before the pass) over the values after it."""
        if isinstance(expr, relax.Var):
            return self._value_of(expr)
        if isinstance(expr, relax.Call):
            op = self._kernel(expr.op) if isinstance(expr.op, tvm.ir.GlobalVar) else expr.op
            return relax.Call(op, [self._remap(a) for a in expr.args], expr.attrs, list(expr.ty_args))
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self._remap(f) for f in expr.fields])
        if isinstance(expr, relax.TupleGetItem):
            return relax.TupleGetItem(self._remap(expr.tuple_value), expr.index)
        if isinstance(expr, tvm.ir.GlobalVar):
            return self._kernel(expr)
        return expr  # constants, shapes, prim values, operators, extern functions

    def _value_of(self, var) -> relax.Var:
        """The value after the pass that stands for ``var`` before it, in ``var``'s dtype."""
        name = self.c.name_before(var)
        if name in self.kept:
            return self.kept[name]
        if name in self.params:
            source = self.params[name]
        else:
            partner = self.c.partner(name)
            if partner is None:
                raise CannotUndo(f"no value after the pass matches {name}, an argument of a kept place")
            source = self.c.values_after[partner][0]
        if source not in self.defined:
            raise CannotUndo(f"{name}'s match after the pass is defined after the place that reads it")
        wanted, have = tensor_type(var.ty)[1], tensor_type(source.ty)[1]
        if wanted is not None and have is not None and wanted != have:
            return self._emit(f"{name}_{wanted}", relax.BlockBuilder().normalize(relax.op.astype(source, wanted)))
        return source

    def _kernel(self, gv: tvm.ir.GlobalVar) -> tvm.ir.GlobalVar:
        """The module's GlobalVar for the function ``gv`` names before the pass (added where the pass dropped it)."""
        func = self.c.before[gv]
        if gv.name_hint in _names(self.out):
            mine = self.out.get_global_var(gv.name_hint)
            if not tvm_ffi.structural_equal(self.out[mine], func, map_free_vars=True):
                raise CannotUndo(f"the pass reused the name {gv.name_hint} for another function")
            return mine
        self.out[gv] = func
        return gv


def _used(bindings, result) -> set:
    """The vars that ``bindings``' values and ``result`` read."""
    used = set(relax.analysis.free_vars(result))
    for binding in bindings:
        used |= set(relax.analysis.free_vars(binding.value))
    return used


def _pruned(blocks: list, result, used_by_pass: set) -> list:
    """``blocks`` ([(dataflow, bindings)]) less the dataflow bindings that only
    the undone places read (the pass's casts into its dtype, now unread): the
    range check would warn about a cast nothing reads. What the pass itself
    left unread stays."""
    while True:
        used = _used([b for _, bindings in blocks for b in bindings], result)
        dead = {b.var for dataflow, bindings in blocks if dataflow for b in bindings
                if isinstance(b, relax.VarBinding) and b.var not in used and b.var in used_by_pass}
        if not dead:
            return blocks
        blocks = [(dataflow, [b for b in bindings if b.var not in dead]) for dataflow, bindings in blocks]
