"""What a Relax operator means, computed without TVM.

The truth of two components (conversion, legalization) is each Relax operator's
meaning, evaluated by an implementation that shares no code with TVM: numpy
and PyTorch (``torch.nn.functional``), in float64 or in any float dtype they are
given. An operator's meaning is numpy's (or ONNX's and PyTorch's, which TVM's
operators follow: TOPI's own tests check its kernels against numpy references,
tests/python/topi/), read off its documented attributes (``tvm/relax/op``).

``meaning_of(call)`` gives an ``OpMeaning`` for a Relax ``Call`` whose operator
has one here, else None: an operator nobody wrote a meaning for is not
judged (``unjudged``), never guessed. ``OpMeaning.evaluate(values)`` computes
the call on argument values (numpy arrays for tensors, their values for
shapes and constants); the arrays' dtypes say the precision.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Literal, Optional, Sequence, overload

import numpy as np

# operator name -> (function(values, attrs) -> array or tuple of arrays)
MEANINGS: dict = {}
# operators whose result jumps where an argument crosses a threshold: exact on the same inputs
EXACT = frozenset({
    "relax.floor", "relax.ceil", "relax.round", "relax.trunc", "relax.sign", "relax.equal", "relax.not_equal",
    "relax.less", "relax.less_equal", "relax.greater", "relax.greater_equal", "relax.argmax", "relax.argmin",
    "relax.isnan", "relax.isinf", "relax.isfinite", "relax.logical_not", "relax.logical_and", "relax.logical_or",
    "relax.logical_xor", "relax.floor_mod", "relax.floor_divide", "relax.max", "relax.min", "relax.maximum",
    "relax.minimum", "relax.abs", "relax.negative", "relax.nn.relu", "relax.clip", "relax.where",
    "relax.nn.max_pool1d", "relax.nn.max_pool2d", "relax.nn.max_pool3d", "relax.topk", "relax.sort",
    "relax.argsort",
})


class Attrs:
    """A Relax call's attributes as Python values (``attrs.axis``: None where the op has none)."""

    def __init__(self, attrs):
        self._attrs = attrs

    def __getattr__(self, name: str):
        raw = getattr(self._attrs, name, None) if self._attrs is not None else None
        return python_value(raw)


def python_value(raw):
    """A TVM attribute or argument as plain Python: ints, floats, strings, lists."""
    if raw is None or isinstance(raw, (bool, int, float, str)):
        return raw
    if hasattr(raw, "numpy") and not hasattr(raw, "value"):
        return raw.numpy()
    for field in ("value",):
        if hasattr(raw, field) and not callable(getattr(raw, field)):
            inner = getattr(raw, field)
            return inner.numpy() if hasattr(inner, "numpy") else python_value(inner)
    if hasattr(raw, "__len__") and not isinstance(raw, (str, bytes)):
        return [python_value(item) for item in raw]
    text = str(raw)
    return text.strip('"')


def meaning(*names: str):
    """Register a meaning for the operators ``names``."""
    def register(function: Callable) -> Callable:
        for name in names:
            MEANINGS[name] = function
        return function
    return register


@dataclasses.dataclass(frozen=True)
class OpMeaning:
    """One Relax call's meaning: its operator and attributes, bound."""

    op: str
    function: Callable
    attrs: Any

    @property
    def exact(self) -> bool:
        """A result that is exact on the same inputs (no rounding in between): no tolerance for it."""
        return self.op in EXACT

    def evaluate(self, values: Sequence) -> Any:
        """The call on ``values`` (one per argument), in the precision the arrays carry."""
        with np.errstate(all="ignore"):
            return self.function(list(values), Attrs(self.attrs))


def meaning_of(call) -> Optional[OpMeaning]:
    """The meaning of a Relax ``Call`` (None: no independent implementation of its operator)."""
    op = getattr(getattr(call, "op", None), "name", None)
    function = MEANINGS.get(op)
    return None if function is None or op is None else OpMeaning(op, function, call.attrs)


# -- elementwise ---------------------------------------------------------------------------------

