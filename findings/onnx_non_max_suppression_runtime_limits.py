"""TVM's ONNX frontend replaces ``NonMaxSuppression``'s
``max_output_boxes_per_class``, ``iou_threshold`` and ``score_threshold`` by
fixed defaults when they are graph inputs: with the limit computed or fed at
run time, no box is ever selected.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU, ``tvm.relax.frontend.onnx.from_onnx``.
ONNX NonMaxSuppression takes the three as (optional) input tensors, any of
which may come from the graph's inputs or another node. The converter,
``NonMaxSuppression._impl_v10`` (relax/frontend/onnx/onnx_frontend.py), reads
each one only when it is a constant (or a ``params`` entry); otherwise it
silently uses ``max_output_boxes_per_class = 0  # Default value`` (and 0.5 and
0.0 for the thresholds), and 0 boxes per class means an empty result. Three
separate boxes, scores [0.9, 0.8, 0.3], at most 2 per class, score threshold
0.5: ONNX selects boxes 0 and 1 ([[0, 0, 0], [0, 0, 1]]; TVM does too when the
three values are initializers), TVM returns a (0, 3) tensor when they are
inputs. Every ``test_nonmaxsuppression_*`` node test of the onnx wheel (they
pass the three as inputs) fails this way. A converter that needs constants
should raise, as TVM's ``TopK`` ("k must be a constant") and ``Split`` do.

Related: apache/tvm#19544 and its fix apache/tvm#19547 changed the default
from 100 to 0 (ONNX's default for an *omitted* input), which turned this silent
substitution from "100 boxes" into "no box". No issue found for a non-constant
input.

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import tvm
from onnx import TensorProto, helper, numpy_helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx

LIMITS = {"max_output_boxes_per_class": np.array([2], np.int64), "iou_threshold": np.array([0.5], np.float32),
          "score_threshold": np.array([0.5], np.float32)}


def model(limits_as_inputs: bool):
    tensors = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 3, 4]),
               helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 3])]
    limits = [helper.make_tensor_value_info(name, numpy_helper.from_array(value).data_type, [1])
              for name, value in LIMITS.items()]
    initializers = [] if limits_as_inputs else [numpy_helper.from_array(v, n) for n, v in LIMITS.items()]
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", *LIMITS], ["selected"])
    selected = helper.make_tensor_value_info("selected", TensorProto.INT64, None)
    graph = helper.make_graph([node], "nms", tensors + (limits if limits_as_inputs else []), [selected],
                              initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def tvm_selected(limits_as_inputs: bool, boxes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model(limits_as_inputs)), "llvm"), tvm.cpu())
    args = [boxes, scores] + (list(LIMITS.values()) if limits_as_inputs else [])
    return vm["main"](*[tvm.runtime.tensor(a) for a in args]).numpy()


if __name__ == "__main__":
    boxes = np.array([[[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5]]], np.float32)  # no two overlap
    scores = np.array([[[0.9, 0.8, 0.3]]], np.float32)
    want = np.array([[0, 0, 0], [0, 0, 1]], np.int64)
    as_constants, as_inputs = tvm_selected(False, boxes, scores), tvm_selected(True, boxes, scores)
    print(f"expected {want.tolist()}; TVM with the limits as initializers {as_constants.tolist()}, "
          f"as graph inputs {as_inputs.tolist()} (shape {list(as_inputs.shape)})")
    sys.exit(0 if not np.array_equal(as_inputs, want) else 1)
