"""How far an optimized build's outputs may be from the reference's (no TVM: options validate with it)."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from .errors import ToleranceError

# an output judged at its own scale (``Tolerance.for_values``) is never held to less than this many of
# its float's spacing there: below that, two correctly rounded implementations already differ
OWN_SCALE_ULPS = 4
# (rtol, atol) by output dtype; float32 as the issue asks, float16 and bfloat16 follow torch.testing's
# defaults; float64 at float64's own precision, as float32's are at float32's (rtol about 84 ulps, atol
# about 8 ulps of 1): torch.testing's 1e-7 for float64 passed a float64 model computed in float32 inside
# (half a float32 ulp is 6e-8), the frontend defect a float64 tolerance must see
DEFAULT_TOLERANCES = {
    "float64": (1e-12, 1e-14),
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

    def for_values(self, index: int, dtype, reference) -> tuple:
        """(rtol, atol, the values' own scale or None) for output ``index`` whose
        reference values are ``reference``: ``for_output``'s, except where the
        default atol dwarfs every value (all of them below it: an output of 1e-11
        against 1e-6 is compared at nothing, and a kernel returning 0 there would
        pass): atol then follows the values' own scale, ``rtol`` times the largest
        of them, and no less than OWN_SCALE_ULPS of their float's spacing there.
        A user's own atol is kept: it is their contract."""
        rtol, atol = self.for_output(index, dtype)
        if self.atol is not None or not atol:
            return rtol, atol, None
        values = np.abs(np.asarray(reference, dtype=np.float64))
        values = values[np.isfinite(values)]
        scale = float(values.max()) if values.size else 0.0
        if not 0.0 < scale < atol:
            return rtol, atol, None
        name = str(dtype) if str(dtype) in DEFAULT_TOLERANCES else "float32"
        spacing = float(np.spacing(np.asarray(scale, dtype=name if name != "bfloat16" else "float32")))
        return rtol, max(rtol * scale, OWN_SCALE_ULPS * spacing), scale

    def through(self, history) -> "Tolerance":
        """This tolerance with ``history`` (one narrowest float dtype, or None, per output)."""
        return dataclasses.replace(self, history=tuple(history))

    def plain(self) -> "Tolerance":
        """This tolerance without a history: for values that are not the model's outputs."""
        return dataclasses.replace(self, history=())

    def to_json(self) -> dict:
        return {"rtol": self.rtol, "atol": self.atol}
