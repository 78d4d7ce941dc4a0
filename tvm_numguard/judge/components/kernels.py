"""One binding built again alone: its Relax operator call as a module of its own
(``alone``, ``run_alone``), or its kernel with chosen math intrinsics computed
another way.

LegalizeOps turns a Relax operator into a PrimFunc whose math is ``tirx``
intrinsics (``T.exp``, ``T.tanh``, ``T.nearbyint``); the target's code generator
lowers each through its ``FLowerIntrinsic`` / ``FLegalize`` rules
(``tirx.LowerIntrin``: ``llvm.*`` first, then ``default.*``). Replacing an
intrinsic call before that by a call of the C library's double function
(``T.call_pure_extern("float64", "tanh", ...)``, which no lowering rule
touches) leaves the rest of the kernel as it is: the kernel with every
intrinsic so replaced is what the TE formula computes with exact intrinsics
(legalization's value), and the difference from the kernel as built is the
code generator's alone.

    # before: the kernel LegalizeOps made      # after: tanh computed by libm in float64
    compute[i] = T.tanh(x[i])                   compute[i] = T.Cast("float32",
                                                    T.call_pure_extern("float64", "tanh", T.Cast("float64", x[i])))

``widened`` replaces an intrinsic by the same intrinsic computed in float32
(where the kernel's float is narrower): the precision question.

One Relax operator call alone, as a module of its own, is TVM compiling just
that operator. Its tensor arguments become parameters (constants too, so that
the values can be fed), everything else (shapes, PrimValues, attributes) stays
as the model has it::

    # the binding in the model's main            # alone
    lv3 = R.nn.group_norm(lv2, gamma, beta, ...)  @R.function
                                                   def main(a0: R.Tensor(...), a1: ..., a2: ...):
                                                       lv = R.nn.group_norm(a0, a1, a2, ...)
                                                       return lv

``run_alone`` builds and runs it (plain LegalizeOps, the default TIR
pipeline), optionally with the operator kept in float32 (``ir/narrow/widen``):
the precision question of a narrow-float kernel; ``scripts.py`` prints the
same as a script a user runs on stock TVM.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, tirx

from ...build.compile import call_main, device_array
from .values import MissingValue

# tirx intrinsic -> its float64 C library function (every one a pure function of its arguments)
LIBM = {f"tirx.{name}": name for name in (
    "exp", "exp2", "exp10", "log", "log10", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "pow", "atan2", "fmod", "hypot", "floor",
    "trunc", "round", "nearbyint", "fabs", "copysign")}
# intrinsics the C library has no function for, as formulas over its double functions
FORMULAS: dict = {
    "tirx.rsqrt": lambda x: tirx.const(1.0, "float64") / tirx.call_pure_extern("float64", "sqrt", x),
    "tirx.sigmoid": lambda x: tirx.const(1.0, "float64") / (
        tirx.const(1.0, "float64") + tirx.call_pure_extern("float64", "exp", tirx.const(0.0, "float64") - x)),
}
MATH_INTRINSICS = frozenset(LIBM) | frozenset(FORMULAS)


class KernelError(Exception):
    """A binding whose kernel cannot be built or run alone (why, in one line)."""


def is_math_call(node) -> bool:
    op = getattr(node, "op", None)
    return isinstance(node, tvm.ir.Call) and isinstance(op, tvm.ir.Op) and op.name in MATH_INTRINSICS


def intrinsics_of(func: tirx.PrimFunc) -> list:
    """The math intrinsics ``func`` calls, in the order first met."""
    found: list = []

    def visit(node):
        if is_math_call(node) and node.op.name not in found:
            found.append(node.op.name)

    tvm_ffi.structural_walk(func, [(tvm.ir.Call, visit)])
    return found


def with_libm(func: tirx.PrimFunc, ops: Sequence[str]) -> tirx.PrimFunc:
    """``func`` with every call of the intrinsics ``ops`` computed by the C library in float64."""
    def replace(node):
        if not is_math_call(node) or node.op.name not in ops:
            return node
        dtype = str(node.ty)
        args = [tirx.Cast("float64", a) if str(a.ty) != "float64" else a for a in node.args]
        if node.op.name in FORMULAS:
            value = FORMULAS[node.op.name](*args)
        else:
            value = tirx.call_pure_extern("float64", LIBM[node.op.name], *args)
        return tirx.Cast(dtype, value) if dtype != "float64" else value

    return tvm_ffi.structural_map(func, [(tvm.ir.Call, replace)])


def widened(func: tirx.PrimFunc, ops: Sequence[str], dtype: str = "float32") -> tirx.PrimFunc:
    """``func`` with every call of the intrinsics ``ops`` in a narrower float computed in ``dtype``."""
    def replace(node):
        if not is_math_call(node) or node.op.name not in ops or _width(str(node.ty)) >= _width(dtype):
            return node
        args = [tirx.Cast(dtype, a) for a in node.args]
        return tirx.Cast(str(node.ty), tirx.call_intrin(dtype, node.op.name, *args))

    return tvm_ffi.structural_map(func, [(tvm.ir.Call, replace)])


def _width(dtype: str) -> int:
    return {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}.get(dtype, 64)


def run_prim_func(func: tirx.PrimFunc, inputs: Sequence, outputs: Sequence, target) -> list:
    """``func`` built alone for ``target`` and run on ``inputs`` (numpy), its results in new buffers of
    ``outputs`` ((shape, dtype) each: destination passing, as a kernel of a Relax module takes them)."""
    built = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target)
    device = tvm.cpu()
    args = [tvm.runtime.tensor(device_array(np.asarray(v)), device) for v in inputs]
    outs = [tvm.runtime.tensor(np.zeros(shape, dtype=dtype), device) for shape, dtype in outputs]
    built["main"](*args, *outs)
    return [o.numpy() for o in outs]


class KernelRun:
    """The ``call_tir`` LegalizeOps made of one binding: its PrimFunc, and its arguments'
    values (TVM's own, captured on the witness). ``run(transform)`` builds the PrimFunc
    alone (``transform`` applied first) for ``target`` and runs it on them."""

    def __init__(self, legal: tvm.IRModule, call, arguments, target):
        self.target = target
        if len(call.args) > 2:
            raise KernelError("a kernel with symbolic shape arguments")
        self.func, self.name = legal[call.args[0]], call.args[0].name_hint
        fields = call.args[1].fields if isinstance(call.args[1], relax.Tuple) else [call.args[1]]
        try:
            self.inputs = [np.asarray(arguments.argument(field)) for field in fields]
        except MissingValue as err:
            raise KernelError(str(err)) from None
        outputs = call.ty_args[0] if call.ty_args else call.ty
        self.outputs = list(outputs.fields) if isinstance(outputs, relax.TupleType) else [outputs]
        self._memo: dict = {}

    @property
    def intrinsics(self) -> list:
        return intrinsics_of(self.func)

    def run(self, transform: Optional[Callable] = None, key=None) -> list:
        """The kernel's outputs, with ``transform`` (a PrimFunc -> PrimFunc) applied first;
        memoized by ``key`` (None: not memoized)."""
        if key is not None and key in self._memo:
            return self._memo[key]
        func = transform(self.func) if transform is not None else self.func
        outputs = [([int(d) for d in o.shape.values], str(o.dtype)) for o in self.outputs]
        try:
            result = run_prim_func(func, self.inputs, outputs, self.target)
        except Exception as err:  # noqa: BLE001 - TVM raises many types; the component is then not judged
            raise KernelError(f"the kernel {self.name} does not build or run alone: "
                              f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}") from None
        if key is not None:
            self._memo[key] = result
        return result


def alone(call, values: Sequence) -> tuple:
    """(an IRModule whose main computes ``call`` on parameters, the values those parameters take)."""
    params, args, fed = [], [], []
    for index, (arg, value) in enumerate(zip(call.args, values)):
        if isinstance(value, np.ndarray) and (isinstance(arg, relax.Var) or hasattr(arg, "data")):
            param = relax.Var(f"a{index}", relax.TensorType(list(value.shape), str(value.dtype)))
            params.append(param)
            fed.append(value)
            args.append(param)
        elif isinstance(arg, relax.Tuple) and all(isinstance(v, np.ndarray) for v in value):
            fields = []
            for k, item in enumerate(value):
                param = relax.Var(f"a{index}_{k}", relax.TensorType(list(item.shape), str(item.dtype)))
                params.append(param)
                fed.append(item)
                fields.append(param)
            args.append(relax.Tuple(fields))
        else:
            args.append(arg)
    builder = relax.BlockBuilder()
    with builder.function("main", params):
        with builder.dataflow():
            out = builder.emit_output(relax.Call(call.op, args, call.attrs, call.ty_args))
        builder.emit_func_output(out)
    return builder.get(), fed


def run_alone(call, values: Sequence, target, keep_float32: bool = False) -> np.ndarray:
    """``call`` compiled alone by TVM for ``target`` and run on ``values``: its (first) output."""
    mod, fed = alone(call, values)
    if keep_float32:
        from ...ir.narrow.widen import keep_float32 as widen

        name = mod["main"].body.blocks[0].bindings[-1].var.name
        mod = widen(mod, [name])
    executable = tvm.compile(mod, target)
    device = tvm.cpu()
    vm = relax.VirtualMachine(executable, device)
    outputs = call_main(vm, device, [f"p{i}" for i in range(len(fed))], {f"p{i}": v for i, v in enumerate(fed)})
    return np.asarray(outputs[0])


__all__ = ["FORMULAS", "KernelError", "KernelRun", "LIBM", "MATH_INTRINSICS", "alone", "intrinsics_of", "run_alone",
           "run_prim_func", "widened", "with_libm"]
