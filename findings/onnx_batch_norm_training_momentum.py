"""TVM's ONNX frontend imports ``BatchNormalization`` in training mode with
ONNX's ``momentum`` given to Relax's ``batch_norm`` unchanged, but the two
weigh the running statistics the opposite way: the updated running mean and
variance are wrong (the batch's statistics get weight 0.9 instead of 0.1).

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU, ``tvm.relax.frontend.onnx.from_onnx``.
ONNX (BatchNormalization-15, training_mode=1):
``running_mean = input_mean * momentum + current_mean * (1 - momentum)``,
momentum 0.9 by default. Relax's ``R.nn.batch_norm`` follows PyTorch:
``topi.nn.batch_norm`` returns ``(1 - momentum) * moving_mean + momentum *
data_mean``. The converter, ``BatchNormalization._impl_v15``
(relax/frontend/onnx/onnx_frontend.py), passes ``momentum=attr.get("momentum",
0.9)`` as it is; it must pass ``1 - momentum``. With input_mean 0,
input_var 0.5 and a batch whose channel means are 1, 2, 3 (variance 1): ONNX's
running_mean is [0.1, 0.2, 0.3], TVM's [0.9, 1.8, 2.7]; running_var ONNX 0.55,
TVM 0.95. The onnx wheel's node tests ``test_batchnorm_example_training_mode``
and ``test_batchnorm_epsilon_training_mode`` differ likewise (running_var 1.12
where 0.135 is expected; ONNX Runtime matches ONNX). Y is right (it uses the
batch's statistics).

Related: apache/tvm#18704 made the converter pass ``momentum`` (and
``training_mode``) at all, without the conversion; apache/tvm#18703 and #19574
(training_mode) are about Y in inference mode. No issue found for momentum.

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def model():
    names = ("x", "scale", "bias", "mean", "var")
    shapes = ([2, 3, 2], [3], [3], [3], [3])
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "running_mean", "running_var")]
    node = helper.make_node("BatchNormalization", list(names), ["y", "running_mean", "running_var"],
                            training_mode=1, momentum=0.9)
    return helper.make_model(helper.make_graph([node], "bn", inputs, outputs),
                             opset_imports=[helper.make_opsetid("", 15)])


if __name__ == "__main__":
    x = (np.array([1.0, 2.0, 3.0])[None, :, None] + np.array([-1.0, 1.0])[None, None, :]
         * np.array([1.0, -1.0])[:, None, None]).astype(np.float32)  # channel c: mean c + 1, variance 1
    scale, bias = np.ones(3, np.float32), np.zeros(3, np.float32)
    mean, var = np.zeros(3, np.float32), np.full(3, 0.5, np.float32)
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model()), "llvm"), tvm.cpu())
    outputs = vm["main"](*[tvm.runtime.tensor(a) for a in (x, scale, bias, mean, var)])
    _, got_mean, got_var = (t.numpy() for t in outputs)
    want_mean = mean * 0.9 + x.mean(axis=(0, 2)) * 0.1
    want_var = var * 0.9 + x.var(axis=(0, 2)) * 0.1
    def show(values):
        return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"

    print(f"running_mean: expected {show(want_mean)}, TVM {show(got_mean)}; "
          f"running_var: expected {show(want_var)}, TVM {show(got_var)}")
    sys.exit(0 if not (np.allclose(got_mean, want_mean, atol=1e-5) and np.allclose(got_var, want_var, atol=1e-5))
             else 1)
