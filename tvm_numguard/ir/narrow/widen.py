"""Keep chosen operators of a model in float32: the widening that answers a precision difference.

A float16 model's framework often computes an operator wider than the model
declares (ONNX Runtime's CPU provider runs many float16 kernels in float32,
and accumulates a float16 mean or softmax in float32); TVM computes it in the
model's own dtype. Where that difference is beyond the user's tolerance, the
widening computes the operator in float32 in TVM too, with the casts around it
that the framework inserts::

    # before (the imported main)
    lv: R.Tensor((4,), dtype="float16") = R.mean(x, axis=[1], keepdims=False)
    # after KeepFloat32({"lv"})
    lv1: R.Tensor((4, 51), dtype="float32") = R.astype(x, dtype="float32")
    lv2: R.Tensor((4,), dtype="float32") = R.mean(lv1, axis=[1], keepdims=False)
    lv: R.Tensor((4,), dtype="float16") = R.astype(lv2, dtype="float16")

Every reader of ``lv`` sees a float16 value as before: only the computation
inside the operator is wider, the rounding at its output stays the model's.

Limits, each raising ``CannotWiden``: a name that is not a binding of
``main``; a binding that is not an operator call (a call_tir kernel, a tuple,
an alias); an operator whose result is not a narrow float tensor (nothing to
widen); an operator whose attributes name an output dtype (``astype``,
``matmul``'s ``out_dtype``, creation ops): widening it would change what it is
asked to produce.
"""

from __future__ import annotations

from typing import Iterable

import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from ..relax_ir import function_bindings, op_name, tensor_type

NARROW_FLOATS = ("float16", "bfloat16")
# operators whose attributes choose their output dtype: widened, they would be asked for another one
_DTYPE_ATTRIBUTES = ("dtype", "out_dtype")


class CannotWiden(ValueError):
    """A binding that cannot be computed in float32 (see the module's limits)."""


def widenable(binding) -> bool:
    """Whether ``binding`` of main can be kept in float32 (an operator call with a narrow float result)."""
    try:
        _refuse_unwidenable(binding)
    except CannotWiden:
        return False
    return True


def _refuse_unwidenable(binding) -> None:
    name, value = binding.var.name, binding.value
    if op_name(value) is None:
        raise CannotWiden(f"'{name}' is not an operator call")
    _, dtype = tensor_type(binding.var)
    if dtype not in NARROW_FLOATS:
        raise CannotWiden(f"'{name}' ({op_name(value)}) computes {dtype}, no narrow float")
    attrs = value.attrs
    for field in _DTYPE_ATTRIBUTES:
        chosen = getattr(attrs, field, None) if attrs is not None else None
        if chosen is not None and str(chosen) not in ("", "void", "None"):
            raise CannotWiden(f"'{name}' ({op_name(value)}) chooses its output dtype ({field})")


@mutator
class _Widen(PyExprMutator):
    def __init__(self, mod, names):
        super().__init__(mod)
        self.names = frozenset(names)

    def visit_var_binding_(self, binding):
        if binding.var.name not in self.names:
            return super().visit_var_binding_(binding)
        call = self.visit_expr(binding.value)
        name = binding.var.name
        # the helpers are named after the binding, so that it keeps its own name (provenance read names)
        args = [self.builder_.emit(relax.op.astype(a, "float32"), name_hint=f"{name}_in{i}_f32") if _is_narrow(a)
                else a for i, a in enumerate(call.args)]
        wide = self.builder_.emit(relax.Call(call.op, args, call.attrs, call.ty_args), name_hint=f"{name}_f32")
        _, dtype = tensor_type(binding.var)
        back = relax.op.astype(wide, dtype)
        if isinstance(binding.var, relax.DataflowVar):
            new = self.builder_.emit(back, name_hint=name)
        else:
            new = self.builder_.emit_output(back, name_hint=name)
        self.set_var_remap(binding.var, new)


def _is_narrow(expr) -> bool:
    return tensor_type(getattr(expr, "ty", None))[1] in NARROW_FLOATS


def keep_float32(mod: tvm.IRModule, names: Iterable[str]) -> tvm.IRModule:
    """A new module whose ``main`` computes the bindings ``names`` in float32
    (their inputs cast up, their result cast back); raises CannotWiden."""
    names = list(names)
    bindings = {b.var.name: b for b in function_bindings(mod["main"])}
    for name in names:
        if name not in bindings:
            raise CannotWiden(f"'{name}' is not a binding of main")
        _refuse_unwidenable(bindings[name])
    out = mod.clone()
    out["main"] = _Widen(mod, names).visit_expr(mod["main"])
    return out


def KeepFloat32(names: Iterable[str]) -> tvm.transform.Pass:  # noqa: N802 - named as TVM names its passes
    """The module pass that applies ``keep_float32(mod, names)``: put it first in a pipeline."""
    names = tuple(names)

    @tvm.transform.module_pass(opt_level=0, name="KeepFloat32")
    def widen(mod, ctx):
        return keep_float32(mod, names)

    return widen


__all__ = ["CannotWiden", "KeepFloat32", "NARROW_FLOATS", "keep_float32", "widenable"]
