"""The float64 rewrite: the reference model computed in double precision.

``to_float64(mod)`` rewrites every Relax function of a module (before
legalization: the model as loaded) so that float32, float16 and bfloat16
parameters, constants and op dtypes become float64; building the result with
any plain lowering (the ``zero`` pipeline, or the reference configuration)
computes the model in float64. A float16 model's truth is the real-number
result too: a "float64 build" that kept its float16 would judge float16
rounding against itself. Callers cast narrower float inputs up
(``oracle_inputs``). Ops that have no float64 kernel (their float64 build
fails) stay in their own dtype: their arguments are cast down and their result
back up, and they are listed.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from ..base.errors import summarize_error
from ..base.compare import is_float

SOURCE_DTYPES = ("float32", "float16", "bfloat16")
TARGET_DTYPE = "float64"
# attrs fields that carry a dtype (astype's dtype, out_dtype of matmul/conv, full/zeros dtype ...)
_DTYPE_FIELDS = ("dtype", "out_dtype")
# calls into lowered or external code: their kernels are float32, they stay so
ALWAYS_FLOAT32 = frozenset(
    {
        "relax.call_tir",
        "relax.call_tir_inplace",
        "relax.call_tir_with_grad",
        "relax.call_dps_packed",
        "relax.call_pure_packed",
        "relax.call_inplace_packed",
        "relax.call_builtin_with_ctx",
    }
)


# -- the rewrite ----------------------------------------------------------
def _is_narrow_tensor(ty) -> bool:
    """A tensor of a float narrower than float64 (what the rewrite widens)."""
    return isinstance(ty, relax.TensorType) and str(ty.dtype) in SOURCE_DTYPES


def _up_type(ty):
    """The float64 version of a narrower float tensor type (tuples recursively)."""
    if _is_narrow_tensor(ty):
        shape = ty.shape
        if shape is not None:
            return relax.TensorType(shape, TARGET_DTYPE, ty.vdevice)
        return relax.TensorType(None, TARGET_DTYPE, ty.vdevice, ndim=ty.ndim)
    if isinstance(ty, relax.TupleType):
        return relax.TupleType([_up_type(f) for f in ty.fields])
    return ty


def _retype_attrs(attrs):
    """A copy of ``attrs`` with narrower float dtype fields set to float64 (None when unchanged)."""
    if attrs is None:
        return None
    info = getattr(type(attrs), "__tvm_ffi_type_info__", None)
    if info is None:
        return None
    names = [f.name for f in info.fields]
    if not any(n in _DTYPE_FIELDS and str(getattr(attrs, n, None)) in SOURCE_DTYPES for n in names):
        return None
    fields = {}
    for name in names:
        value = getattr(attrs, name)
        if name in _DTYPE_FIELDS and str(value) in SOURCE_DTYPES:
            value = TARGET_DTYPE
        fields[name] = value
    try:
        return tvm.ir.make_node(info.type_key, **fields)
    except Exception:  # pragma: no cover - an attrs node that cannot be rebuilt
        return None


def _op_name(call) -> str:
    op = call.op
    if isinstance(op, tvm.ir.Op):
        return op.name
    if isinstance(op, relax.GlobalVar):
        return op.name_hint
    return type(op).__name__


# -- float64 versions of ops whose legalization is float32/float16 only ------
class _CannotDecompose(Exception):
    pass


def _static_shape(expr) -> list:
    ty = expr.ty
    shape = getattr(ty, "shape", None)
    if not isinstance(ty, relax.TensorType) or shape is None or not hasattr(shape, "values"):
        raise _CannotDecompose()
    dims = []
    for dim in shape.values:
        if type(dim).__name__ != "IntImm":
            raise _CannotDecompose()
        dims.append(int(dim))
    return dims


def _is_float64(expr) -> bool:
    return isinstance(expr.ty, relax.TensorType) and str(expr.ty.dtype) == TARGET_DTYPE


def _normalize(bb, x, axes, epsilon):
    """(x - mean) / sqrt(var + eps) over ``axes`` (population variance)."""
    mean = bb.emit(relax.op.mean(x, axes, keepdims=True))
    centered = bb.emit(relax.op.subtract(x, mean))
    var = bb.emit(relax.op.mean(bb.emit(relax.op.multiply(centered, centered)), axes, keepdims=True))
    eps = relax.const(float(epsilon), TARGET_DTYPE)
    return bb.emit(relax.op.divide(centered, bb.emit(relax.op.sqrt(bb.emit(relax.op.add(var, eps))))))


def _affine(bb, y, gamma, beta, shape, scale, center):
    if scale:
        y = bb.emit(relax.op.multiply(y, bb.emit(relax.op.reshape(gamma, shape))))
    if center:
        y = bb.emit(relax.op.add(y, bb.emit(relax.op.reshape(beta, shape))))
    return y


def _norm_args(args) -> tuple:
    """(x, gamma, beta, static shape of x) of a norm call whose arguments are all float64."""
    if not all(_is_float64(a) for a in args):
        raise _CannotDecompose()
    x, gamma, beta = args
    return x, gamma, beta, _static_shape(x)


def _layer_norm(bb, args, attrs):
    x, gamma, beta, dims = _norm_args(args)
    axes = sorted(int(a) % len(dims) for a in attrs.axes)
    y = _normalize(bb, x, axes, attrs.epsilon)
    shape = [dims[i] if i in axes else 1 for i in range(len(dims))]
    return _affine(bb, y, gamma, beta, shape, bool(attrs.scale), bool(attrs.center))


def _instance_norm(bb, args, attrs):
    x, gamma, beta, dims = _norm_args(args)
    axes = sorted(int(a) % len(dims) for a in attrs.axes)
    ca = int(attrs.channel_axis) % len(dims)
    y = _normalize(bb, x, axes, attrs.epsilon)
    shape = [dims[i] if i == ca else 1 for i in range(len(dims))]
    return _affine(bb, y, gamma, beta, shape, bool(attrs.scale), bool(attrs.center))


def _group_norm(bb, args, attrs):
    x, gamma, beta, dims = _norm_args(args)
    n = len(dims)
    ca = int(attrs.channel_axis) % n
    groups = int(attrs.num_groups)
    if dims[ca] % groups:
        raise _CannotDecompose()
    split = dims[:ca] + [groups, dims[ca] // groups] + dims[ca + 1:]
    axes = [ca + 1] + [int(a) % n + (1 if int(a) % n > ca else 0) for a in attrs.axes]
    y = _normalize(bb, bb.emit(relax.op.reshape(x, split)), sorted(set(axes)), attrs.epsilon)
    y = bb.emit(relax.op.reshape(y, dims))
    shape = [dims[i] if i == ca else 1 for i in range(n)]
    return _affine(bb, y, gamma, beta, shape, bool(attrs.scale), bool(attrs.center))


_DECOMPOSE = {
    "relax.nn.layer_norm": _layer_norm,
    "relax.nn.group_norm": _group_norm,
    "relax.nn.instance_norm": _instance_norm,
}


@mutator
class _ToFloat64(PyExprMutator):
    """Retypes params, constants and dtype attrs; keeps ``keep`` ops float32."""

    def __init__(self, mod: tvm.IRModule, keep: frozenset):
        super().__init__(mod)
        self.keep = keep
        self.kept: list = []

    def visit_function_(self, func):
        params = []
        for param in func.params:
            ty = param.ty
            new_ty = _up_type(ty)
            if new_ty is ty:
                params.append(param)
                continue
            cls = relax.DataflowVar if isinstance(param, relax.DataflowVar) else relax.Var
            new = cls(param.name, new_ty)
            self.set_var_remap(param, new)
            params.append(new)
        body = self.visit_with_new_scope(func.body)
        return relax.Function(params, body, None, func.is_pure, func.attrs)

    def visit_generic_const_(self, const):
        if _is_narrow_tensor(const.ty):
            return relax.const(const.value.numpy().astype(np.float64), TARGET_DTYPE)
        return const

    def visit_call_(self, call):
        args = [self.visit_expr(arg) for arg in call.args]
        name = _op_name(call)
        if not isinstance(call.op, tvm.ir.Op) or name in self.keep:
            return self._keep_own_dtype(call, args, name)
        decompose = _DECOMPOSE.get(name)
        if decompose is not None:
            try:
                return decompose(self.builder_, args, call.attrs)
            except _CannotDecompose:
                return self._keep_own_dtype(call, args, name)
        attrs = _retype_attrs(call.attrs)
        new = relax.Call(call.op, args, call.attrs if attrs is None else attrs, call.ty_args)
        return self.builder_.normalize(new)

    def _down(self, old, new):
        """``new`` cast back to ``old``'s own float type (tuples element by element)."""
        if isinstance(old, relax.Tuple) and isinstance(new, relax.Tuple):
            return relax.Tuple([self._down(o, n) for o, n in zip(old.fields, new.fields)])
        old_ty, new_ty = getattr(old, "ty", None), getattr(new, "ty", None)
        if (old_ty is not None and _is_narrow_tensor(old_ty) and isinstance(new_ty, relax.TensorType)
                and str(new_ty.dtype) == TARGET_DTYPE):
            return self.builder_.emit(relax.op.astype(new, str(old_ty.dtype)))
        return new

    def _keep_own_dtype(self, call, args, name):
        """Run ``call`` as it was (its own dtypes): cast arguments down, the result up."""
        down = [self._down(old, new) for old, new in zip(call.args, args)]
        result = self.builder_.normalize(relax.Call(call.op, down, call.attrs, call.ty_args))
        self.kept.append(name)
        ty = result.ty
        if _is_narrow_tensor(ty):
            return relax.op.astype(self.builder_.emit(result), TARGET_DTYPE)
        if isinstance(ty, relax.TupleType) and any(_is_narrow_tensor(f) for f in ty.fields):
            var = self.builder_.emit(result)
            items = []
            for i, field in enumerate(ty.fields):
                item = relax.TupleGetItem(var, i)
                items.append(relax.op.astype(item, TARGET_DTYPE) if _is_narrow_tensor(field) else item)
            return relax.Tuple(items)
        return result


