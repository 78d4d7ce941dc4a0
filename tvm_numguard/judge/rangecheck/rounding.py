"""What rounding alone costs where a pipeline stores values in a narrower float.

The range check bounds values (domains, overflow); it says nothing about
rounding, which is what a precision pass changes first. Here: the values of
the pipeline's ``main`` typed in a float narrower than the model's
(``ToMixedPrecision``'s float16), and the least relative change one rounding
to that dtype can make (its unit roundoff, 2^-11 for float16). Where that is
above the tolerance's rtol, the optimized build will likely differ from the
reference by more than the tolerance on ordinary inputs: no range needed.
It is an estimate of one rounding: sums and chains can lose more.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from ...ir.relax_ir import function_bindings, tensor_type

# the relative step of one rounding to nearest: half a unit in the last place
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53}


@dataclasses.dataclass(frozen=True)
class RoundingLoss:
    """``values`` bindings of the pipeline's main are ``dtype``, narrower than
    the model's ``wider``; one rounding moves a value by up to ``relative``."""

    dtype: str
    wider: str
    values: int
    relative: float

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def rounding_loss(model_func, pipeline_func) -> Optional[RoundingLoss]:
    """The narrowest float the pipeline's main computes in, where it is narrower
    than every float the model's main computes in; None when there is none."""
    def floats(func) -> dict:
        counts: dict = {}
        for b in function_bindings(func):
            dtype = tensor_type(b.var)[1]
            if dtype in UNIT_ROUNDOFF:
                counts[dtype] = counts.get(dtype, 0) + 1
        return counts

    before, after = floats(model_func), floats(pipeline_func)
    if not before or not after:
        return None
    narrowest = max(after, key=lambda d: UNIT_ROUNDOFF[d])
    widest_before = min(before, key=lambda d: UNIT_ROUNDOFF[d])
    if UNIT_ROUNDOFF[narrowest] <= max(UNIT_ROUNDOFF[d] for d in before):
        return None
    return RoundingLoss(narrowest, widest_before, after[narrowest], UNIT_ROUNDOFF[narrowest])