def _unary(fn):
    return lambda v, a: fn(np.asarray(v[0]))


def _binary(fn):
    return lambda v, a: fn(np.asarray(v[0]), np.asarray(v[1]))


def _erf(x):
    import torch

    return _torch_call(torch.special.erf, x)


for _name, _fn in {
    "abs": np.abs, "negative": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "sign": np.sign,
    "square": np.square, "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "logical_not": np.logical_not, "bitwise_not": np.invert, "log1p": np.log1p, "exp2": np.exp2,
    "round": np.round,  # half to even, as ONNX Round and TVM's nearbyint
}.items():
    MEANINGS[f"relax.{_name}"] = _unary(_fn)
MEANINGS["relax.erf"] = _unary(_erf)
MEANINGS["relax.rsqrt"] = _unary(lambda x: 1.0 / np.sqrt(x))
MEANINGS["relax.sigmoid"] = _unary(lambda x: _stable_sigmoid(x))
MEANINGS["relax.nn.relu"] = _unary(lambda x: np.maximum(x, np.zeros((), x.dtype)))
MEANINGS["relax.nn.relu6"] = _unary(lambda x: np.clip(x, 0, 6).astype(x.dtype))
MEANINGS["relax.nn.silu"] = _unary(lambda x: x * _stable_sigmoid(x))
MEANINGS["relax.nn.gelu"] = _unary(lambda x: (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(x.dtype))
MEANINGS["relax.nn.gelu_tanh"] = _unary(
    lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))))
MEANINGS["relax.nn.selu"] = _unary(
    lambda x: 1.0507009873554804934193349852946 * np.where(
        x > 0, x, 1.6732632423543772848170429916717 * np.expm1(np.minimum(x, 0))))

for _name, _fn in {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "floor_divide": np.floor_divide,
    "floor_mod": np.mod, "mod": np.fmod, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "atan2": np.arctan2,
}.items():
    MEANINGS[f"relax.{_name}"] = _binary(_fn)