def _called_functions(mod: tvm.IRModule) -> set:
    """Relax functions called by other Relax functions (they stay float32)."""
    called = set()

    def visit(expr):
        if isinstance(expr, relax.Call) and isinstance(expr.op, relax.GlobalVar):
            called.add(expr.op.name_hint)

    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return called


def _rewrite(mod: tvm.IRModule, keep: frozenset):
    rewriter = _ToFloat64(mod, keep | ALWAYS_FLOAT32)
    called = _called_functions(mod)
    out = mod.clone()  # keeps attrs and global infos
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function) and gv.name_hint not in called:
            out.update_func(gv, rewriter.visit_expr(func))
    return out, sorted(set(rewriter.kept))


def relax_ops(mod: tvm.IRModule) -> list:
    """Names of the Relax operators called in ``mod``'s Relax functions."""
    names = set()

    def visit(expr):
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            names.add(expr.op.name)

    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return sorted(names)


def _builds(mod: tvm.IRModule) -> Optional[str]:
    """None when ``mod`` builds (plain lowering for llvm), else the error."""
    try:
        tvm.compile(mod, "llvm")
        return None
    except Exception as err:  # TVM raises many kinds of errors
        return summarize_error(err)


def to_float64(mod: tvm.IRModule, keep: Iterable[str] = (), try_build: bool = True):
    """Rewrite ``mod`` to compute in float64; returns ``(module, ops left float32)``.

    ``keep`` names ops to leave float32 from the start. With ``try_build`` the
    rewritten module is built once (plain ``llvm`` lowering); if that fails,
    each op is tried alone in float64 and the ones that fail stay float32.
    """
    keep = frozenset(keep)
    new, kept = _rewrite(mod, keep)
    if not try_build or _builds(new) is None:
        return new, kept
    failing = set(keep)
    for name in relax_ops(mod):
        if name in keep or name in ALWAYS_FLOAT32:
            continue
        others = frozenset(n for n in relax_ops(mod) if n != name)
        probe, _ = _rewrite(mod, keep | others)
        if _builds(probe) is not None:
            failing.add(name)
    new, kept = _rewrite(mod, frozenset(failing))
    return new, kept


