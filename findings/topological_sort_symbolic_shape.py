"""TopologicalSort moves a binding ahead of the match_cast that defines the
symbolic shape variables it uses; the module then does not build.

TVM 0.27.0 (apache-tvm 0.27.0.post1). What the ONNX frontend makes of
``Expand`` with a computed shape (the onnx wheel's
``simple/test_expand_shape_model3``): ``lv = tensor_to_shape(shape);
lv1 = match_cast(lv, R.Shape([x_0, x_1, x_2])); gv = broadcast_to(X, [x_0,
x_1, x_2])``. Expected: the sort keeps ``gv`` after ``lv1``, which defines the
variables it uses. Actual: ``gv`` comes first (the sort follows only the
bindings' var uses), and ``tvm.compile`` fails with ``Check failed:
(slot->value_computed) is false: PrimExpr ... x_0 ... has not been computed``.
Without the pass the module builds.

Exit status: 0 when it still reproduces, 1 when it does not.
"""

import sys

import tvm
from tvm import relax, tirx


def module():
    bb = relax.BlockBuilder()
    x = relax.Var("X", relax.TensorType((1, 3, 1), "float32"))
    shape = relax.Var("shape", relax.TensorType((3,), "int64"))
    dims = [tirx.Var(f"x_{i}", "int64") for i in range(3)]
    with bb.function("main", [x, shape]):
        with bb.dataflow():
            lv = bb.emit(relax.Call(relax.ExternFunc("vm.builtin.tensor_to_shape"), [shape], None,
                                    [relax.ShapeType(ndim=3)]))
            bb.match_cast(lv, relax.ShapeType(dims))  # defines x_0, x_1, x_2
            gv = bb.emit_output(relax.op.broadcast_to(x, relax.ShapeExpr(dims)))
        bb.emit_func_output(gv)
    return bb.get()


def build_error(mod) -> str:
    try:
        tvm.compile(mod, "llvm")
    except Exception as err:  # TVM's InternalError
        return [line for line in str(err).splitlines() if line.strip()][-1].strip()
    return ""


if __name__ == "__main__":
    mod = module()
    before, after = build_error(mod), build_error(relax.transform.TopologicalSort()(mod))
    print(f"without the pass: {before or 'builds'}; with it: {after or 'builds'}")
    sys.exit(0 if not before and "has not been computed" in after else 1)