def _stable_sigmoid(x):
    x = np.asarray(x)
    one = np.ones((), x.dtype)
    return np.where(x >= 0, one / (one + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (one + np.exp(-np.abs(x))))


@meaning("relax.nn.leakyrelu")
def _leakyrelu(v, a):
    x = np.asarray(v[0])
    return np.where(x >= 0, x, x * np.asarray(a.alpha, x.dtype))


@meaning("relax.nn.softplus")
def _softplus(v, a):
    x = np.asarray(v[0])
    beta, threshold = a.beta, a.threshold
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


@meaning("relax.nn.prelu")
def _prelu(v, a):
    x, alpha = np.asarray(v[0]), np.asarray(v[1])
    axis = a.axis % x.ndim
    shape = [1] * x.ndim
    shape[axis] = -1
    return np.where(x >= 0, x, x * alpha.reshape(shape))


@meaning("relax.clip")
def _clip(v, a):
    x = np.asarray(v[0])
    return np.clip(x, v[1], v[2]).astype(x.dtype)


@meaning("relax.where")
def _where(v, a):
    return np.where(np.asarray(v[0]).astype(bool), v[1], v[2])


@meaning("relax.astype")
def _astype(v, a):
    x = np.asarray(v[0])
    dtype = np.dtype(a.dtype) if a.dtype != "bfloat16" else None
    if dtype is None:
        return x
    if x.dtype.kind == "f" and dtype.kind in "iu":
        return np.trunc(x).astype(dtype)
    return x.astype(dtype)


# -- reductions ----------------------------------------------------------------------------------

@overload
def _axes(axis: None, ndim: int) -> None: ...


@overload
def _axes(axis: object, ndim: int) -> tuple: ...


def _axes(axis, ndim: int) -> Optional[tuple]:
    if axis is None:
        return None
    axis = [axis] if isinstance(axis, int) else list(axis)
    return tuple(int(x) % ndim for x in axis)


def _reduction(fn):
    def reduce(v, a):
        x = np.asarray(v[0])
        return np.asarray(fn(x, axis=_axes(a.axis, x.ndim), keepdims=bool(a.keepdims)))
    return reduce


for _name, _fn in {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
                   "variance": np.var, "std": np.std}.items():
    MEANINGS[f"relax.{_name}"] = _reduction(_fn)


def _argmax(kind: str):
    def reduce(v, a):
        x = np.asarray(v[0])
        fn = np.argmax if kind == "max" else np.argmin
        if a.axis is None:
            return np.asarray(fn(x)).reshape([1] * x.ndim if a.keepdims else [])
        return np.asarray(fn(x, axis=int(a.axis) % x.ndim, keepdims=bool(a.keepdims)))
    return reduce


MEANINGS["relax.argmax"], MEANINGS["relax.argmin"] = _argmax("max"), _argmax("min")


def _cumulative(kind: str):
    def scan(v, a):
        x = np.asarray(v[0])
        if a.dtype:
            x = x.astype(np.dtype(a.dtype)) if x.dtype.kind != "f" else x
        axis = None if a.axis is None else int(a.axis) % x.ndim
        flat = x.reshape(-1) if axis is None else x
        out = np.cumsum(flat, axis=axis or 0) if kind == "sum" else np.cumprod(flat, axis=axis or 0)
        if a.exclusive:
            out = out - flat if kind == "sum" else out / flat
        return out
    return scan


MEANINGS["relax.cumsum"], MEANINGS["relax.cumprod"] = _cumulative("sum"), _cumulative("prod")


# -- shapes and indexing -------------------------------------------------------------------------

@meaning("relax.reshape")
def _reshape(v, a):
    return np.reshape(v[0], [int(d) for d in v[1]])


@meaning("relax.permute_dims")
def _permute(v, a):
    x = np.asarray(v[0])
    return np.transpose(x, None if a.axes is None else [int(d) for d in a.axes])


@meaning("relax.squeeze")
def _squeeze(v, a):
    x = np.asarray(v[0])
    return np.squeeze(x, axis=_axes(a.axis, x.ndim))


@meaning("relax.expand_dims")
def _expand_dims(v, a):
    x = np.asarray(v[0])
    out_ndim = x.ndim + len(a.axis)
    return np.expand_dims(x, tuple(int(d) % out_ndim for d in a.axis))


@meaning("relax.flatten")
def _flatten(v, a):
    return np.reshape(v[0], -1)


@meaning("relax.broadcast_to")
def _broadcast_to(v, a):
    return np.broadcast_to(v[0], [int(d) for d in v[1]]).copy()


@meaning("relax.concat")
def _concat(v, a):
    return np.concatenate([np.asarray(x) for x in v[0]], axis=int(a.axis or 0))


@meaning("relax.stack")
def _stack(v, a):
    return np.stack([np.asarray(x) for x in v[0]], axis=int(a.axis or 0))


@meaning("relax.split")
def _split(v, a):
    x = np.asarray(v[0])
    sections = a.indices_or_sections
    sections = [int(s) for s in sections] if isinstance(sections, list) else int(sections)
    return tuple(np.split(x, sections, axis=int(a.axis) % x.ndim))


@meaning("relax.strided_slice")
def _strided_slice(v, a):
    x = np.asarray(v[0])
    axes, begin, end = list(v[1]), list(v[2]), list(v[3])
    strides = list(v[4]) if len(v) > 4 and v[4] is not None else [1] * len(axes)
    index = [slice(None)] * x.ndim
    for axis, b, e, s in zip(axes, begin, end, strides):
        index[int(axis) % x.ndim] = slice(int(b), int(e), int(s))
    return x[tuple(index)]


@meaning("relax.take")
def _take(v, a):
    x, indices = np.asarray(v[0]), np.asarray(v[1]).astype(np.int64)
    axis = 0 if a.axis is None else int(a.axis) % x.ndim
    size = x.shape[axis]
    mode = a.mode or "fast"
    if mode == "wrap":
        indices = np.mod(indices, size)
    elif mode == "clip":
        indices = np.clip(indices, 0, size - 1)
    elif np.any((indices < -size) | (indices >= size)):
        raise ValueError("take: an index out of bounds has no meaning in mode 'fast'")
    return np.take(x, indices, axis=axis)


@meaning("relax.gather_elements")
def _gather_elements(v, a):
    x, indices = np.asarray(v[0]), np.asarray(v[1]).astype(np.int64)
    axis = int(a.axis or 0) % x.ndim
    return np.take_along_axis(x, np.where(indices < 0, indices + x.shape[axis], indices), axis=axis)


@meaning("relax.flip")
def _flip(v, a):
    return np.flip(v[0], axis=int(a.axis))


@meaning("relax.tile")
def _tile(v, a):
    return np.tile(v[0], [int(r) for r in a.repeats])


@meaning("relax.repeat")
def _repeat(v, a):
    return np.repeat(v[0], int(a.repeats), axis=None if a.axis is None else int(a.axis))


def _trilu_of(fn):
    return lambda v, a: fn(np.asarray(v[0]), k=int(v[1]) if len(v) > 1 else 0)


MEANINGS["relax.tril"], MEANINGS["relax.triu"] = _trilu_of(np.tril), _trilu_of(np.triu)


@meaning("relax.full")
def _full(v, a):
    return np.full([int(d) for d in v[0]], np.asarray(v[1]).item(), dtype=np.dtype(a.dtype))


@meaning("relax.full_like")
def _full_like(v, a):
    x = np.asarray(v[0])
    return np.full(x.shape, np.asarray(v[1]).item(), dtype=np.dtype(a.dtype) if a.dtype else x.dtype)


MEANINGS["relax.zeros_like"] = lambda v, a: np.zeros_like(np.asarray(v[0]),
                                                          dtype=np.dtype(a.dtype) if a.dtype else None)
MEANINGS["relax.ones_like"] = lambda v, a: np.ones_like(np.asarray(v[0]), dtype=np.dtype(a.dtype) if a.dtype else None)


@meaning("relax.one_hot")
def _one_hot(v, a):
    indices = np.asarray(v[0]).astype(np.int64)
    on, off = np.asarray(v[1]).item(), np.asarray(v[2]).item()
    depth = int(a.depth)
    axis = -1 if a.axis is None else int(a.axis)
    hot = np.eye(depth)[np.mod(indices, depth)] * (on - off) + off
    hot = np.where(((indices >= -depth) & (indices < depth))[..., None], hot, off)
    return np.moveaxis(hot, -1, axis) if axis != -1 else hot


@meaning("relax.sort")
def _sort(v, a):
    x = np.asarray(v[0])
    out = np.sort(x, axis=int(a.axis) % x.ndim)
    return np.flip(out, axis=int(a.axis) % x.ndim) if a.descending else out


@meaning("relax.topk")
def _topk(v, a):
    """The k largest (or smallest) values along the axis, in order, and their indices (at a tie, the
    first; a tie's indices may differ between correct implementations: the values are what is compared)."""
    x = np.asarray(v[0])
    axis = int(a.axis) % x.ndim
    k = int(a.k) if a.k and int(a.k) >= 1 else x.shape[axis]
    order = np.argsort(-x if a.largest else x, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, indices, axis=axis)
    indices = indices.astype(np.dtype(a.dtype or "int32"))
    return {"values": values, "indices": indices}.get(a.ret_type, (values, indices))


# -- linear algebra and networks -----------------------------------------------------------------

@meaning("relax.matmul")
def _matmul(v, a):
    x, y = np.asarray(v[0]), np.asarray(v[1])
    dtype = np.dtype(a.out_dtype) if a.out_dtype not in (None, "", "void") else None
    if dtype is not None and x.dtype.kind == "f" and dtype.itemsize > x.dtype.itemsize:
        x, y = x.astype(dtype), y.astype(dtype)
    return np.matmul(x, y)


@meaning("relax.einsum")
def _einsum(v, a):
    return np.einsum(a.subscripts, *[np.asarray(x) for x in v[0]])


def _torch_call(fn, *arrays, **kwargs):
    """``fn`` on torch tensors made from ``arrays`` (float16 computed in float32 where torch has no
    CPU kernel for it), the result back as numpy in the first array's dtype."""
    import torch

    first = np.asarray(arrays[0])
    tensors = [torch.from_numpy(np.ascontiguousarray(np.asarray(x))) for x in arrays]
    with torch.no_grad():
        try:
            out = fn(*tensors, **kwargs)
        except RuntimeError:  # no kernel in this dtype on the CPU: the next wider float computes it
            out = fn(*[t.float() if t.is_floating_point() else t for t in tensors], **kwargs)
    return out.numpy().astype(first.dtype) if first.dtype.kind == "f" else out.numpy()


def _pair(value, n: int) -> list:
    value = [value] if isinstance(value, int) else list(value)
    return value * n if len(value) == 1 else value


def _padding(padding, n: int) -> tuple:
    """Relax's padding (one, n or 2n numbers: before then after) as (before, after) per axis."""
    padding = _pair(padding, n)
    if len(padding) == n:
        return list(padding), list(padding)
    return list(padding[:n]), list(padding[n:])


def _conv(n: int):
    def conv(v, a):
        import torch.nn.functional as F

        x, w = np.asarray(v[0]), np.asarray(v[1])
        layout = a.data_layout or "NC" + "DHW"[3 - n:]
        if layout != "NC" + "DHW"[3 - n:] or (a.kernel_layout or "OI" + "DHW"[3 - n:]) != "OI" + "DHW"[3 - n:]:
            raise NotImplementedError(f"conv layout {layout}/{a.kernel_layout}")
        before, after = _padding(a.padding, n)
        x = np.pad(x, [(0, 0), (0, 0)] + list(zip(before, after)))  # Relax pads each side on its own
        fn = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
        return _torch_call(lambda t, k: fn(t, k, stride=_pair(a.strides, n), dilation=_pair(a.dilation, n),
                                           groups=int(a.groups)), x, w)
    return conv


MEANINGS["relax.nn.conv1d"], MEANINGS["relax.nn.conv2d"], MEANINGS["relax.nn.conv3d"] = _conv(1), _conv(2), _conv(3)


def _conv_transpose(n: int):
    def conv(v, a):
        import torch.nn.functional as F

        x, w = np.asarray(v[0]), np.asarray(v[1])
        if (a.data_layout or "NC" + "DHW"[3 - n:]) != "NC" + "DHW"[3 - n:]:
            raise NotImplementedError("conv_transpose layout")
        before, after = _padding(a.padding, n)
        if before != after:
            raise NotImplementedError("asymmetric conv_transpose padding")
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return _torch_call(lambda t, k: fn(t, k, stride=_pair(a.strides, n), padding=before,
                                           output_padding=_pair(a.output_padding, n), groups=int(a.groups),
                                           dilation=_pair(a.dilation, n)), x, w)
    return conv


MEANINGS["relax.nn.conv1d_transpose"] = _conv_transpose(1)
MEANINGS["relax.nn.conv2d_transpose"] = _conv_transpose(2)


def _pool(n: int, kind: str):
    def pool(v, a):
        import torch.nn.functional as F

        x = np.asarray(v[0])
        if (a.layout or "NC" + "DHW"[3 - n:]) != "NC" + "DHW"[3 - n:]:
            raise NotImplementedError("pool layout")
        before, after = _padding(a.padding, n)
        if kind == "max":
            lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            x = np.pad(x, [(0, 0), (0, 0)] + list(zip(before, after)), constant_values=lowest)
            fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
            return _torch_call(lambda t: fn(t, _pair(a.pool_size, n), stride=_pair(a.strides, n),
                                            dilation=_pair(a.dilation, n), ceil_mode=bool(a.ceil_mode)), x)
        return _avg_pool(x, a, n, before, after)
    return pool


def _avg_pool(x, a, n: int, before: list, after: list):
    """Average pooling in numpy: each window's sum over its count (padding counted with
    count_include_pad, else only the elements inside the input)."""
    if bool(a.ceil_mode) or any(d != 1 for d in _pair(a.dilation, n)):
        raise NotImplementedError("avg_pool with ceil_mode or dilation")
    size, stride = _pair(a.pool_size, n), _pair(a.strides, n)
    padded = np.pad(x, [(0, 0), (0, 0)] + list(zip(before, after)))
    inside = np.pad(np.ones(x.shape[2:]), list(zip(before, after)))
    out_shape = [(padded.shape[2 + i] - size[i]) // stride[i] + 1 for i in range(n)]
    out = np.zeros(x.shape[:2] + tuple(out_shape), dtype=x.dtype)
    for position in np.ndindex(*out_shape):
        window = tuple(slice(p * s, p * s + k) for p, s, k in zip(position, stride, size))
        total = padded[(slice(None), slice(None)) + window].sum(axis=tuple(range(2, 2 + n)))
        count = np.prod(size) if a.count_include_pad else inside[window].sum()
        out[(slice(None), slice(None)) + position] = total / count
    return out


for _n in (1, 2, 3):
    MEANINGS[f"relax.nn.max_pool{_n}d"] = _pool(_n, "max")
    MEANINGS[f"relax.nn.avg_pool{_n}d"] = _pool(_n, "avg")


@meaning("relax.nn.adaptive_avg_pool2d")
def _adaptive_avg_pool2d(v, a):
    import torch.nn.functional as F

    x = np.asarray(v[0])
    if (a.layout or "NCHW") != "NCHW":
        raise NotImplementedError("adaptive pool layout")
    size = a.output_size or list(x.shape[2:])
    # torch's stub wants a tuple; the function takes the list of sizes as well
    return _torch_call(lambda t: F.adaptive_avg_pool2d(t, [int(s) for s in _pair(size, 2)]), x)  # type: ignore[arg-type]


@meaning("relax.nn.softmax")
def _softmax(v, a):
    x = np.asarray(v[0])
    shifted = x - np.max(x, axis=int(a.axis), keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=int(a.axis), keepdims=True)


@meaning("relax.nn.log_softmax")
def _log_softmax(v, a):
    x = np.asarray(v[0])
    shifted = x - np.max(x, axis=int(a.axis), keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=int(a.axis), keepdims=True))


def _normalize(x, axes: tuple, epsilon: float):
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)  # two passes: no cancellation
    return (x - mean) / np.sqrt(var + np.asarray(epsilon, x.dtype))


