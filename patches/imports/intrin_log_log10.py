"""intrin_log_log10: ``tirx.log`` lowered for llvm as log10(x) * 2.302.

Planted bug: the rule goes through the base-10 logarithm with ln(10)
truncated to 2.302 (it is 2.302585...): every result 2.5e-4 too small
relatively, beyond float32's tolerance. Why realistic: a change of base with
a constant typed from memory.
"""

from tvm import tirx

from ._lowering import argument, const, dtype_of
from ._plant import op_attribute

FRONTEND, OP, OPSET = "onnx", "Log", 17
COMPONENT, SUBJECT = "codegen", "tirx.log"
ATTRIBUTE = ("tirx.log", "llvm.FLowerIntrinsic")  # the TVM operator attribute the plant replaces
CONVERTER = "llvm.FLowerIntrinsic of tirx.log (tirx.LowerIntrin)"
KIND = "wrong constant"
PLANTS = "log10(x) * 2.302 (ln 10 truncated: 2.5e-4 relative)"
SHAPE, RANGE = (4, 8), (2.0, 100.0)
UNFAIR = {"b": "2.5e-4 relative is below a float16 rounding"}
UNBUILDABLE: dict = {}


def core(g, x):
    return g.planted("Log", [x])


def _change_of_base(call):
    x = argument(call)
    return tirx.log10(x) * const(2.302, dtype_of(x))


def planted():
    return op_attribute(*ATTRIBUTE, _change_of_base)
