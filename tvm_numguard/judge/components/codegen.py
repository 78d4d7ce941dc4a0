"""The code generation component: does the target's lowering of each math intrinsic compute it?

Truth: the same kernel (the PrimFunc LegalizeOps made, unchanged) with its math
intrinsics computed by the C library in float64 (``kernels.with_libm``), on TVM's
own arguments; judged: the kernel as the model's build ran it. They differ only
in how the target lowers the intrinsics (``tirx.LowerIntrin``: the op's
``<target>.FLowerIntrinsic`` / ``FLegalize`` rule, else ``default.*``), so a
difference beyond the kernel's tolerance is the code generator's. The
intrinsic named is the one whose replacement alone brings the kernel to the
truth. A narrow-float kernel whose intrinsic, computed in float32 by the same
rule, agrees is ``PRECISION`` (the rule computes the model's float16 in float16).
"""

from __future__ import annotations

import tvm

from .kernels import KernelError, widened, with_libm
from .legalization import overflows, script_target
from .scripts import codegen_script
from .node import NodeCase
from .rule import fault_of
from .values import MissingValue
from .verdict import Component, ComponentVerdict, Outcome

_NARROW = ("float16", "bfloat16")
# tirx.LowerIntrin's order: the target's FLowerIntrinsic, default's, then the target's FLegalize, default's
_RULES = ("{target}.FLowerIntrinsic", "default.FLowerIntrinsic", "{target}.FLegalize", "default.FLegalize")


def judge(case: NodeCase) -> ComponentVerdict:
    target = case.target
    kind = target.kind.name
    judged = []
    for name in case.bindings:
        try:
            run = case.kernel(name)
        except KernelError as err:
            return ComponentVerdict(Component.CODEGEN, Outcome.UNJUDGED, f"the kernels of {case.label}",
                                    f"not judged: {err}", name)
        if run is None or not run.intrinsics:
            continue
        verdict = judge_kernel(case, name, run, kind)
        if verdict.outcome is not Outcome.AGREES:
            return verdict
        judged += run.intrinsics
    if not judged:
        return ComponentVerdict(Component.CODEGEN, Outcome.AGREES, f"the kernels of {case.label}",
                                "no math intrinsic in the node's kernels: nothing for the target to lower")
    ops = ", ".join(dict.fromkeys(judged))
    return ComponentVerdict(Component.CODEGEN, Outcome.AGREES, f"{ops} lowered for {kind}",
                            f"its kernels compute {ops} as the C library does, on TVM's own arguments")


def judge_kernel(case: NodeCase, name: str, run, kind: str) -> ComponentVerdict:
    intrinsics = run.intrinsics
    try:
        mine = case.arguments.value_of(case.arguments.named[name][0])
        exact = run.run(lambda f: with_libm(f, intrinsics), key="libm")[0]
    except (KernelError, MissingValue) as err:
        return ComponentVerdict(Component.CODEGEN, Outcome.UNJUDGED, f"{', '.join(intrinsics)} lowered for {kind}",
                                f"not judged: {err}", name)
    tol = case.tol.plain()
    fault = fault_of(exact, mine, exact, tol)
    if not fault.found:
        return ComponentVerdict(Component.CODEGEN, Outcome.AGREES, f"{', '.join(intrinsics)} lowered for {kind}",
                                "agrees with the C library", name)
    named = [op for op in intrinsics
             if not fault_of(exact, run.run(lambda f, op=op: with_libm(f, [op]), key=("libm", op))[0], exact,
                             tol).found] or intrinsics
    subject = f"{', '.join(named)} lowered for {kind} ({', '.join(rule_of(op, kind) for op in named)})"
    dtype = str(mine.dtype)
    if dtype in _NARROW and not overflows(mine, exact):
        wide = run.run(lambda f: widened(f, named), key=("float32", tuple(named)))[0]
        if not fault_of(exact, wide, exact, tol).found:
            return ComponentVerdict(Component.CODEGEN, Outcome.PRECISION, subject, (
                f"the {kind} lowering computes {', '.join(named)} in the kernel's {dtype}; computed in float32 by "
                "the same rule it agrees with the C library"), name, fault.worst, fault.elements)
    worst = fault.worst
    outputs = [([int(d) for d in o.shape.values], str(o.dtype)) for o in run.outputs]
    script = codegen_script(run.func, with_libm(run.func, named), run.inputs, outputs, script_target(case), worst,
                            subject)
    return ComponentVerdict(Component.CODEGEN, Outcome.AT_FAULT, subject, (
        f"kernel {run.name} computes {_num(worst.get('tvm'))} where the same kernel with {', '.join(named)} "
        f"computed by the C library gives {_num(worst.get('truth'))} at {worst.get('index')} "
        f"({fault.elements} element(s) at fault)"), name, worst, fault.elements, script)


def rule_of(op: str, kind: str) -> str:
    """The lowering rule ``tirx.LowerIntrin`` takes for ``op`` on a ``kind`` target, by its attribute's name."""
    intrinsic = tvm.ir.Op.get(op)
    for pattern in _RULES:
        attribute = pattern.format(target=kind)
        try:
            if intrinsic.get_attr(attribute) is not None:
                return attribute
        except Exception:  # noqa: BLE001 - an attribute no op registers
            continue
    return "no lowering rule: the code generator's own"


def _num(value) -> str:
    return "?" if value is None else f"{value:.6g}"


__all__ = ["judge", "judge_kernel", "rule_of"]
