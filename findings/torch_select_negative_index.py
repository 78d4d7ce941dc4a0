"""TVM's PyTorch frontend imports ``x[:, -1]`` (``aten.select`` with a negative
index) as a ``take`` of index -1 in ``fast`` mode, which reads out of bounds:
the previous row's elements, or memory before the tensor.

TVM 0.27.0 (apache-tvm 0.27.0.post1), CPU (``llvm``), torch 2.x,
``tvm.relax.frontend.torch.from_exported_program(torch.export.export(m, (x,)))``.
PyTorch's ``select(dim, index)`` counts a negative index from the end (-1: the
last element along ``dim``); ``x[:, -1]`` exports as
``torch.ops.aten.select.int(x, 1, -1)``, the usual way to take an LSTM's or a
GRU's last time step. The converter,
``ExportedProgramImporter._select`` (relax/frontend/torch/exported_program_translator.py;
the same code is ``FXImporter._select`` in fx_translator.py), emits
``relax.op.take(x, relax.const(node.args[2], "int64"), dim)`` without
normalizing the index, and ``take``'s default ``mode="fast"`` assumes in-bound
indices (TOPI warns: "Fast mode segfaults when there are out-of-bounds
indices"). On x = arange(1, 25).reshape(2, 3, 4), ``x[:, -1]`` is
[[9, 10, 11, 12], [21, 22, 23, 24]]; TVM returns, for row 1, row 0's last
elements [9, 10, 11, 12], and for row 0 whatever lies before the buffer
(e.g. 4.5e-44, 0): wrong values silently, a possible crash.

Fix: add the axis length to a negative index before ``take`` (as the ONNX
frontend's ``Gather`` does with ``_normalize_negative_indices``). Related: the
same defect in the ONNX frontend's Gather, apache/tvm#19436 (fixed), and in
GatherElements/GatherND/ScatterND/OneHot, apache/tvm#20217 (fixed by
apache/tvm#20219); no issue found for the torch frontend's ``select``.

Exit status: 0 when the difference still reproduces, 1 when it does not.
"""

import sys

import numpy as np
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program


class LastStep(torch.nn.Module):
    def forward(self, x):
        return x[:, -1]


if __name__ == "__main__":
    x = torch.arange(1, 25, dtype=torch.float32).reshape(2, 3, 4)
    mod = from_exported_program(torch.export.export(LastStep(), (x,)))
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(x.numpy()))[0].numpy()
    want = LastStep()(x).numpy()
    print(f"x[:, -1] of arange(1, 25).reshape(2, 3, 4): torch {want.tolist()}, TVM {got.tolist()}")
    sys.exit(0 if not np.array_equal(got, want) else 1)
