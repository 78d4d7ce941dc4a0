"""Helpers for the plants in a tirx intrinsic's lowering: the rules ``tirx.LowerIntrin``
substitutes for a math call on a target (``llvm.FLowerIntrinsic`` is asked first,
then ``default.*``). A rule takes the call and returns the expression to compute
instead; returning the call itself leaves it to the next rule."""

from __future__ import annotations

from tvm import tirx


def argument(call):
    return call.args[0]


def dtype_of(expr) -> str:
    return str(expr.ty)


def const(value: float, dtype: str):
    return tirx.const(value, dtype)


def exp(value):
    """``exp`` of ``value``, lowered by the stock rule (a plant for exp itself must not call it)."""
    return tirx.exp(value)
