"""Helpers for tests and for pass authors: small seeded models and real ones.

Nothing here imports pytest (the plugin is the top-level module ``numguard_pytest``).
``assertions``: ``assert_pass_numerically_safe`` for pass authors (and
``assert_same_on_witness``, what a ``numguard reduce`` repro's test calls);
the models themselves live in ``tvm_numguard.testing.zoo`` (tiny ONNX models, the
onnx wheel's light models, realistic seeded weights, transformer and vision
blocks), which ``regress``'s corpora use too.
"""

from .assertions import UntestableModel, assert_pass_numerically_safe, assert_same_on_witness, judge_pass
from .zoo.models import LIGHT_MODELS, light_model, light_model_path, tiny_cnn_onnx, tiny_mlp_onnx
from .zoo.weights import randomize_onnx_weights

# the name ``judge_pass`` had before "check" came to mean the range check only:
# kept so that pass authors' tests written against it still run
check_pass = judge_pass

__all__ = [
    "UntestableModel",
    "assert_pass_numerically_safe",
    "assert_same_on_witness",
    "judge_pass",
    "check_pass",
    "LIGHT_MODELS",
    "light_model",
    "light_model_path",
    "randomize_onnx_weights",
    "tiny_cnn_onnx",
    "tiny_mlp_onnx",
]
