"""The model's own framework beside TVM: ONNX Runtime for ONNX files, PyTorch
eager for ``.pt2`` programs (``judge/framework/runtimes.py``), each in float32 (what
the user's model computes) and, where the framework has the kernels, in
float64 (the truth a difference is judged against). Nothing here imports TVM.

Which framework runs a model (``open_framework``): ONNX Runtime for ONNX,
PyTorch eager for a torch program.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence

from .eager import TorchEager
from .ort import OnnxRuntime
from .runtimes import Framework, FrameworkError, NoFramework


def open_framework(source, input_names: Sequence[str]):
    """A Framework for ``source`` (a model file path, an ``onnx.ModelProto``
    or a ``torch.export.ExportedProgram``), or a NoFramework saying why not."""
    kind = _kind_of(source)
    if kind is None:
        what = os.path.splitext(source)[1] if isinstance(source, str) else type(source).__name__
        return NoFramework(f"a {what or 'module'} model has no framework of its own: TVM's builds are compared "
                           "with each other only")
    try:
        return OnnxRuntime(source, input_names) if kind == "onnx" else TorchEager(source, input_names)
    except FrameworkError as err:
        return NoFramework(str(err))


def _kind_of(source) -> Optional[str]:
    if isinstance(source, (str, os.PathLike)):
        ext = os.path.splitext(os.fspath(source))[1].lower()
        return {".onnx": "onnx", ".pt2": "torch"}.get(ext)
    module = type(source).__module__
    if module.startswith("onnx"):
        return "onnx"
    if module.startswith("torch"):
        return "torch"
    return None


__all__ = ["Framework", "FrameworkError", "NoFramework", "open_framework"]
