"""Standalone scripts that show a component's fault with stock TVM and numpy, without numguard.

A legalization verdict's script compiles the operator alone (``kernels.alone``: the
call as the model makes it, its tensor arguments as parameters) with
``tvm.compile`` for the target and prints TVM's value beside what the operator
means there (computed by numguard's independent meaning when the verdict was
made, written into the script). A code generation verdict's script builds the
kernel LegalizeOps made twice, as TVMScript: as it is, and with the
intrinsic computed by the C library in float64; the two differ only in how
the target lowers the intrinsic. Arguments are written into the script; an
elementwise operator's larger ones are cut to the element at fault (the same
element of each argument), and a script whose arguments stay larger than
``EMBEDDED_ELEMENTS`` is not written (the verdict says why).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .kernels import alone

EMBEDDED_ELEMENTS = 4096

_HEADER = ["# Written by numguard; runs with stock TVM and numpy only (numguard is not needed).", "import numpy as np",
           "import tvm"]


def legalization_script(call, values: Sequence, target: str, worst: dict, subject: str) -> Optional[str]:
    """The script of a legalization verdict on ``call`` (``values``: its arguments; ``worst``: the element at fault)."""
    values, index = _cut(values, worst.get("index"), _output_shape(call))
    if values is None:
        return None
    mod, fed = alone(call, values)
    at = _index_text(index)
    lines = _HEADER + ["from tvm import relax", "from tvm.script import ir as I",
                       "from tvm.script import relax as R", "",
                       f"# {subject}: the operator alone, as the model calls it", mod.script(show_meta=False).strip(),
                       "", "mod = Module", f"executable = tvm.compile(mod, {target!r})",
                       "vm = relax.VirtualMachine(executable, tvm.cpu())",
                       "args = [" + ", ".join(_literal(v) for v in fed) + "]",
                       "out = vm['main'](*[tvm.runtime.tensor(a) for a in args])",
                       "out = (out[0] if not hasattr(out, 'numpy') else out).numpy()",
                       f"print('TVM computes       ', out{at})",
                       f"print('the operator means ', {worst.get('truth')!r})"]
    return "\n".join(lines) + "\n"


def codegen_script(kernel, exact, inputs: Sequence, outputs: Sequence, target: str, worst: dict,
                   subject: str) -> Optional[str]:
    """The script of a code generation verdict: ``kernel`` (a PrimFunc) and ``exact`` (the same with the
    intrinsic computed by the C library), run on ``inputs`` into buffers like ``outputs`` (shape, dtype)."""
    if sum(np.asarray(v).size for v in inputs) > EMBEDDED_ELEMENTS:
        return None
    at = _index_text(worst.get("index"))
    lines = _HEADER + ["", f"# the kernel LegalizeOps made; {subject}",
                       f"kernel = tvm.script.from_source({kernel.script()!r})",
                       "# the same kernel with the intrinsic computed by the C library in float64",
                       f"exact = tvm.script.from_source({exact.script()!r})", "",
                       "def run(func):",
                       f"    built = tvm.compile(tvm.IRModule({{'main': func.with_attr('global_symbol', 'main')}}), "
                       f"{target!r})",
                       "    args = [tvm.runtime.tensor(a) for a in INPUTS]",
                       "    outs = [tvm.runtime.tensor(np.zeros(shape, dtype)) for shape, dtype in OUTPUTS]",
                       "    built['main'](*args, *outs)",
                       "    return outs[0].numpy()", "",
                       "INPUTS = [" + ", ".join(_literal(np.asarray(v)) for v in inputs) + "]",
                       f"OUTPUTS = {[(list(shape), dtype) for shape, dtype in outputs]!r}",
                       f"print('as TVM lowers it  ', run(kernel){at})",
                       f"print('with the C library', run(exact){at})"]
    return "\n".join(lines) + "\n"


def _cut(values: Sequence, index, output_shape: Optional[tuple]) -> tuple:
    """(the arguments as written into a script, the element to print there): as they are where small
    enough; an elementwise call's (every tensor argument of the output's shape) cut to the element at fault.
    A reduction keeping its dims is no elementwise call: cut, it computed another value (a variance over
    131072 inputs cut to one showed 0 beside the 0.0399 it means)."""
    tensors = [np.asarray(v) for v in values if isinstance(v, np.ndarray)]
    if sum(t.size for t in tensors) <= EMBEDDED_ELEMENTS:
        return list(values), index
    shapes = {t.shape for t in tensors}
    if index is None or len(shapes) != 1 or next(iter(shapes)) != output_shape or len(output_shape) != len(index):
        return None, None
    at = tuple(slice(i, i + 1) for i in index)
    return [np.ascontiguousarray(v[at]) if isinstance(v, np.ndarray) else v for v in values], [0] * len(index)


def _output_shape(call) -> Optional[tuple]:
    """The shape of ``call``'s result where its type tells it (None otherwise)."""
    try:
        return tuple(int(d) for d in call.ty.shape)
    except Exception:  # noqa: BLE001 - no type, a tuple result, a symbolic dim: not told
        return None


def _index_text(index) -> str:
    return "" if index is None else "[" + ", ".join(str(int(i)) for i in index) + "]"


def _literal(value: np.ndarray) -> str:
    value = np.asarray(value)
    return f"np.array({value.astype(np.float64).tolist() if value.dtype.kind == 'f' else value.tolist()!r}, " \
           f"dtype={str(value.dtype)!r})"


__all__ = ["EMBEDDED_ELEMENTS", "codegen_script", "legalization_script"]