def oracle_inputs(inputs: Mapping[str, np.ndarray]) -> dict:
    """Cast float32, float16 and bfloat16 inputs to float64 for the oracle build."""
    return {
        name: (np.asarray(v).astype(np.float64) if np.asarray(v).dtype.name in SOURCE_DTYPES else np.asarray(v))
        for name, v in inputs.items()
    }


class Float64Build:
    """A model built in float64 with plain lowering (legalize and lower, no optimization).

    ``Float64Build(mod, input_names)`` rewrites and builds once; ``run(inputs)``
    takes the float32 inputs and returns every output as a float64 array
    (outputs of ops left float32 are cast up). ``kept`` lists those ops.
    """

    def __init__(self, mod: tvm.IRModule, input_names: Sequence[str], target: str = "llvm", keep: Iterable[str] = ()):
        from ..ir.pipeline import target_device
        from ..ir.targets import target_of

        self.input_names = list(input_names)
        self.mod, self.kept = to_float64(mod, keep=keep, try_build=False)
        tgt = target_of(target)
        try:
            self.executable = tvm.compile(self.mod, tgt)
        except Exception:  # some op has no float64 kernel: find it, keep it float32
            self.mod, self.kept = to_float64(mod, keep=keep, try_build=True)
            self.executable = tvm.compile(self.mod, tgt)
        self.device = target_device(tgt)
        self.vm = relax.VirtualMachine(self.executable, self.device)

    def run(self, inputs: Mapping[str, np.ndarray]) -> list:
        from ..build.compile import call_main

        outputs = call_main(self.vm, self.device, self.input_names, oracle_inputs(inputs))
        return [o.astype(np.float64) if is_float(o.dtype) else o for o in outputs]
