"""The summation bound: how far an honest implementation of a sum may be from its exact value.

A kernel that sums ``n`` terms per element (a matmul's dot products, a
convolution's windows, a reduce) rounds each partial sum: whatever the order,
rounding errors of random sign put it within about ``sqrt(n) * u *
sum(|terms|)`` of the exact sum (``u`` the float's unit roundoff; Higham and
Mary, "A new approach to probabilistic rounding error analysis", SIAM J. Sci.
Comput. 41(5), 2019), where a blocked BLAS kernel (PyTorch's, ONNX Runtime's,
numpy's) is often hundreds of times closer. One such lucky sample is no
bound: against it alone, TVM's plain loop over the 3072 terms of a float32
ViT-Base MLP was "at fault" (relax.matmul's legalization) on a clean model.
So every truth of the judge allows each sum ``SUMMATION_LAMBDA * sqrt(n) * u
* sum(|terms|)``, and where its terms are nearly equal what a plain loop's
roundings add up to going one way (``summation_bound``): the import question's moved truth runs move each sum's
float64 value by a random share of it (``rounded``), and a node or kernel
judged alone is excused within it. The worst case, ``n * u``, would excuse a
kernel that drops one term of a sum of 4096. Only sums count: an elementwise
operator is held to its conditioning alone, so a wrong formula anywhere is
judged as before.

What sums, and over how many terms, in each vocabulary: ``aten_terms``
(a torch program's ATen calls), ``onnx_terms`` (ONNX nodes) and
``relax_terms`` (Relax operators). A Relax reduction or normalization judged
on TVM's arguments is allowed more (``relax_reduction_bound``): a plain loop's
measured error on its terms, and a normalization what its mean's and
variance's sums move its output by. A float16 or bfloat16 sum is allowed
float32's bound: honest frameworks accumulate those in float32, and a kernel
that accumulates in float16 is the precision stage's question. In the moved
truth runs such a sum is not moved by it: every value a model declares narrow
moves by its own float's roundings there already, far beyond it.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from .numbers import ONE_WAY_SPREAD, PLAIN_LOOP_MARGIN, SUMMATION_LAMBDA

_UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24}


def summation_bound(magnitudes, terms: int, dtype, value=None, squares=None, mean: bool = False) -> np.ndarray:
    """What a sum of ``terms`` terms per element may be off by in ``dtype``'s accumulator:
    ``SUMMATION_LAMBDA * sqrt(n) * u * M`` (capped at ``M``), ``M`` (``magnitudes``) the sum of the
    terms' absolute values per element, float64; the roundings' signs are random. Where the terms
    are nearly equal (their coefficient of variation under ``ONE_WAY_SPREAD * n * u``, read from
    ``value``, the sum, and ``squares``, the sum of the terms' squares; ``mean``: both divided by
    n) a plain loop rounds its growing partial sums the same way each time, and up to
    ``u * n/2 * |sum|`` is allowed there too (a mean of 65536 values in [0.999, 1]: 12 times past
    the first part alone)."""
    u = _UNIT_ROUNDOFF["float64" if str(dtype) == "float64" else "float32"]
    n = max(int(terms), 1)
    magnitudes = np.abs(np.asarray(magnitudes, dtype=np.float64))
    bound = min(SUMMATION_LAMBDA * math.sqrt(n) * u, 1.0) * magnitudes
    if value is None or squares is None:
        return bound
    value, squares = np.abs(np.asarray(value, dtype=np.float64)), np.asarray(squares, dtype=np.float64)
    if value.shape != bound.shape or squares.shape != bound.shape:
        return bound
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        spread = np.sqrt(np.maximum((squares if mean else n * squares) / value ** 2 - 1.0, 0.0))
    one_way = np.isfinite(spread) & (spread < ONE_WAY_SPREAD * n * u)
    return bound + np.where(one_way, min(u * n / 2.0, 1.0) * value, 0.0)


def rounded(value: np.ndarray, bound: np.ndarray, rng) -> np.ndarray:
    """``value`` (float64) moved by a random share of ``bound`` per element, either way (an array, 0-d
    included)."""
    return np.asarray(value + np.asarray(bound, dtype=np.float64) * rng.uniform(-1.0, 1.0, size=np.shape(value)),
                      dtype=np.float64)


def _size(value) -> int:
    return int(np.prod(np.shape(value))) if value is not None else 0


def _per_output(reduced, result) -> Optional[int]:
    return max(_size(reduced) // max(_size(result), 1), 1) if _size(reduced) else None


def transposed_terms(weight_shape: Sequence[int], groups: int, strides, dilations) -> int:
    """Terms per output element of a transposed convolution whose weight is ``[C_in, C_out/groups,
    k...]``: C_in/groups channels, each over the taps that land on the element. A kernel that
    dilates its input by the strides (TOPI's ``conv2d_transpose_nchw``) adds zeros between them,
    exactly; along an axis of ``k`` taps, stride ``s`` and dilation ``d``, at most ``ceil(k / (s /
    gcd(s, d)))`` taps land on one element."""
    spatial = [int(k) for k in weight_shape[2:]]
    strides, dilations = _per_axis(strides, len(spatial)), _per_axis(dilations, len(spatial))
    taps = 1
    for k, s, d in zip(spatial, strides, dilations):
        period = max(s, 1) // math.gcd(max(s, 1), max(d, 1))
        taps *= -(-k // period)
    return (int(weight_shape[0]) // max(int(groups), 1)) * taps


def _per_axis(value, axes: int) -> list:
    """A convolution's per-axis attribute (one number for all, or one per axis; None or empty: 1)."""
    values = [int(v) for v in np.ravel(value)] if value is not None else []
    if not values:
        return [1] * axes
    return values * axes if len(values) == 1 else values[:axes] + [1] * (axes - len(values))


# -- ATen (a torch program, decomposed) -------------------------------------------------------------
_ATEN_PRODUCTS = {"aten.mm.default": 0, "aten.bmm.default": 0, "aten.matmul.default": 0,
                  "aten.addmm.default": 1, "aten.baddbmm.default": 1, "aten.linear.default": 0}
_ATEN_CONVOLUTIONS = {"aten.convolution.default", "aten.conv1d.default", "aten.conv2d.default",
                      "aten.conv3d.default"}
_ATEN_REDUCES = {"aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim", "aten.mean.default"}
SUMMING_ATEN_OPS = frozenset(_ATEN_PRODUCTS.keys() | _ATEN_CONVOLUTIONS | _ATEN_REDUCES)


def aten_terms(target: str, args: Sequence, result) -> Optional[int]:
    """Terms per element of the ATen call ``target`` on ``args`` (tensor shapes read from
    ``np.shape``), None where it is no sum; a bias added counts as one more term."""
    if target in _ATEN_PRODUCTS:
        first = args[_ATEN_PRODUCTS[target]]
        bias = int(_ATEN_PRODUCTS[target] == 1 or (target == "aten.linear.default" and len(args) > 2
                                                    and args[2] is not None))
        return int(np.shape(first)[-1]) + bias if np.ndim(first) else None
    if target in _ATEN_CONVOLUTIONS and len(args) > 1:
        weight = args[1]
        transposed = target == "aten.convolution.default" and len(args) > 6 and bool(args[6])
        shape = np.shape(weight)
        if len(shape) < 2:
            return None
        if transposed:  # stride, padding, dilation, transposed, output_padding, groups follow the bias
            groups = int(args[8]) if len(args) > 8 else 1
            per_output = transposed_terms(shape, groups, args[3] if len(args) > 3 else 1,
                                          args[5] if len(args) > 5 else 1)
        else:
            per_output = _size(weight) // max(shape[0], 1)
        return per_output + int(len(args) > 2 and args[2] is not None)
    if target in _ATEN_REDUCES:
        return _per_output(args[0], result)
    return None


# -- ONNX ---------------------------------------------------------------------------------------------
_ONNX_REDUCES = {"ReduceSum", "ReduceMean"}
SUMMING_ONNX_OPS = frozenset({"MatMul", "Gemm", "Conv", "ConvTranspose"} | _ONNX_REDUCES)


def onnx_terms(node, args: Sequence, result) -> Optional[int]:
    """Terms per element of the ONNX ``node`` on ``args`` (its inputs' values)."""
    op_type = node.op_type
    if op_type in ("MatMul", "Gemm") and len(args) >= 2 and np.ndim(args[0]) >= 1:
        trans_a = op_type == "Gemm" and any(a.name == "transA" and a.i for a in node.attribute)
        reduced = np.shape(args[0])[0 if trans_a else -1]
        return int(reduced) + int(op_type == "Gemm" and len(args) > 2 and args[2] is not None)
    if op_type == "Conv" and len(args) >= 2 and np.ndim(args[1]) >= 2:
        return _size(args[1]) // max(np.shape(args[1])[0], 1) + int(len(args) > 2 and args[2] is not None)
    if op_type == "ConvTranspose" and len(args) >= 2 and np.ndim(args[1]) >= 2:
        from onnx.helper import get_attribute_value

        attrs: dict[str, Any] = {a.name: get_attribute_value(a) for a in node.attribute}
        return (transposed_terms(np.shape(args[1]), int(attrs.get("group") or 1), attrs.get("strides"),
                                 attrs.get("dilations")) + int(len(args) > 2 and args[2] is not None))
    if op_type in _ONNX_REDUCES:
        return _per_output(args[0], result)
    return None


# -- Relax ----------------------------------------------------------------------------------------------
def relax_terms(op: str, values: Sequence, result, attrs=None) -> Optional[int]:
    """Terms per element of the Relax operator ``op`` on ``values`` (``attrs``: the call's
    attributes as Python values, ``components.meaning.Attrs``; a transposed convolution needs them)."""
    if op == "relax.matmul" and len(values) >= 2 and np.ndim(values[0]) >= 1:
        return int(np.shape(values[0])[-1])
    if op in ("relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv3d") and len(values) >= 2:
        shape = np.shape(values[1])
        # the kernel's layout starts with its output channels (OIW, OIHW, OIDHW: TVM's defaults)
        return _size(values[1]) // max(shape[0], 1) if len(shape) >= 2 else None
    if op in ("relax.nn.conv1d_transpose", "relax.nn.conv2d_transpose") and len(values) >= 2 and attrs is not None:
        shape = np.shape(values[1])
        # the kernel's layout starts with its input channels (IOW, IOHW: TVM's defaults); another is not told
        if len(shape) < 2 or not str(attrs.kernel_layout or "IO").startswith("IO"):
            return None
        return transposed_terms(shape, int(attrs.groups or 1), attrs.strides, attrs.dilation)
    if op in ("relax.sum", "relax.mean"):
        return _per_output(values[0], result)
    return None


def normalization_bound(x: np.ndarray, axes: tuple, epsilon: float, dtype, rms: bool = False) -> np.ndarray:
    """What an honest normalization of ``x`` (float64) over ``axes`` may be off by per element, before its
    scale, from its two sums in ``dtype``'s accumulator: the mean's (over n) moves ``x - mean`` and the
    variance's (``sum((x - mean)^2)``, over n) moves the divisor ``s = sqrt(var + epsilon)``: ``d_mean / s +
    |x - mean| * d_var / (2 s^3)``, each sum's error the larger of its random-sign bound and a plain loop's
    measured error (``plain_loop_error``; not the one-way part, u * n/2 of the sum, which a plain loop over
    near-equal terms reaches only in the worst case: over 65536 inputs in [20, 21] it was 350 times a two-pass
    kernel's error, and excused a layer_norm kernel whose epsilon was 1e-3 for 1e-5). ``rms``: no mean, the
    divisor from ``sum(x^2)``. A two-pass kernel such as TVM's ``layer_norm`` (a plain loop for each sum) is within
    it; the one-pass ``E[x^2] - E[x]^2`` is not where the mean is large (its cancellation is no rounding of a
    sum)."""
    x = np.asarray(x, dtype=np.float64)
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    with np.errstate(all="ignore"):
        mean_error: np.ndarray = np.zeros([1 if a in axes else d for a, d in enumerate(x.shape)])
        deviation = x
        if not rms:
            total = np.sum(x, axis=axes, keepdims=True)
            mean_error = np.fmax(summation_bound(np.sum(np.abs(x), axis=axes, keepdims=True), n, dtype),
                                 plain_loop_error(x, axes, total, dtype)) / n
            deviation = x - total / n
        squares = np.sum(deviation * deviation, axis=axes, keepdims=True)
        loop = plain_loop_error(x * x, axes, squares, dtype) if rms else plain_two_pass_error(x, axes, squares, dtype)
        var_error = np.fmax(summation_bound(squares, n, dtype), loop) / n
        spread = np.sqrt(squares / n + epsilon)
        return mean_error / spread + np.abs(deviation) * var_error / (2.0 * spread ** 3)


def plain_loop_error(terms: np.ndarray, axes: tuple, exact: np.ndarray, dtype) -> np.ndarray:
    """PLAIN_LOOP_MARGIN times how far a plain loop in ``dtype``'s accumulator, adding ``terms`` over
    ``axes`` one after the other in index order (TVM's stock reduction kernels on llvm), is from ``exact``
    (their float64 sum, kept dims): one honest order's error, measured. Terms of few distinct values
    (inputs at a range's ends, 0 and 1) round the same way as the partial sums grow, which the
    random-sign part does not bound: a stock ``layer_norm`` over 4096 such values was 1.4 times past
    it. Zero for a float64 accumulator."""
    if str(dtype) == "float64":
        return np.zeros(np.shape(exact))
    with np.errstate(all="ignore"):
        loop = _plain_loop(terms, axes).astype(np.float64)
    return PLAIN_LOOP_MARGIN * np.abs(loop.reshape(np.shape(exact)) - exact)


# Relax reductions whose plain loop over their inputs relax_reduction_bound measures
MEASURED_REDUCTIONS = frozenset({"relax.sum", "relax.mean"})


def plain_two_pass_error(x: np.ndarray, axes: tuple, exact_squares: np.ndarray, dtype) -> np.ndarray:
    """PLAIN_LOOP_MARGIN times how far a two-pass kernel in ``dtype``'s accumulator is from
    ``exact_squares``, the float64 ``sum((x - mean)^2)`` over ``axes`` (kept dims): its mean a plain
    loop's, divided in the accumulator's float, each deviation ``x - mean`` and its square rounded there,
    then a plain loop over the squares (TVM 0.27's variance and layer_norm kernels, bit for bit). The
    float64 mean's deviations round otherwise: over 131072 inputs of 24 distinct values the kernel was 1.41
    times past twice that loop's error. Zero for a float64 accumulator."""
    if str(dtype) == "float64":
        return np.zeros(np.shape(exact_squares))
    x32 = np.asarray(x).astype(np.float32)
    n = np.float32(np.prod([x32.shape[a] for a in axes]))
    with np.errstate(all="ignore"):
        mean = _plain_loop(x32, axes) / n
        deviation = x32 - mean.reshape(np.shape(exact_squares)).astype(np.float32)
        loop = _plain_loop(deviation * deviation, axes).astype(np.float64)
    return PLAIN_LOOP_MARGIN * np.abs(loop.reshape(np.shape(exact_squares)) - exact_squares)


def _plain_loop(terms: np.ndarray, axes: tuple) -> np.ndarray:
    """The float32 sums of ``terms`` over ``axes``, each a plain loop in index order (np.cumsum adds one term
    after the other), the reduced axes dropped."""
    moved = np.moveaxis(np.asarray(terms), axes, tuple(range(-len(axes), 0)))
    flat = moved.reshape(moved.shape[:moved.ndim - len(axes)] + (-1,)).astype(np.float32)
    return np.cumsum(flat, axis=-1, dtype=np.float32)[..., -1]


def relax_reduction_bound(op: str, values: Sequence, attrs, dtype) -> Optional[np.ndarray]:
    """What the Relax reduction ``op`` over its first argument may be off by beyond ``relax_terms``'
    summation bound (``attrs``: its attributes as Python values): a sum's or mean's plain loop error
    (``plain_loop_error``); a variance's second sum (its summation bound and plain loop error, over n); a
    normalization's ``normalization_bound`` times its scale's magnitude. None for any other operator."""
    if attrs is None or not values or not isinstance(values[0], np.ndarray) or values[0].dtype.kind != "f":
        return None
    x = np.asarray(values[0], dtype=np.float64)
    if op in ("relax.sum", "relax.mean"):
        axes = _axes_of(attrs.axis, x.ndim)
        total = np.sum(x, axis=axes, keepdims=True)
        bound = plain_loop_error(x, axes, total, dtype) / (_per_output(x, total) if op == "relax.mean" else 1)
        return bound if attrs.keepdims else np.squeeze(bound, axis=axes)
    if op == "relax.variance":
        axes = _axes_of(attrs.axis, x.ndim)
        n = int(np.prod([x.shape[a] for a in axes]))
        with np.errstate(all="ignore"):
            deviation = x - np.mean(x, axis=axes, keepdims=True)
            squares = np.sum(deviation * deviation, axis=axes, keepdims=True)
            bound = np.fmax(summation_bound(squares, n, dtype), plain_two_pass_error(x, axes, squares, dtype)) / n
            return bound if attrs.keepdims else np.squeeze(bound, axis=axes)
    if op in ("relax.nn.layer_norm", "relax.nn.rms_norm", "relax.nn.group_norm", "relax.nn.instance_norm"):
        return _normalized(op, x, values, attrs, dtype)
    return None


def _normalized(op: str, x: np.ndarray, values: Sequence, attrs, dtype) -> Optional[np.ndarray]:
    """``normalization_bound`` of a Relax normalization over the axes its attributes name, times its scale's
    magnitude (per normalized position for layer_norm and rms_norm, per channel for group and instance norm)."""
    shape = [1] * x.ndim
    if op in ("relax.nn.layer_norm", "relax.nn.rms_norm"):
        axes = _axes_of(attrs.axes, x.ndim)
        bound = normalization_bound(x, axes, float(attrs.epsilon), dtype, rms=op == "relax.nn.rms_norm")
        scale = np.abs(np.asarray(values[1], np.float64)) if len(values) > 1 and attrs.scale is not False else None
        if scale is None or np.ndim(scale) != len(axes):
            return bound
        for axis, size in zip(axes, np.shape(scale)):
            shape[axis] = size
        return bound * scale.reshape(shape)
    channel = int(attrs.channel_axis) % x.ndim
    if op == "relax.nn.group_norm":
        if channel != 1:
            return None
        grouped = x.reshape((x.shape[0], int(attrs.num_groups), -1))
        bound = normalization_bound(grouped, (2,), float(attrs.epsilon), dtype).reshape(x.shape)
    else:
        bound = normalization_bound(x, _axes_of(attrs.axes, x.ndim), float(attrs.epsilon), dtype)
    if not attrs.scale or len(values) < 2:
        return bound
    shape[channel] = x.shape[channel]
    return bound * np.abs(np.asarray(values[1], np.float64)).reshape(shape)


def _axes_of(axis, ndim: int) -> tuple:
    """A Relax reduction's axes (None: every axis; one or several, negative ones counted from the end)."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(int(a) % ndim for a in ([axis] if isinstance(axis, int) else axis))


def magnitudes_of(values: Sequence, power: int = 1) -> list:
    """Each float array of ``values`` as its absolute value to ``power``, in float64 (anything else as it
    is): a sum's operator on these gives the sum of its terms' magnitudes (``power`` 1) or squares (2)."""
    def magnitude(value):
        if isinstance(value, (list, tuple)):
            return type(value)(magnitude(v) for v in value)
        if isinstance(value, np.ndarray) and (value.dtype.kind == "f" or value.dtype.name == "bfloat16"):
            return np.abs(value.astype(np.float64)) ** power
        return value
    return [magnitude(v) for v in values]


def is_mean(op: str) -> bool:
    """Whether a sum's operator (in any of the three vocabularies) divides by its terms' count."""
    return op in ("aten.mean.dim", "aten.mean.default", "ReduceMean", "relax.mean")


__all__ = ["MEASURED_REDUCTIONS", "SUMMING_ATEN_OPS", "SUMMING_ONNX_OPS", "aten_terms", "is_mean", "magnitudes_of",
           "normalization_bound", "onnx_terms", "plain_loop_error", "plain_two_pass_error", "relax_reduction_bound",
           "relax_terms", "rounded", "summation_bound", "transposed_terms"]
