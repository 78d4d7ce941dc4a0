"""Valid domains of numerically vulnerable Relax operators.

``DOMAINS`` maps a Relax operator name (``relax.log``) to a ``Domain``: which
arguments are constrained and a predicate that marks, elementwise, where the
arguments are valid (the result is finite and defined). RANUM and NNSmith keep
inputs in such domains when they search or generate inputs.

``find_invalid_ops(mod, inputs)`` explains a NaN/Inf reference: it builds an
instrumented version of the model that also returns the arguments of every
vulnerable call in ``main``, runs it on ``inputs`` and names the calls whose
arguments left their domain.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np

Predicate = Callable[..., np.ndarray]


def exp_limit(dtype) -> float:
    """Largest x with a finite exp(x) in ``dtype`` (88.72 for float32)."""
    try:
        info = np.finfo(np.dtype(str(dtype)))
    except TypeError:
        info = np.finfo(np.float32)
    return float(np.log(info.max))


def _pos(x):
    return x > 0


def _nonneg(x):
    return x >= 0


def _nonzero_divisor(_, y):
    return y != 0


def _nonzero(x):
    return x != 0


def _unit(x):
    return np.abs(x) <= 1


def _open_unit(x):
    return np.abs(x) < 1


def _ge_one(x):
    return x >= 1


def _gt_minus_one(x):
    return x > -1


def _exp_ok(x):
    return x <= exp_limit(x.dtype)


def _exp2_ok(x):
    return x <= exp_limit(x.dtype) / np.log(2.0)


def _power_ok(x, y):
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    integer = np.floor(y) == y
    negative_base = (x < 0) & ~integer
    zero_to_negative = (x == 0) & (y < 0)
    with np.errstate(all="ignore"):
        powered = np.power(np.abs(x).astype(np.float64), y.astype(np.float64))
        overflow = ~np.isfinite(powered.astype(x.dtype if x.dtype.kind == "f" else np.float64))
    return ~(negative_base | zero_to_negative | (overflow & np.isfinite(x) & np.isfinite(y)))


@dataclasses.dataclass(frozen=True)
class Domain:
    """The valid domain of one operator."""

    op: str  # Relax operator name, e.g. "relax.log"
    args: tuple  # indices of the call arguments the predicate takes
    valid: Predicate  # elementwise: True where the arguments are in the domain
    text: str  # the domain in words, e.g. "x > 0"
    failure: str  # what happens outside: "nan", "inf", "nan or inf"
    valid_example: tuple  # argument values inside the domain
    invalid_example: tuple  # argument values outside it
    # the same rule over value intervals: (dtype, *argument Intervals) -> True when
    # some values in them are outside the domain (the static range check's rule)
    may_leave: Optional[Callable] = None

    @property
    def short_name(self) -> str:
        return self.op[len("relax."):] if self.op.startswith("relax.") else self.op

    def check(self, *args) -> np.ndarray:
        """Elementwise validity of the call's constrained arguments (broadcast)."""
        arrays = [np.asarray(a) for a in args]
        with np.errstate(all="ignore"):
            mask = np.asarray(self.valid(*arrays))
        # a NaN argument is not this op's fault: count it as valid here
        nan_in = np.zeros(mask.shape, dtype=bool)
        for a in arrays:
            if a.dtype.kind == "f":
                nan_in |= np.broadcast_to(np.isnan(a), mask.shape)
        return mask | nan_in

    def to_json(self) -> dict:
        return {"op": self.op, "args": list(self.args), "domain": self.text, "failure": self.failure}


def _d(op, args, valid, text, failure, ok, bad, may_leave=None) -> Domain:
    return Domain(op, args, valid, text, failure, ok, bad, may_leave)


def _below(bound: float, strict: bool = False):
    """Intervals reaching below ``bound`` (``strict``: reaching it)."""
    return lambda dtype, x: x.lo < bound or (strict and x.lo <= bound)


def _holds_zero(dtype, x, y=None):
    y = x if y is None else y
    return y.lo <= 0 <= y.hi


def _outside_unit(dtype, x):
    return x.lo < -1 or x.hi > 1