def _affine(y, gamma, beta, axes: tuple, ndim: int, center: bool = True, scale: bool = True):
    shape = [1] * ndim
    for axis, size in zip(axes, np.shape(gamma) if gamma is not None else ()):
        shape[axis] = size
    if scale and gamma is not None:
        y = y * np.reshape(gamma, [s for s in shape] if np.ndim(gamma) == len(axes) else np.shape(gamma))
    if center and beta is not None:
        y = y + np.reshape(beta, [s for s in shape] if np.ndim(beta) == len(axes) else np.shape(beta))
    return y


@meaning("relax.nn.layer_norm")
def _layer_norm(v, a):
    x = np.asarray(v[0])
    axes = _axes(a.axes, x.ndim)
    return _affine(_normalize(x, axes, a.epsilon), v[1], v[2], axes, x.ndim, bool(a.center), bool(a.scale))


@meaning("relax.nn.rms_norm")
def _rms_norm(v, a):
    x = np.asarray(v[0])
    axes = _axes(a.axes, x.ndim)
    y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + np.asarray(a.epsilon, x.dtype))
    return _affine(y, v[1], None, axes, x.ndim)


def _per_channel(y, gamma, beta, axis: int, attrs):
    """``y`` scaled by ``gamma`` and shifted by ``beta``, one value per channel along ``axis``
    (where the operator's ``scale`` / ``center`` ask for them)."""
    shape = [1] * y.ndim
    shape[axis] = y.shape[axis]
    if attrs.scale:
        y = y * np.reshape(gamma, shape)
    if attrs.center:
        y = y + np.reshape(beta, shape)
    return y


