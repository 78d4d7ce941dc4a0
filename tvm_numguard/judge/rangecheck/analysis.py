"""Interval analysis of a Relax function: where its values can go, and which
operators can leave their domain or their dtype's range.

``analyse(func, inputs)`` walks ``func``'s bindings in order, from one
``Interval`` per parameter, through ``transfer.TRANSFER`` (and a few kernels a
pass may have put in as ``call_tir``), and returns an ``Analysis``: the value of
every binding and the ``RangeWarning``s. Every result is widened for the
rounding of its dtype, so the intervals bound what a float build computes, not
only the exact values (a test compares them with sampled runs). An operator the
table does not know widens to its dtype's range; warnings downstream of it are
kept apart (``unanalysed``), since they say nothing about the model.

Warning kinds:
  - ``domain``: an argument may leave the operator's domain (``domains.DOMAINS``:
    log of <= 0, division by an interval holding 0, exp past the dtype's limit);
  - ``overflow``: the result may pass its dtype's largest finite value although
    every argument is finite (a float16 cast of a large activation);
  - ``approximation``: a fast kernel a pass put in (FastMathTransform's
    ``fast_exp``) gets arguments where it departs from the exact function;
  - ``piecewise``: ``where`` on a comparison with a constant that lies inside
    the compared value's interval: the range is split and each side computed
    differently (a rewrite that is exact on one side only; the check keeps only
    the splits a pipeline brought, not the model's own).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Optional

import numpy as np
import tvm
from tvm import relax

from .domains import domain_of, exp_limit
from .interval import EVERYTHING, Interval, dtype_epsilon, dtype_limits
from .transfer import TRANSFER, Abstract, attr, conv_terms
from ...ir.relax_ir import tensor_type

# One interval per tensor is exact through one weighted sum of the inputs and
# loses which element is large through each further one (several times too
# wide each time): a warning whose bound passed through more is "loose".
LOOSE_DEPTH = 1
WEIGHTED_SUMS = {"relax.matmul", "relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv3d",
                 "relax.nn.conv1d_transpose", "relax.nn.conv2d_transpose"}
# operators whose result bound does not depend on how wide their argument's is
BOUNDED = {"relax.tanh", "relax.sigmoid", "relax.erf", "relax.sin", "relax.cos", "relax.sign",
           "relax.nn.softmax", "relax.nn.layer_norm", "relax.nn.group_norm", "relax.nn.rms_norm"}
FAST_EXP_CLAMP = 88.3762626647949  # fast_exp clamps its argument to +-this (float32): exp is larger above it
_COMPARES = {"relax.less", "relax.less_equal", "relax.greater", "relax.greater_equal"}
_CONST_FOLDED = {"relax.astype", "relax.reshape", "relax.permute_dims", "relax.expand_dims", "relax.squeeze",
                 "relax.flatten"}


@dataclasses.dataclass(frozen=True)
class RangeWarning:
    """An operator that can misbehave somewhere in the input range."""

    kind: str  # domain | overflow | approximation | piecewise
    binding: str  # the var it is bound to (a name hint: two vars may share it)
    position: int  # the binding's place in main's bindings (the identity)
    op: str  # "relax.exp", "call_tir fast_exp"
    interval: Interval  # the argument's interval (the result's, for an overflow)
    limit: str  # what the interval passes, in words
    dtype: str
    excess: float  # how far past the limit (>0), for ranking and for the search's aim
    threshold: Optional[float] = None  # the boundary value itself (a piecewise split's, a dtype's limit)
    depth: int = 0  # weighted sums behind the bound: past LOOSE_DEPTH it may be many times too wide

    @property
    def loose(self) -> bool:
        return self.depth > LOOSE_DEPTH

    def same_place(self, other: "RangeWarning") -> bool:
        return (self.kind, self.position, self.op) == (other.kind, other.position, other.op)

    def to_json(self) -> dict:
        return {"kind": self.kind, "binding": self.binding, "position": self.position, "op": self.op,
                "interval": self.interval.to_json(), "limit": self.limit, "dtype": self.dtype, "excess": self.excess,
                "threshold": self.threshold, "depth": self.depth, "loose": self.loose}


@dataclasses.dataclass
class Analysis:
    """The analysis of one function: ``values`` by binding position (params
    first, by name), ``warnings`` in program order, ``unknown`` operators
    (widened), ``unanalysed`` warnings (downstream of an unknown operator)."""

    values: dict  # binding position (int) or parameter name -> Abstract or tuple
    warnings: list
    unknown: dict  # op name -> count
    unanalysed: list

    def find(self, warning: RangeWarning) -> Optional[RangeWarning]:
        return next((w for w in self.warnings if w.same_place(warning)), None)


def _struct(ty) -> tuple:
    """(dtype, static shape or None) of a tensor type; (None, None) otherwise."""
    shape, dtype = tensor_type(ty)
    return dtype, shape


class _Walker:
    def __init__(self, inputs: Mapping[str, Interval], until: Optional[int] = None):
        self.inputs, self.until = inputs, until
        self.env: dict = {}  # relax.Var -> Abstract | tuple
        self.tainted: set = set()  # vars downstream of an unknown operator
        self.result = Analysis({}, [], {}, [])
        self.position = -1  # of the binding being analysed
        self.depth = 0  # of the call being analysed: its arguments' weighted sums, and its own
        self.compares: dict = {}  # var of a comparison with a constant -> (compared Abstract, threshold)

    def value(self, expr):
        if isinstance(expr, relax.Var):
            return self.env.get(expr)
        if isinstance(expr, tvm.ir.expr.GenericConst):
            data = expr.value.numpy()
            return Abstract(Interval.of_array(data), str(data.dtype), tuple(data.shape), data)
        if isinstance(expr, tvm.ir.expr.Constant) and isinstance(getattr(expr, "value", None), (int, float)):
            v = float(expr.value)  # a PrimValue argument (clip's bounds)
            return Abstract(Interval.point(v), "float32", (), np.asarray(v))
        if isinstance(expr, relax.Tuple):
            return tuple(self.value(f) for f in expr.fields)
        return None

    def tainted_by(self, expr) -> bool:
        if isinstance(expr, relax.Var):
            return expr in self.tainted
        if isinstance(expr, relax.Tuple):
            return any(self.tainted_by(f) for f in expr.fields)
        return False

    def bind(self, var, value, tainted: bool) -> None:
        self.env[var] = value
        if tainted:
            self.tainted.add(var)
        self.result.values[self.position if self.position >= 0 else var.name] = value

    def run(self, func) -> Analysis:
        for param in func.params:
            dtype, shape = _struct(param.ty)
            interval = self.inputs.get(param.name)
            if interval is None:
                interval = dtype_limits(dtype) if dtype else EVERYTHING
            self.bind(param, Abstract(interval, dtype or "float32", shape), False)
        body = func.body
        if isinstance(body, relax.SeqExpr):
            for block in body.blocks:
                for binding in block.bindings:
                    self.position += 1
                    if self.until is not None and self.position > self.until:
                        return self.result
                    self.binding(binding)
        return self.result

    def binding(self, binding) -> None:
        var, value = binding.var, binding.value
        dtype, shape = _struct(var.ty)
        if isinstance(value, relax.Call):
            self.call(var, value, dtype, shape)
        elif isinstance(value, relax.TupleGetItem):
            whole = self.value(value.tuple_value)
            item = whole[value.index] if isinstance(whole, tuple) and value.index < len(whole) else None
            self.bind(var, item if item is not None else self.widened(dtype, shape), self.tainted_by(value.tuple_value))
        elif isinstance(value, (relax.Var, relax.Tuple, tvm.ir.expr.Constant)):
            found = self.value(value)
            self.bind(var, found if found is not None else self.widened(dtype, shape), self.tainted_by(value))
        else:  # If, a nested function, ...: unknown
            self.unknown(type(value).__name__)
            self.bind(var, self.widened(dtype, shape), True)

    def widened(self, dtype, shape):
        if dtype is None:
            return None
        return Abstract(dtype_limits(dtype), dtype, shape)

    def unknown(self, name: str) -> None:
        self.result.unknown[name] = self.result.unknown.get(name, 0) + 1

    def call(self, var, call, dtype, shape) -> None:
        op = call.op
        tainted = any(self.tainted_by(a) for a in call.args)
        if not isinstance(op, tvm.ir.Op):
            self.unknown("call of a function")
            self.bind(var, self.widened(dtype, shape), True)
            return
        name = op.name
        args = [self.value(a) for a in call.args]
        self.depth = _depth(args) + (1 if name in WEIGHTED_SUMS else 0)
        if name == "relax.call_tir":
            self.kernel(var, call, args, dtype, shape, tainted)
            return
        transfer = TRANSFER.get(name)
        try:
            if transfer is None:
                raise KeyError(name)
            result = transfer(call, args, self.out_types(var))
        except (TypeError, AttributeError, IndexError, KeyError, ValueError):
            self.unknown(name)
            self.bind(var, self.widened_like(var), True)
            return
        self.check_domain(var, name, call, args, dtype, tainted)
        self.note_compare(var, name, args)
        if name == "relax.where":
            self.check_split(var, call)
        self.bind(var, self.finish(result, var, name, call, args, tainted), tainted)

    def out_types(self, var):
        ty = var.ty
        if isinstance(ty, relax.TupleType):
            return [_struct(f)[0] for f in ty.fields]
        return [_struct(ty)[0]]

    def widened_like(self, var):
        ty = var.ty
        if isinstance(ty, relax.TupleType):
            return tuple(self.widened(*_struct(f)) for f in ty.fields)
        return self.widened(*_struct(ty))

    def finish(self, result, var, name, call, args, tainted):
        """The bound value: rounding room, the dtype's range, constants folded, overflow noted."""
        ty = var.ty
        if isinstance(result, tuple):
            fields = ty.fields if isinstance(ty, relax.TupleType) else [None] * len(result)
            return tuple(self.tensor(r, f, name, call, args, None, tainted) for r, f in zip(result, fields))
        return self.tensor(result, ty, name, call, args, var, tainted)

    def tensor(self, interval: Interval, ty, name, call, args, var, tainted) -> Abstract:
        dtype, shape = _struct(ty) if ty is not None else ("float32", None)
        dtype = dtype or "float32"
        if math.isnan(interval.lo) or math.isnan(interval.hi):
            interval = EVERYTHING
        terms = _terms(name, call, args, shape)
        eps = dtype_epsilon(dtype)
        if eps:
            interval = interval.widen(2 * eps * (terms + 2), absolute=float(np.finfo(np.float32).tiny))
        limits = dtype_limits(dtype)
        if eps and var is not None and not tainted and _finite_args(args) and \
                (interval.lo < limits.lo or interval.hi > limits.hi) and not self.has_warning(var):
            self.warn("overflow", var, name, (interval, dtype), f"the largest finite {dtype} ({limits.hi:.6g})",
                      interval.magnitude / limits.hi, limits.hi)
        if not eps:  # integers: cast and round; past the dtype's range the value wraps
            interval = interval.outward()
            interval = interval if limits.lo <= interval.lo and interval.hi <= limits.hi else limits
        elif interval.lo < limits.lo or interval.hi > limits.hi:  # past the limit: infinite
            interval = Interval(-math.inf if interval.lo < limits.lo else interval.lo,
                                math.inf if interval.hi > limits.hi else interval.hi)
        const = _fold(name, call, args, dtype, shape)
        if const is not None:
            interval = Interval.of_array(const)
        depth = 0 if const is not None or name in BOUNDED else self.depth
        return Abstract(interval, dtype, shape, const, depth)

    def has_warning(self, var) -> bool:
        return any(w.position == self.position for w in self.result.warnings + self.result.unanalysed)

    def warn(self, kind, var, op, where: tuple, limit, excess, threshold=None, tainted=False) -> None:
        """A warning at ``var`` about ``op``; ``where``: the (interval, dtype) of the value it is about."""
        interval, dtype = where
        warning = RangeWarning(kind, var.name, self.position, op, interval, limit, dtype, float(excess), threshold,
                               self.depth)
        (self.result.unanalysed if tainted else self.result.warnings).append(warning)

    def check_domain(self, var, name, call, args, dtype, tainted) -> None:
        domain = domain_of(name)
        if domain is None or domain.may_leave is None:
            return
        picked = [args[i] for i in domain.args if i < len(args)]
        if len(picked) != len(domain.args) or not all(isinstance(a, Abstract) for a in picked):
            return
        intervals = [a.interval for a in picked]
        if not all(i.finite for i in intervals):
            return  # an infinite argument comes from a warning upstream
        if domain.may_leave(picked[0].dtype, *intervals):
            where = intervals[-1]
            self.warn("domain", var, name, (where, picked[0].dtype), domain.text,
                      _domain_excess(name, where, picked[0].dtype), tainted=tainted)

    def note_compare(self, var, name, args) -> None:
        if name in _COMPARES and len(args) == 2:
            for value, other in ((args[0], args[1]), (args[1], args[0])):
                if isinstance(other, Abstract) and other.const is not None and other.const.size == 1 \
                        and isinstance(value, Abstract) and value.const is None:
                    self.compares[var] = (value, float(other.const.reshape(-1)[0]))

    def check_split(self, var, call) -> None:
        cond = call.args[0]
        if cond not in self.compares:
            return
        compared, threshold = self.compares[cond]
        x = compared.interval
        if x.finite and x.lo < threshold < x.hi:
            share = min(threshold - x.lo, x.hi - threshold) / (x.hi - x.lo)
            self.warn("piecewise", var, "relax.where", (x, compared.dtype), f"a split at {threshold:g}", share,
                      threshold, tainted=self.tainted_by(cond))

    def kernel(self, var, call, args, dtype, shape, tainted) -> None:
        """A ``call_tir`` a pass put in before legalization: FastMath's kernels by name."""
        name = call.args[0].name_hint if isinstance(call.args[0], relax.GlobalVar) else "?"
        inner = [a for a in (args[1] if isinstance(args[1], tuple) else ()) if isinstance(a, Abstract)]
        label = f"call_tir {name}"
        self.depth = _depth(inner)
        if name.startswith("fast_exp") and inner and inner[0].interval.finite:
            x = inner[0].interval
            if x.hi > FAST_EXP_CLAMP and dtype == "float32":
                self.warn("approximation", var, label, (x, dtype), f"fast_exp's clamp at {FAST_EXP_CLAMP:.6g}",
                          x.hi - FAST_EXP_CLAMP, FAST_EXP_CLAMP, tainted=tainted)
            clamped = x.clip(-FAST_EXP_CLAMP, FAST_EXP_CLAMP)
            value = Interval(math.exp(clamped.lo), math.exp(clamped.hi)).widen(1e-5)
            self.bind(var, Abstract(value, dtype or "float32", shape, None, self.depth), tainted)
            return
        bounds = {"fast_tanh": (-1.0, 1.0), "fast_erf": (-1.0, 1.0), "fast_softmax": (0.0, 1.0)}
        kind = next((k for k in bounds if name.startswith(k)), None)
        if kind is not None and inner:
            self.bind(var, Abstract(Interval(*bounds[kind]), dtype or "float32", shape, None, 0), tainted)
            return
        self.unknown(label)
        self.bind(var, self.widened(dtype, shape), True)