def _reaches_unit(dtype, x):
    return x.lo <= -1 or x.hi >= 1


def _exp_above(scale: float):
    return lambda dtype, x: x.hi > exp_limit(dtype) / scale


def _power_may_leave(dtype, x, y):
    integer = y.lo == y.hi and float(y.lo).is_integer()
    return (x.lo < 0 and not integer) or (x.lo <= 0 <= x.hi and y.lo < 0)


_TABLE = [
    _d("relax.log", (0,), _pos, "x > 0", "nan for x < 0, -inf at 0", (1.0,), (0.0,), _below(0.0, strict=True)),
    _d("relax.log2", (0,), _pos, "x > 0", "nan for x < 0, -inf at 0", (2.0,), (-2.0,), _below(0.0, strict=True)),
    _d("relax.log10", (0,), _pos, "x > 0", "nan for x < 0, -inf at 0", (10.0,), (-10.0,), _below(0.0, strict=True)),
    _d("relax.log1p", (0,), _gt_minus_one, "x > -1", "nan for x < -1, -inf at -1", (0.5,), (-2.0,),
       _below(-1.0, strict=True)),
    _d("relax.sqrt", (0,), _nonneg, "x >= 0", "nan", (4.0,), (-4.0,), _below(0.0)),
    _d("relax.rsqrt", (0,), _pos, "x > 0", "nan for x < 0, inf at 0", (4.0,), (0.0,), _below(0.0, strict=True)),
    _d("relax.divide", (0, 1), _nonzero_divisor, "divisor != 0", "inf or nan", (1.0, 2.0), (1.0, 0.0), _holds_zero),
    _d("relax.floor_divide", (0, 1), _nonzero_divisor, "divisor != 0", "inf or nan (integers: undefined)",
       (3.0, 2.0), (3.0, 0.0), _holds_zero),
    _d("relax.floor_mod", (0, 1), _nonzero_divisor, "divisor != 0", "nan (integers: undefined)",
       (3.0, 2.0), (3.0, 0.0), _holds_zero),
    _d("relax.mod", (0, 1), _nonzero_divisor, "divisor != 0", "nan (integers: undefined)",
       (3.0, 2.0), (3.0, 0.0), _holds_zero),
    _d("relax.reciprocal", (0,), _nonzero, "x != 0", "inf", (2.0,), (0.0,), _holds_zero),
    _d(
        "relax.power",
        (0, 1),
        _power_ok,
        "base >= 0 or integer exponent; base != 0 for a negative exponent; no overflow",
        "nan for a negative base with a non-integer exponent, inf for 0**negative or overflow",
        (2.0, 0.5),
        (-2.0, 0.5),
        _power_may_leave,
    ),
    _d("relax.asin", (0,), _unit, "|x| <= 1", "nan", (0.5,), (1.5,), _outside_unit),
    _d("relax.acos", (0,), _unit, "|x| <= 1", "nan", (0.5,), (-1.5,), _outside_unit),
    _d("relax.acosh", (0,), _ge_one, "x >= 1", "nan", (2.0,), (0.5,), _below(1.0)),
    _d("relax.atanh", (0,), _open_unit, "|x| < 1", "nan outside, inf at +-1", (0.5,), (1.0,), _reaches_unit),
    _d("relax.exp", (0,), _exp_ok, "x <= log(max of the dtype) (88.72 for float32)", "inf", (1.0,), (1000.0,),
       _exp_above(1.0)),
    _d("relax.exp2", (0,), _exp2_ok, "x <= log2(max of the dtype) (128 for float32)", "inf", (1.0,), (2000.0,),
       _exp_above(math.log(2.0))),
]

DOMAINS: dict = {d.op: d for d in _TABLE}


def domain_of(op_name: str) -> Optional[Domain]:
    """The domain of a Relax op (``relax.log`` or ``log``); None if it is not vulnerable."""
    if op_name in DOMAINS:
        return DOMAINS[op_name]
    return DOMAINS.get("relax." + op_name)


def is_vulnerable(op_name: str) -> bool:
    return domain_of(op_name) is not None


