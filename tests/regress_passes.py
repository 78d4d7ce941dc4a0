"""Passes written the way pass authors write them, for the regress tests and
the checks of issue 55.

``noop``: a module pass that returns the module it was given (a pass whose
pattern never occurs): it must be reported as having changed no model.
``rsqrt_fp16`` and ``sigmoid_fp16``: a ``PyExprMutator`` that computes one
operator in float16 (its argument cast down, its result cast back), as a pass
that trades precision for speed does; ``make_rsqrt_fp16`` and
``make_sigmoid_fp16`` return them for a pipeline spec (``regress_passes:make_rsqrt_fp16``).
"""

import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator


@tvm.transform.module_pass(opt_level=0, name="NoOpRewrite")
def noop(mod, ctx):
    return mod


def in_float16(op_name: str, pass_name: str) -> tvm.transform.Pass:
    """A module pass ``pass_name`` that computes every call of ``op_name`` (``relax.rsqrt``) in float16."""

    @mutator
    class Narrow(PyExprMutator):
        def visit_call_(self, call):
            new = super().visit_call_(call)
            if isinstance(new.op, tvm.ir.Op) and new.op.name == op_name:
                operator = getattr(relax.op, op_name.rsplit(".", 1)[-1])
                return relax.op.astype(operator(relax.op.astype(new.args[0], "float16")), call.ty.dtype)
            return new

    @tvm.transform.module_pass(opt_level=0, name=pass_name)
    def narrow(mod, ctx):
        rewriter = Narrow(mod)
        for gv, func in mod.functions_items():
            if isinstance(func, relax.Function):
                rewriter.builder_.update_func(gv, rewriter.visit_expr(func))
        return rewriter.builder_.get()

    return narrow


rsqrt_fp16 = in_float16("relax.rsqrt", "RsqrtFP16")
sigmoid_fp16 = in_float16("relax.sigmoid", "SigmoidFP16")


def make_rsqrt_fp16():
    return rsqrt_fp16


def make_sigmoid_fp16():
    return sigmoid_fp16
