"""Every input and output kind a real model has (issue 10.2).

0-d (scalar) inputs and outputs, bool, int8..int64, uint8, float16, bfloat16 and
float64 inputs, an input the model ignores, several outputs, nested tuples.
Before: a 0-d input reached TVM as a 1-element vector ("expect Tensor with ndim
0 but get 1"), and skipping ``tirx.BF16StorageLegalize`` in the reference build
segfaulted on a bfloat16 input.
"""

import ml_dtypes
import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_numguard as numguard
from tvm_numguard.ir.model import from_irmodule
from tvm_numguard.report.files import read_witness, write_witness

from clirun import run_cli  # noqa: E402


@I.ir_module
class AllKinds:
    @R.function
    def main(s: R.Tensor((), "float32"), b: R.Tensor((3,), "bool"), i8: R.Tensor((3,), "int8"),
             i64: R.Tensor((3,), "int64"), h: R.Tensor((3,), "float16"), d: R.Tensor((3,), "float64"),
             unused: R.Tensor((2,), "int32"), bf: R.Tensor((3,), "bfloat16"), u8: R.Tensor((3,), "uint8")):
        with R.dataflow():
            x = R.add(R.astype(h, "float32"), s)
            y = R.where(b, x, R.astype(i8, "float32"))
            z = R.sum(y)
            w = R.astype(bf, "float32")
            k = R.add(i64, R.astype(u8, "int64"))
            out = ((y, z), R.multiply(d, R.const(2.0, "float64")), (w, (k, R.exp(s))))
            R.output(out)
        return out


@mutator
class _SloppyExp(PyExprMutator):
    """exp(x) -> exp(x) * 1.001: a 0.1% error on the scalar output only."""

    def visit_call_(self, op):
        call = super().visit_call_(op)
        if isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.exp":
            return relax.op.multiply(call, relax.const(1.001, "float32"))
        return call


def make_pass():
    @tvm.transform.module_pass(opt_level=0, name="SloppyExp")
    def sloppy(mod, ctx):
        updates = {gv: _SloppyExp(mod).visit_expr(f) for gv, f in mod.functions.items()
                   if isinstance(f, relax.Function)}
        new = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
        for gv, f in updates.items():
            new[gv] = f
        return new

    return sloppy


KINDS = {"s": ((), "float32"), "b": ((3,), "bool"), "i8": ((3,), "int8"), "i64": ((3,), "int64"),
         "h": ((3,), "float16"), "d": ((3,), "float64"), "unused": ((2,), "int32"), "bf": ((3,), "bfloat16"),
         "u8": ((3,), "uint8")}


def test_every_kind_is_searched_bisected_and_its_witness_kept(tmp_path):
    model = from_irmodule(AllKinds, "<all kinds>", "all-kinds")
    assert {s.name: (s.shape, s.dtype) for s in model.inputs} == KINDS
    config = numguard.CompileConfig(pipeline="test_input_kinds:make_pass,default")
    report = numguard.bisect(model, config, numguard.Options(low=0.0, high=3.0, budget="20"))
    assert report.violation and report.culprit == "SloppyExp#0"
    metrics = report.data["metrics"]
    assert len(metrics) == 6  # ((y, z), d2, (w, (k, exp s))) flattened
    assert [m["shape"] for m in metrics] == [[3], [], [3], [3], [3], []]
    assert [m["violations"] for m in metrics] == [0, 0, 0, 0, 0, 1]  # only the scalar exp output
    assert metrics[4]["dtype_ref"] == "int64" and metrics[4]["max_abs"] == 0
    # the witness keeps every dtype and shape, bfloat16 and 0-d included, and reruns
    path = str(tmp_path / "w.npz")
    write_witness(path, report.witness)
    given = read_witness(path)
    again = numguard.bisect(model, config, numguard.Options(low=0.0, high=3.0), inputs=given)
    assert again.violation and again.culprit == "SloppyExp#0"
    for name, (shape, dtype) in KINDS.items():
        assert report.witness[name].shape == shape and str(report.witness[name].dtype) == dtype


def test_bfloat16_witness_reads_back_as_bfloat16():
    spec = numguard.InputSpec("bf", (2,), "bfloat16")
    stored = np.array([1.5, -2.0], ml_dtypes.bfloat16).view("V2")  # what np.load gives back
    assert spec.coerce(stored).dtype == np.dtype(ml_dtypes.bfloat16)
    assert spec.coerce(stored).astype(np.float32).tolist() == [1.5, -2.0]
    with pytest.raises(ValueError, match="shape"):
        spec.coerce(np.zeros(3, "float32"))


def test_onnx_scalar_input_and_output(capsys, tmp_path):
    """ONNX gives a 0-d input as R.Tensor((), "float32"): a fifth of generated models have one."""
    nodes = [helper.make_node("Mul", ["x", "t"], ["m"]), helper.make_node("ReduceSum", ["m"], ["total"],
                                                                          keepdims=0)]
    graph = helper.make_graph(nodes, "scalar", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                                               helper.make_tensor_value_info("t", TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info("m", TensorProto.FLOAT, [4]),
                               helper.make_tensor_value_info("total", TensorProto.FLOAT, [])])
    path = str(tmp_path / "scalar.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    code, out, err = run_cli(capsys, "bisect", path, "--low", "-1", "--high", "1", "--budget", "10")
    assert code == 0, out + err
    assert "t[] float32" in out


def test_onnx_inputs_keep_their_own_names(capsys, tmp_path):
    """The frontend renamed an input "0" to "input_0": the user's --range 0=... was refused."""
    nodes = [helper.make_node("Max", ["0", "input.1"], ["y"])]
    graph = helper.make_graph(nodes, "names", [helper.make_tensor_value_info("0", TensorProto.FLOAT, [3]),
                                              helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    path = str(tmp_path / "names.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    assert numguard.load_model(path).input_names() == ["0", "input.1"]
    code, out, err = run_cli(capsys, "bisect", path, "--range", "0=0:1", "--range", "input.1=-1:0", "--budget", "6",
                             "--pipeline", "FastMathTransform,default")
    assert code == 0, out + err
    assert "0[3] float32 in [0, 1], input.1[3] float32 in [-1, 0]" in out
