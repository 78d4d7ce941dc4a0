"""Helpers for tests and for pass authors: small seeded models and real ones.

Nothing here imports pytest. ``models``: tiny ONNX models and the onnx wheel's
light models; ``weights``: realistic seeded weights for placeholder ones.
"""

from .models import LIGHT_MODELS, light_model, light_model_path, tiny_cnn_onnx, tiny_mlp_onnx
from .weights import randomize_onnx_weights

__all__ = [
    "LIGHT_MODELS",
    "light_model",
    "light_model_path",
    "randomize_onnx_weights",
    "tiny_cnn_onnx",
    "tiny_mlp_onnx",
]
