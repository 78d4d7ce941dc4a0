"""The legalization component: does each Relax operator's kernel (``LegalizeOps``:
its TOPI / TE formula) compute what the operator means?

Truth: the operator's meaning (``meaning.py``) in float64 on TVM's own values of
its arguments. Judged: the kernel LegalizeOps made, with its math intrinsics
computed by the C library in float64 (``kernels.with_libm``), so that a wrong
lowering of an intrinsic (the code generator's business) does not count here.
The per-element rule (``rule.py``) compares it with the meaning computed
honestly in the kernel's own float (numpy / PyTorch in that dtype) and with
the meaning's movement under a few roundings of the arguments (and, for an
operator that sums, the error any order of its sum may make).

A kernel at fault in a narrow float (float16, bfloat16) that agrees once the
operator is computed in float32 (``ir/narrow/widen``, as ``--keep-float32``
does) is ``PRECISION``: TVM computes the model's float16 in float16 (a matmul
accumulating in float16 where ONNX Runtime accumulates in float32), which the
model allows; the widening is the verified fix.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...ir.relax_ir import tensor_type
from .kernels import KernelError, run_alone, with_libm
from .meaning import meaning_of
from .node import NodeCase
from .rule import Fault, fault_of, honest_bound
from .scripts import legalization_script
from .values import MissingValue, widened
from .verdict import Component, ComponentVerdict, Outcome

_NARROW = ("float16", "bfloat16")


def judge(case: NodeCase) -> ComponentVerdict:
    """The first of the node's bindings whose kernel is at fault; else precision, not judged, or agreeing."""
    # a call_tir the converter emitted itself (bb.emit_te) is no LegalizeOps kernel: the conversion judges it
    verdicts = [judge_binding(case, name) for name in case.bindings
                if case.call(name) is not None and _op(case.call(name)) != "relax.call_tir"]
    for outcome in (Outcome.AT_FAULT, Outcome.UNJUDGED, Outcome.PRECISION):
        found = next((v for v in verdicts if v.outcome is outcome), None)
        if found is not None:
            return found
    ops = ", ".join(dict.fromkeys(_op(case.call(n)) for n in case.bindings if case.call(n) is not None))
    return ComponentVerdict(Component.LEGALIZATION, Outcome.AGREES, f"the kernels of {ops or 'no operator'}",
                            f"each kernel computes its operator's meaning on TVM's own arguments ({ops})")


def judge_binding(case: NodeCase, name: str) -> ComponentVerdict:
    call = case.call(name)
    op = _op(call)
    subject = f"{op} legalized by LegalizeOps"
    meaning = meaning_of(call)
    if meaning is None:
        return ComponentVerdict(Component.LEGALIZATION, Outcome.UNJUDGED, subject,
                                f"not judged: {op} has no meaning outside TVM in numguard", name)
    try:
        values = case.arguments.arguments(call)
        mine = kernel_value(case, name)
        truth = _first(meaning.evaluate(widened(values)))
        honest = _first(meaning.evaluate(values))
    except (MissingValue, KernelError, NotImplementedError, ValueError) as err:
        return ComponentVerdict(Component.LEGALIZATION, Outcome.UNJUDGED, subject, f"not judged: {err}", name)
    dtype = _declared(case, name) or str(np.asarray(mine).dtype)
    kernel = _kernel_name(case, name)
    subject = f"{op} legalized by LegalizeOps (PrimFunc {kernel})" if kernel else subject
    bound = honest_bound(meaning, widened(values), truth, dtype)
    fault = fault_of(honest, mine, truth, case.tol.plain(), bound)
    if not fault.found:
        return ComponentVerdict(Component.LEGALIZATION, Outcome.AGREES, subject,
                                f"its kernel computes {op}'s meaning on TVM's own arguments", name)
    if (dtype in _NARROW and not overflows(mine, truth)
            and _agrees_in_float32(case, call, values, honest, truth, bound)):
        return ComponentVerdict(Component.LEGALIZATION, Outcome.PRECISION, subject, (
            f"its kernel computes {op} in the model's {dtype} ({fault.elements} element(s) beyond an honest "
            f"{dtype} implementation's error); computed in float32 it agrees with the operator's meaning"),
            name, fault.worst, fault.elements)
    script = legalization_script(call, values, script_target(case), fault.worst, subject)
    return ComponentVerdict(Component.LEGALIZATION, Outcome.AT_FAULT, subject, _fault_reason(op, fault, dtype),
                            name, fault.worst, fault.elements, script)


def script_target(case: NodeCase) -> str:
    """The target as a standalone script gives it to ``tvm.compile``."""
    target = case.located.target
    return target if isinstance(target, str) else str(case.target.kind.name)


def overflows(mine, truth) -> bool:
    """Whether ``mine`` is not finite where the truth is: an overflow or a NaN is no rounding, so
    no precision question, whatever a wider float does."""
    mine, truth = np.asarray(mine, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    return mine.shape == truth.shape and bool(np.any(~np.isfinite(mine) & np.isfinite(truth)))


def kernel_value(case: NodeCase, name: str) -> np.ndarray:
    """The binding's kernel output on TVM's own arguments, its math intrinsics computed exactly (by
    libm in float64); the captured value where the kernel has none (or the binding no kernel)."""
    var = case.arguments.named[name][0]
    captured = case.arguments.value_of(var)
    run = case.kernel(name)
    if run is None or not run.intrinsics:
        return captured
    return run.run(lambda f: with_libm(f, run.intrinsics), key="libm")[0]


def _agrees_in_float32(case: NodeCase, call, values, honest, truth, bound) -> bool:
    """Whether TVM's own kernel of the operator, computed in float32 and rounded to the
    narrow float at its output, passes the same rule: the verified widening."""
    try:
        wide = run_alone(call, values, case.target, keep_float32=True)
    except Exception:  # noqa: BLE001 - an operator that cannot be widened is no precision question
        return False
    return not fault_of(honest, wide, truth, case.tol.plain(), bound).found


def _fault_reason(op: str, fault: Fault, dtype: str) -> str:
    worst = fault.worst
    if worst.get("index") is None and "shape_tvm" in worst:
        return f"its kernel returns shape {worst['shape_tvm']} where {op} means {worst['shape_truth']}"
    return (f"its kernel computes {_num(worst.get('tvm'))} where {op} means {_num(worst.get('truth'))} at "
            f"{worst.get('index')} on TVM's own arguments ({fault.elements} element(s) at fault; an honest {dtype} "
            f"implementation gives {_num(worst.get('honest'))})")


def _kernel_name(case: NodeCase, name: str) -> Optional[str]:
    legal = case.legal_call(name)
    return None if legal is None else legal.args[0].name_hint


def _declared(case: NodeCase, name: str) -> Optional[str]:
    var = case.arguments.named[name][0]
    dtype = tensor_type(var)[1]
    fields = getattr(getattr(var, "ty", None), "fields", None)
    if dtype is None and fields:
        dtype = tensor_type(fields[0])[1]
    return dtype


def _first(value):
    return np.asarray(value[0] if isinstance(value, (tuple, list)) else value)


def _op(call) -> str:
    op = getattr(call, "op", None)
    return getattr(op, "name", None) or str(getattr(op, "name_hint", "a call"))


def _num(value) -> str:
    return "?" if value is None else f"{value:.6g}"


__all__ = ["judge", "judge_binding", "kernel_value", "overflows"]
