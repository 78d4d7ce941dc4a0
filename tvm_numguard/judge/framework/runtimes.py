"""Running the user's model in its own framework.

``open_framework(source, input_names)`` (the package's ``__init__``) gives a ``Framework`` for an ONNX
model (ONNX Runtime, graph optimizations off so that its own fusions do not
move the numbers) or a torch ``ExportedProgram`` (PyTorch eager, through
``ExportedProgram.module()``), or a ``NoFramework`` saying why there is none
(a TVMScript model, a framework that is not installed or refuses the model).
A Framework answers on one set of inputs:

- ``run``: float32 (the model's own dtypes), what the user's model computes;
- ``truth``: the same model in float64, independent of TVM: ONNX Runtime's
  float64 copy of the whole model, else the model node by node
  (``onnx_truth.NodeByNode``); for torch, the program's graph node by node in
  float64 (``fx_truth``). An output no independent run reaches is None
  there, and ``truth_name`` says what the truth was;
- ``values``: every intermediate value by its name in the model (the ONNX
  tensor name, the FX node name), in execution order, optionally with chosen
  values grafted in (``grafts``: what follows from those values alone);
- ``run_node``: one node of the model on given argument values (a
  discontinuous node on TVM's inputs: does it give TVM's result?).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence

import numpy as np

from ...base.errors import first_line


class FrameworkError(Exception):
    """The framework cannot answer (no float64 kernels, a run that fails)."""


class InputsRefused(FrameworkError):
    """The inputs are not ones the model declares (a dimension the model fixes given another size,
    ``--fix-shapes``): the model's framework has no answer for them, and no truth does either."""


@dataclasses.dataclass(frozen=True)
class NoFramework:
    """No framework runs this model; ``reason`` says why, in one line."""

    reason: str
    name: str = "none"


def is_narrow_float(value: np.ndarray) -> bool:
    """A float input narrower than float64 (float32, float16, bfloat16): the truth feeds it as float64."""
    return value.dtype.kind == "f" and value.dtype.itemsize < 8 or value.dtype.name == "bfloat16"


def moved(value, rng, scale: float):
    """A float ``value`` moved by up to ``scale`` (relative, random sign and size
    per element) in float64; anything else as it is."""
    value = np.asarray(value)
    if value.dtype.kind != "f" and value.dtype.name != "bfloat16":
        return value
    return value.astype(np.float64) * (1.0 + rng.uniform(-scale, scale, size=value.shape))


class Framework:
    """What every framework answers; ``name`` says which one, with its version."""

    name = "framework"

    def run(self, inputs: Mapping[str, np.ndarray], grafts: Optional[Mapping[str, np.ndarray]] = None) -> list:
        """The model's outputs on ``inputs``, in its own dtypes; each value named
        in ``grafts`` takes the given value instead of being computed."""
        raise NotImplementedError

    def truth(self, inputs: Mapping[str, np.ndarray]) -> list:
        """Each output in float64 (None where no independent float64 run reaches it);
        raises FrameworkError where none does."""
        raise NotImplementedError

    def moved_truth(self, inputs: Mapping[str, np.ndarray], seed: int, scale: float) -> list:
        """``truth`` with every float input, and every value the model itself
        stores in a narrow float (float16, bfloat16), moved by up to ``scale``
        (relative, random per element, ``seed``): how far the truth moves under
        the roundings any implementation of the model makes. A framework that
        cannot move its intermediate values moves the inputs only."""
        rng = np.random.default_rng(seed)
        return self.truth({name: moved(value, rng, scale) for name, value in inputs.items()})

    @property
    def truth_name(self) -> str:
        """What the last ``truth`` computed with (and what of it ran narrower)."""
        raise NotImplementedError

    def values(self, inputs: Mapping[str, np.ndarray], grafts: Optional[Mapping[str, np.ndarray]] = None) -> dict:
        raise NotImplementedError

    def run_node(self, key: str, args: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                 double: bool = False) -> np.ndarray:
        """The model's node that computes value ``key``, run alone on ``args``
        (its arguments by their names in the model; the model's ``inputs`` and
        constants fill the rest): its result ``key``. ``double``: every float
        it reads (arguments, inputs, constants) made float64 first, its float64
        truth on those values."""
        raise NotImplementedError

    def node_summation_bound(self, key: str, args: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                             value: np.ndarray) -> Optional[np.ndarray]:
        """Where the node computing ``key`` sums (a matmul, a convolution, a reduce): how far an
        honest implementation of it may be off on ``args`` (``judge/summation.py``), per element;
        ``value``: the node's float64 value there (``run_node(double=True)``'s); None where it does not sum."""
        return None

    def float_history(self, inputs: Mapping[str, np.ndarray]) -> tuple:
        """({value name: the narrowest float its computation rounded in, in the
        model as the framework defines it}, one such dtype or None per output)."""
        raise NotImplementedError

    def node_arguments(self, key: str) -> list:
        """The names (in the model) of the arguments of the node computing ``key``."""
        raise NotImplementedError

    def node_op(self, key: str) -> str:
        """The operator of the node computing ``key``, as the model names it (``Elu``, ``aten.gelu.default``)."""
        raise NotImplementedError


def note_list(what: str, labels: Sequence[str], limit: int = 3) -> str:
    """``what: a, b, c ...`` (empty where there are none)."""
    if not labels:
        return ""
    more = f" and {len(labels) - limit} more" if len(labels) > limit else ""
    return f"{what}: {', '.join(labels[:limit])}{more}"


__all__ = ["Framework", "FrameworkError", "InputsRefused", "NoFramework", "is_narrow_float", "moved", "note_list",
           "first_line"]