# -- explaining a NaN/Inf reference -----------------------------------------
@dataclasses.dataclass
class InvalidCall:
    """A vulnerable call whose arguments left the domain on some elements."""

    op: str  # short name: "log"
    binding: str  # the var the call is bound to in main
    invalid: int  # elements out of the domain
    total: int
    example: list  # argument values of the first invalid element
    domain: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data) -> "InvalidCall":
        return cls(**data)


def _vulnerable_calls(func) -> list:
    """(binding var, call, domain) for every vulnerable call bound in ``func``'s body."""
    from tvm import relax
    import tvm

    found: list = []
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return found
    for block in body.blocks:
        for binding in block.bindings:
            value = getattr(binding, "value", None)
            if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
                domain = domain_of(value.op.name)
                if domain is not None:
                    found.append((binding.var, value, domain))
    return found


def _instrument(mod):
    """``mod`` with main returning (its output, the arguments of every vulnerable call)."""
    import tvm
    from tvm import relax

    mod = relax.transform.ToNonDataflow()(mod)
    main = mod["main"]
    calls = _vulnerable_calls(main)
    extra = []
    for _, call, domain in calls:
        for i in domain.args:
            extra.append(call.args[i])
    body = main.body
    new_body = relax.SeqExpr(body.blocks, relax.Tuple([body.body] + extra))
    new_body = relax.BlockBuilder(mod).normalize(new_body)
    new_main = relax.Function(main.params, new_body, None, main.is_pure, main.attrs)
    out = mod.clone() if hasattr(mod, "clone") else tvm.IRModule(dict(mod.functions))
    out.update_func(out.get_global_var("main"), new_main)
    return out, calls


def _to_numpy(value):
    import tvm

    if isinstance(value, tvm.runtime.Tensor) or (hasattr(value, "numpy") and not isinstance(value, (list, tuple))):
        return np.asarray(value.numpy())
    return value


def check_domains(mod, inputs: Union[Mapping[str, np.ndarray], Sequence[np.ndarray]], target: str = "llvm") -> list:
    """Every vulnerable call of ``main`` whose arguments leave the domain on ``inputs``.

    ``mod`` is the model before legalization (as loaded). ``inputs`` maps main's
    parameter names to arrays, or lists them in order. Returns ``InvalidCall``s
    in program order.
    """
    import tvm
    from tvm import relax

    from ...ir.pipeline import target_device
    from ...ir.targets import target_of

    instrumented, calls = _instrument(mod)
    if not calls:
        return []
    target = target_of(target)
    ex = tvm.compile(instrumented, target)
    dev = target_device(target)
    vm = relax.VirtualMachine(ex, dev)
    params = mod["main"].params
    if isinstance(inputs, Mapping):
        arrays = [inputs[p.name] for p in params]
    else:
        arrays = list(inputs)
    from ...build.compile import device_array

    args = [tvm.runtime.tensor(device_array(a), dev) for a in arrays]
    result = vm["main"](*args)
    values = [_to_numpy(result[i]) for i in range(1, len(result))]
    found = []
    pos = 0
    for var, call, domain in calls:
        arg_values = [np.asarray(v) for v in values[pos: pos + len(domain.args)]]
        pos += len(domain.args)
        mask = domain.check(*arg_values)
        bad = ~mask
        n_bad = int(np.count_nonzero(bad))
        if n_bad:
            flat = int(np.flatnonzero(bad.ravel())[0])
            example = [float(np.broadcast_to(v, mask.shape).ravel()[flat]) for v in arg_values]
            found.append(InvalidCall(domain.short_name, var.name, n_bad, int(mask.size), example, domain.text))
    return found


def find_invalid_ops(mod, inputs: Union[Mapping[str, np.ndarray], Sequence[np.ndarray]], target: str = "llvm") -> list:
    """``(op name, binding name)`` of every vulnerable call of ``main`` given out-of-domain arguments."""
    return [(c.op, c.binding) for c in check_domains(mod, inputs, target)]


__all__ = ["DOMAINS", "Domain", "InvalidCall", "check_domains", "domain_of", "find_invalid_ops", "is_vulnerable"]
