"""What the static range check knows of a tensor (``Abstract``), and how a
transfer function reads a call's attributes."""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .interval import Interval


@dataclasses.dataclass(frozen=True)
class Abstract:
    """What the analysis knows of one tensor: its interval, dtype, static shape
    (None: not static) and, for a constant, the values themselves."""

    interval: Interval
    dtype: str
    shape: Optional[tuple] = None
    const: Optional[np.ndarray] = None
    depth: int = 0  # weighted sums (matmul, conv) between the inputs and this bound (analysis.py)

    @property
    def size(self) -> Optional[int]:
        return None if self.shape is None else int(np.prod(self.shape, dtype=np.int64))


def attr(call, name, default=None):
    """The call's attribute ``name``, or ``default`` where it has none (or it is None)."""
    value = getattr(call.attrs, name, None) if call.attrs is not None else None
    return default if value is None else value


def ints(values) -> list:
    return [int(v) for v in values] if values is not None else []


def axes_size(shape, axes) -> Optional[int]:
    """How many elements the ``axes`` of ``shape`` hold together (None: no static shape)."""
    if shape is None:
        return None
    return int(np.prod([shape[int(a)] for a in axes], dtype=np.int64))