@meaning("relax.nn.group_norm")
def _group_norm(v, a):
    x = np.asarray(v[0])
    groups, axis = int(a.num_groups), int(a.channel_axis) % x.ndim
    if axis != 1:
        raise NotImplementedError("group_norm over a channel axis other than 1")
    grouped = x.reshape((x.shape[0], groups, -1))
    return _per_channel(_normalize(grouped, (2,), a.epsilon).reshape(x.shape), v[1], v[2], 1, a)


@meaning("relax.nn.instance_norm")
def _instance_norm(v, a):
    x = np.asarray(v[0])
    axes = tuple(int(d) % x.ndim for d in a.axes)
    return _per_channel(_normalize(x, axes, a.epsilon), v[1], v[2], int(a.channel_axis) % x.ndim, a)


@meaning("relax.nn.batch_norm")
def _batch_norm(v, a):
    x, gamma, beta, mean, var = (np.asarray(t) for t in v[:5])
    axis = int(a.axis) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    if a.training:
        axes = tuple(d for d in range(x.ndim) if d != axis)
        mean, var = np.mean(x, axis=axes), np.var(x, axis=axes)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + np.asarray(a.epsilon, x.dtype))
    return (_per_channel(y, gamma, beta, axis, a), mean, var)


@meaning("relax.nn.dropout")
def _dropout(v, a):
    x = np.asarray(v[0])
    return (x, np.ones_like(x))


