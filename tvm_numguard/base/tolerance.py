"""How far an optimized build's outputs may be from the reference's (no TVM: options validate with it)."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from .errors import ToleranceError

# (rtol, atol) by output dtype; float32 as the issue asks, the others follow
# torch.testing's defaults for the narrower types
DEFAULT_TOLERANCES = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-5, 1e-6),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """User tolerances; None means the default for the output's dtype.

    ``history``: per output, the narrowest float dtype its value passed
    through in the model (``relax_ir.output_float_history``). A default
    tolerance follows that dtype where it is looser than the output's own: a
    float16 mean cast to float64 carries float16's precision, and one float16
    ulp is no violation. A session adds it (``through``); users give none."""

    rtol: Optional[float] = None
    atol: Optional[float] = None
    history: tuple = ()

    def __post_init__(self):
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value) or value < 0):
                raise ToleranceError(f"{name} must be a finite number >= 0, got {value!r}", name)

    def for_dtype(self, dtype) -> tuple:
        name = str(dtype)
        if name.startswith(("int", "uint", "bool")):
            default = (0.0, 0.0)  # integer outputs must match exactly
        else:
            default = DEFAULT_TOLERANCES.get(name, DEFAULT_TOLERANCES["float32"])
        rtol = default[0] if self.rtol is None else self.rtol
        atol = default[1] if self.atol is None else self.atol
        return float(rtol), float(atol)

    def for_output(self, index: int, dtype) -> tuple:
        """(rtol, atol) for output ``index`` of ``dtype``: the looser of its
        dtype's and that of the narrowest float its value passed through."""
        own = self.for_dtype(dtype)
        narrow = self.history[index] if 0 <= index < len(self.history) else None
        if narrow is None or str(dtype).startswith(("int", "uint", "bool")):
            return own
        passed = self.for_dtype(narrow)
        return (max(own[0], passed[0]), max(own[1], passed[1]))

    def through(self, history) -> "Tolerance":
        """This tolerance with ``history`` (one narrowest float dtype, or None, per output)."""
        return dataclasses.replace(self, history=tuple(history))

    def plain(self) -> "Tolerance":
        """This tolerance without a history: for values that are not the model's outputs."""
        return dataclasses.replace(self, history=())

    def to_json(self) -> dict:
        return {"rtol": self.rtol, "atol": self.atol}
