"""Two user passes where the second crashes when the first was skipped.

``RoundWeightsFP16`` stores the model's weights rounded to float16 (a real
numerical change: the culprit) and tags ``main`` as done. ``PackRoundedWeights``
assumes the tag is there, as a later pass of a vendor's pipeline assumes the
earlier one ran: without it, it dereferences a null pointer (``crash``) or
waits forever for a lock the earlier pass would have set up (``hang``) or
takes half a gigabyte (``hog``).
A bisection confirms the culprit by skipping it alone: exactly that build.
Used as pipeline parts: ``tests/crash_passes.py:round_weights,tests/crash_passes.py:pack_crash``.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

TAG = "weights_rounded"


def _rounded(arg):
    if not isinstance(arg, tvm.ir.expr.GenericConst):
        return arg
    value = arg.value.numpy()
    if value.dtype != np.float32 or value.size < 2:
        return arg
    return relax.const(value.astype(np.float16).astype(np.float32))


@mutator
class _Round(PyExprMutator):
    def visit_call_(self, op):
        call = super().visit_call_(op)
        make = {"relax.matmul": relax.op.matmul, "relax.add": relax.op.add}.get(getattr(call.op, "name", None))
        args = [_rounded(a) for a in call.args]
        if make is None or all(a.same_as(b) for a, b in zip(args, call.args)):
            return call
        return make(*args)


@tvm.transform.module_pass(opt_level=0, name="RoundWeightsFP16")
def round_weights(mod, ctx):
    mutator = _Round(mod)
    main = mod.get_global_var("main")
    new = mutator.visit_expr(mod[main]).with_attr(TAG, True)
    mod = tvm.IRModule(dict(mod.functions.items()))
    mod[main] = new
    return mod


def _needs_tag(mod, on_missing):
    attrs = mod["main"].attrs
    if attrs is None or TAG not in attrs:
        on_missing()
    return mod


@tvm.transform.module_pass(opt_level=0, name="PackRoundedWeights")
def pack_crash(mod, ctx):
    return _needs_tag(mod, lambda: ctypes.string_at(0))  # SIGSEGV, as a native pass would


@tvm.transform.module_pass(opt_level=0, name="PackRoundedWeights")
def pack_hang(mod, ctx):
    def forever():
        while True:
            time.sleep(0.05)

    return _needs_tag(mod, forever)


@tvm.transform.module_pass(opt_level=0, name="PackRoundedWeights")
def pack_hog(mod, ctx):
    def hog():
        ballast = bytearray(512 * 1024 * 1024)  # written, so every page is resident
        time.sleep(2.0)
        del ballast

    return _needs_tag(mod, hog)


def make_model() -> tvm.IRModule:
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((16, 8)) * 0.3).astype("float32")
    b = (rng.standard_normal((8,)) * 0.1).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.add(relax.op.matmul(x, relax.const(w)), relax.const(b)))
        bb.emit_func_output(y)
    return bb.get()


@tvm.transform.module_pass(opt_level=0, name="vendor_pipeline")
def vendor_pipeline(mod, ctx):
    """A pipeline closure (a wrapper, by its name) that runs RoundWeightsFP16 and
    then crashes natively when that pass did not run, as a vendor's pipeline
    that assumes its own passes ran: the reference build, which skips every
    optional pass, segfaults; the pipeline as written builds."""
    return _needs_tag(round_weights(mod), lambda: ctypes.string_at(0))


@tvm.transform.module_pass(opt_level=0, name="unhurried_pipeline")
def unhurried_pipeline(mod, ctx):
    """Runs RoundWeightsFP16; when that pass did not run (the reference build)
    it takes two seconds more, as a slow lowering would."""
    return _needs_tag(round_weights(mod), lambda: time.sleep(2.0))


@tvm.transform.module_pass(opt_level=0, name="late_crash_pipeline")
def late_crash_pipeline(mod, ctx):
    """``vendor_pipeline``, but the reference build crashes two seconds in:
    after the pipeline as written was built, once the search has started."""
    def crash():
        time.sleep(2.0)
        ctypes.string_at(0)

    return _needs_tag(round_weights(mod), crash)
