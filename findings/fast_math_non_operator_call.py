"""FastMathTransform raises on any call whose callee is not an operator.

TVM 0.27.0 (apache-tvm 0.27.0.post1). Expected: the pass rewrites the
operators it approximates (exp, erf, tanh) and leaves other calls alone.
Actual: a plain call to another Relax function of the module raises
``AttributeError: 'GlobalVar' object has no attribute 'name'``, and a
``call_packed`` (what the ONNX frontend makes of ``Expand`` with a computed
shape: the onnx wheel's ``simple/test_expand_shape_model3``) raises
``AttributeError: 'ExternFunc' object has no attribute 'name'``: the pass
reads ``call.op.name`` of every call.

Exit status: 0 when both still raise, 1 when they do not.
"""

import sys

from tvm import relax


def calls_a_function():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4,), "float32"))
    with bb.function("double", [x], private=True):
        bb.emit_func_output(bb.emit(relax.op.add(x, x)))
    double = bb.get().get_global_var("double")
    y = relax.Var("y", relax.TensorType((4,), "float32"))
    with bb.function("main", [y]):
        bb.emit_func_output(bb.emit(relax.Call(double, [y])))
    return bb.get()


def calls_packed():
    bb = relax.BlockBuilder()
    shape = relax.Var("shape", relax.TensorType((2,), "int64"))
    with bb.function("main", [shape]):
        # R.call_packed: a call whose callee is an ExternFunc
        out = bb.emit(relax.Call(relax.ExternFunc("vm.builtin.tensor_to_shape"), [shape], None,
                                 [relax.ShapeType(ndim=2)]))
        bb.emit_func_output(out)
    return bb.get()


def error(mod) -> str:
    try:
        relax.transform.FastMathTransform()(mod)
    except AttributeError as err:
        return str(err)
    return ""


if __name__ == "__main__":
    function_call, packed_call = error(calls_a_function()), error(calls_packed())
    print(f"call to a Relax function: {function_call or 'rewritten'}; call_packed: {packed_call or 'rewritten'}")
    sys.exit(0 if function_call and packed_call else 1)
