"""A node whose difference is within its own tolerance, which a later node amplifies.

A node's tolerance is an output's (float32: atol 1e-6): where a later node
multiplies its value up, a difference far below that atol becomes an output's
violation. A model computing ``tanh(x) * 1e6`` on [-1e-3, 1e-3] on stock TVM
0.27: llvm's tanh lowering is off by up to 1.5e-8 there (0 for tiny
arguments), below the Tanh node's atol, so no node but the Mul differed beyond
its tolerance, the Mul computes what the model's does on its own inputs, and
the output's difference (far beyond the tolerance, TVM at fault against the
truth) was excused as rounding that accumulates.

So where an output element is at TVM's fault and every node that differs
beyond its own tolerance is exonerated, the nodes whose TVM value differs
from the framework's beyond their rtol (an atol can shrink with the gain
behind it, an rtol cannot: a relative difference is carried as it is through
a product) are asked, in the framework's order, whether their difference is
material: TVM's value of the node alone, grafted into the framework's run
(``Framework.run(grafts=...)``), moves an element at fault beyond the output's
tolerance. A material node is then judged, by every component, at the
tolerance the outputs imply there: its atol divided by the gain the graft
shows (the output's largest movement over the node's largest difference: a
lower bound of the amplification, so the tolerance is never tightened past
what the model does to the node's value). Its rtol, and every other condition
of the per-element rule (over ``K`` times the honest implementation's error,
beyond the truth's movement), stay as they are.

A node the model computes in float16 or bfloat16 is left to the precision
stage, as ``local_node.py`` leaves it; a discontinuous one to the flip proof.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import numpy as np

from ...base.compare import compare_output, differences, element_scores
from ...base.tolerance import Tolerance
from ..framework import FrameworkError
from ..numbers import PLACED_NODES
from .first_node import Located

_NARROW = ("float16", "bfloat16")


@dataclasses.dataclass(frozen=True)
class Amplified:
    """The model's value ``key``, whose difference the outputs amplify ``gain`` times;
    ``tol``: the tolerance the outputs imply at it (its own atol over the gain)."""

    key: str
    tol: Tolerance
    gain: float
    own_atol: float

    def note(self, label: str) -> str:
        """What the report says of the node named at this tolerance."""
        return (f"{label} differs within its own tolerance (atol {self.own_atol:.3g}), but a later node amplifies "
                f"its difference {self.gain:.3g} times into the outputs (TVM's value of it alone, grafted into "
                f"the framework's run, moves an output element at fault beyond the tolerance): judged at atol "
                f"{self.tol.atol:.3g}, the outputs' tolerance at that node")


def amplified_nodes(located: Located, tol: Tolerance, out_tol: Tolerance, outputs: Sequence,
                    masks: Sequence) -> Iterator[Amplified]:
    """The model's values, in the framework's order, whose difference is material to the outputs
    beyond what their own atol allows (up to PLACED_NODES of them asked); ``tol``: the values'
    tolerance, ``out_tol`` the outputs'; ``outputs``: the framework's outputs on the witness,
    ``masks``: per output, the elements at TVM's fault."""
    if located.error is not None:
        return
    asked = 0
    for key, theirs in located.expected.items():
        name, _ = located.named.get(key, (None, None))
        if name is None or name not in located.computed:
            continue
        mine, theirs = np.asarray(located.computed[name]), np.asarray(theirs)
        if (mine.shape != theirs.shape or theirs.dtype.kind != "f" or theirs.dtype.name in _NARROW
                or located.history.get(key) in _NARROW or located.is_discontinuous(key)):
            continue
        rtol, atol, _ = located.tolerance_of(key, tol).for_values(0, theirs.dtype, theirs)
        # beyond its rtol somewhere: the tightest tolerance the gain could bring it to
        if not compare_output(0, theirs, mine, Tolerance(rtol=rtol, atol=0.0), top_k=0).violated:
            continue
        if asked >= PLACED_NODES:
            return
        asked += 1
        try:
            grafted = located.framework.run(located.witness, grafts={key: mine.astype(theirs.dtype)})
        except FrameworkError:  # the framework cannot run with it grafted: nothing shows the gain
            continue
        implied = _implied_atol(differences(theirs, mine)[2], grafted, outputs, masks, out_tol)
        if implied is not None and implied[0] < atol:
            yield Amplified(key, Tolerance(rtol=rtol, atol=implied[0]), implied[1], atol)


def _implied_atol(node_diff: np.ndarray, grafted: Sequence, outputs: Sequence, masks: Sequence,
                  out_tol: Tolerance):
    """(the atol the outputs' tolerance implies at a node whose difference ``node_diff``
    moves them to ``grafted``, the gain), or None where it moves no element at fault
    beyond the outputs' tolerance."""
    largest = float(np.max(node_diff, initial=0.0))
    if len(grafted) != len(outputs) or not np.isfinite(largest) or largest <= 0.0:
        return None
    implied, gain = None, 0.0
    for index, (moved, base, mask) in enumerate(zip(grafted, outputs, masks)):
        base, moved = np.asarray(base), np.asarray(moved)
        if moved.shape != base.shape or base.dtype.kind != "f":
            continue
        rtol, atol, _ = out_tol.for_values(index, base.dtype, base)
        r, _, movement = differences(base, moved)
        if not np.any((element_scores(r, movement, rtol, atol) > 1.0) & np.asarray(mask, bool)):
            continue
        output_gain = float(np.max(movement)) / largest
        if np.isfinite(output_gain) and output_gain > 0.0:
            implied = atol / output_gain if implied is None else min(implied, atol / output_gain)
            gain = max(gain, output_gain)
    return None if implied is None else (implied, gain)


__all__ = ["Amplified", "amplified_nodes"]
