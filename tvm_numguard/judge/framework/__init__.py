"""The model's own framework beside TVM: ONNX Runtime for ONNX files, PyTorch
eager for ``.pt2`` programs (``judge/framework/runtimes.py``), each in float32 (what
the user's model computes) and, where the framework has the kernels, in
float64 (the truth a difference is judged against). Nothing here imports TVM.
"""

from .opening import open_framework
from .runtimes import Framework, FrameworkError, NoFramework

__all__ = ["Framework", "FrameworkError", "NoFramework", "open_framework"]