def _tensors(args) -> list:
    """The Abstract values among ``args``, tuples opened."""
    out = []
    for a in args:
        if isinstance(a, tuple):
            out += _tensors(a)
        elif isinstance(a, Abstract):
            out.append(a)
    return out


def _finite_args(args) -> bool:
    return all(a.interval.finite for a in _tensors(args))


def _depth(args) -> int:
    return max((a.depth for a in _tensors(args)), default=0)


def _terms(name: str, call, args, shape) -> int:
    """How many roundings one element of the result can collect (a sum's length)."""
    first = args[0] if args and isinstance(args[0], Abstract) else None
    if name == "relax.matmul" and first is not None and first.shape:
        return int(first.shape[-1])
    if name.startswith("relax.nn.conv") and len(args) > 1 and isinstance(args[1], Abstract) and args[1].shape:
        return conv_terms(call, args[1].shape)
    if first is not None and first.size and shape is not None:
        out = int(np.prod(shape, dtype=np.int64)) or 1
        return max(1, first.size // out)
    return 1


def _domain_excess(name: str, x: Interval, dtype: str) -> float:
    if name in ("relax.exp", "relax.exp2"):
        return x.hi - exp_limit(dtype)
    return max(0.0, -x.lo) + (1.0 if x.contains(0.0) else 0.0)


def _fold(name, call, args, dtype, shape) -> Optional[np.ndarray]:
    """The values of a constant moved through a cast, reshape or transpose (weights a pass cast to float16)."""
    if name not in _CONST_FOLDED or not args or not isinstance(args[0], Abstract) or args[0].const is None:
        return None
    data = args[0].const
    try:
        if name == "relax.astype":
            return data.astype(np.dtype(dtype)) if dtype != "bfloat16" else None
        if name == "relax.permute_dims":
            axes = attr(call, "axes")
            return np.transpose(data, None if axes is None else [int(a) for a in axes])
        if shape is not None:
            return data.reshape(shape)
    except (TypeError, ValueError):
        return None
    return None


def analyse(func, inputs: Mapping[str, Interval], until: Optional[int] = None) -> Analysis:
    """The interval analysis of the Relax function ``func`` with its parameters in ``inputs``
    (by name; a parameter not named there takes its dtype's whole range), up to the
    binding at position ``until`` (default: all of them)."""
    return _Walker(inputs, until).run(func)
