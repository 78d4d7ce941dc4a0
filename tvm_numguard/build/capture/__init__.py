"""Every value of one run: a module's value graph (``ir/values/value_graph.py``: main's
bindings, which kernel computes each) and the output of each kernel call as
the VM runs it (``kernels.py``). trace compares two versions of a module
with them; ``judge/import_stage/`` compares TVM's import with the model's framework."""

from ...ir.values.value_graph import ValueGraph, ValueNode, value_graph
from .kernels import CaptureError, capture_values

__all__ = ["CaptureError", "ValueGraph", "ValueNode", "capture_values", "value_graph"]