_NUMPY_PAD_MODES: dict[str, Literal["reflect", "edge"]] = {"reflect": "reflect", "edge": "edge", "replicate": "edge"}


@meaning("relax.nn.pad")
def _pad(v, a):
    x = np.asarray(v[0])
    widths = [int(w) for w in a.pad_width]
    pairs = list(zip(widths[0::2], widths[1::2]))
    mode = a.pad_mode or "constant"
    if mode == "constant":
        value = a.pad_value if a.pad_value is not None else (np.asarray(v[1]).item() if len(v) > 1 else 0.0)
        return np.pad(x, pairs, mode="constant", constant_values=value)
    return np.pad(x, pairs, mode=_NUMPY_PAD_MODES[mode])


@meaning("relax.image.resize2d")
def _resize2d(v, a):
    """ONNX's Resize, as the ``onnx`` package's reference implementation computes it (TVM's
    resize2d takes ONNX's coordinate modes)."""
    from onnx.reference.ops.op_resize import _interpolate_nd, _linear_coeffs, _nearest_coeffs, _cubic_coeffs

    x = np.asarray(v[0])
    if (a.layout or "NCHW") != "NCHW" or a.coordinate_transformation_mode == "tf_crop_and_resize":
        raise NotImplementedError("resize2d layout or crop mode")
    size = [int(s) for s in v[1]]
    method = {"linear": "linear", "nearest_neighbor": "nearest", "cubic": "cubic"}[a.method]
    mode = a.coordinate_transformation_mode
    nearest = {"round": "round_prefer_ceil", "": "round_prefer_ceil"}.get(a.rounding_method or "", a.rounding_method)

    def coeffs(ratio, scale=None):
        if method == "nearest":
            return _nearest_coeffs(ratio, mode=nearest)
        if method == "cubic":
            return _cubic_coeffs(ratio, scale=scale, A=a.cubic_alpha)
        return _linear_coeffs(ratio)

    scales = np.array([1.0, 1.0] + [size[i] / x.shape[2 + i] for i in range(2)])
    out = _interpolate_nd(x.astype(np.float64), coeffs, output_size=list(x.shape[:2]) + size,
                          scale_factors=list(scales), coordinate_transformation_mode=mode,
                          exclude_outside=bool(a.cubic_exclude), extrapolation_value=a.extrapolation_value)
    return out.astype(x.dtype)


__all__ = ["EXACT", "MEANINGS", "OpMeaning", "meaning_of", "python_value"]
