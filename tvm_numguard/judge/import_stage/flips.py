"""A discontinuous node that flips, excused only with proof.

A comparison, a ceil, an argmax or a cast to int or bool turns a
rounding-sized difference of its inputs into a whole step of its result. That
is no import defect, but "the first differing node is discontinuous" is no
proof of it: a wrong attribute on the node itself (another threshold, the
other comparison, an argmax over the wrong axis) differs there too, on inputs
that agree exactly. So a flip is excused only where:

1. the node's inputs agree within the tolerance, and differ (TVM's and the
   framework's are not identical: something could flip);
2. the framework's own operator applied to TVM's inputs gives TVM's result
   (``Framework.run_node``): TVM's node computes what the model's does, on
   its own inputs;
3. what follows is explained by the flip alone: with TVM's value of the node
   grafted into the framework's run (``Framework.values(grafts=...)``), every
   element that was at fault (or unjudged) agrees. Where something still
   differs, the next differing node is the origin, judged in turn (a second
   flip is proven the same way; anything else is the import's fault).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence

import numpy as np

from ...base.errors import summarize_error
from ..framework import FrameworkError
from ...base.compare import compare_output, differences, element_scores
from ...base.tolerance import Tolerance
from ..numbers import MAX_FLIPS
from .judgement import ImportOrigin, ProvenFlip
from .first_node import Located, first_difference


@dataclasses.dataclass(frozen=True)
class FlipOutcome:
    """What proving flips came to: the ``flips`` proven; ``explained``: they
    account for every element at fault; else ``origin``, the node left to
    blame (None: none differs beyond the tolerance on its own), and ``why``
    it is no proven flip."""

    flips: tuple
    explained: bool
    origin: Optional[ImportOrigin]
    why: Optional[str] = None


def prove_flip(located: Located, expected: Mapping, origin: ImportOrigin, tol: Tolerance) -> tuple:
    """(ProvenFlip, None) where ``origin``'s difference is a proven flip, else
    (None, why not); ``expected``: the framework's values (flips so far grafted)."""
    framework = located.framework
    try:
        arguments = framework.node_arguments(origin.key)
    except FrameworkError as err:
        return None, str(err)
    mine_args, theirs_args = {}, {}
    for name in arguments:
        mine = located.tvm_value(name)
        if mine is None:
            continue  # an input or a constant: the same on both sides, the framework fills it in
        if name not in expected:
            return None, f"its argument '{name}' has no framework value to compare"
        theirs = np.asarray(expected[name])
        mine = np.asarray(mine).astype(theirs.dtype, copy=False)
        if compare_output(0, theirs, mine, located.tolerance_of(name, tol), top_k=0).violated:
            return None, f"its argument '{name}' already differs beyond the tolerance"
        mine_args[name], theirs_args[name] = mine, theirs
    mine, theirs = np.asarray(located.computed[origin.binding]), np.asarray(expected[origin.key])
    try:
        on_mine = framework.run_node(origin.key, mine_args, located.witness)
        on_theirs = framework.run_node(origin.key, theirs_args, located.witness)
    except Exception as err:  # the framework's node on other inputs: any failure is no proof
        return None, f"its operator could not be run on TVM's inputs ({summarize_error(err)})"
    if not _same(on_mine, mine):
        return None, ("the framework's own operator on TVM's inputs does not give TVM's result: "
                      "TVM's node itself differs")
    # something could flip: the inputs differ, or the framework computed from values it does not
    # expose (ONNX Runtime runs many float16 kernels in float32 inside: its own operator on its
    # exposed float16 inputs does not give its result)
    if all(np.array_equal(mine_args[n], theirs_args[n]) for n in mine_args) and _same(on_theirs, theirs):
        return None, ("its inputs are identical in TVM and the framework, so nothing could flip: "
                      "TVM's node itself differs")
    flipped = int(np.count_nonzero(mine.astype(theirs.dtype) != theirs)) if mine.shape == theirs.shape else 0
    return ProvenFlip(origin.node, origin.key, flipped), None


def _same(a, b) -> bool:
    """The same shape and values (a discontinuous result: exactly; NaN equal to NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b.astype(a.dtype, copy=False), equal_nan=a.dtype.kind == "f"))


def explained_by(framework_outputs: Sequence, tvm_outputs: Sequence, masks: Sequence, tol: Tolerance) -> bool:
    """Whether no element in ``masks`` (those at fault or unjudged) still differs
    beyond the tolerance between the framework's (grafted) outputs and TVM's."""
    if len(framework_outputs) != len(tvm_outputs):
        return False
    for index, (theirs, mine, mask) in enumerate(zip(framework_outputs, tvm_outputs, masks)):
        theirs, mine = np.asarray(theirs), np.asarray(mine)
        if theirs.shape != mine.shape:
            return False
        rtol, atol = tol.for_output(index, theirs.dtype)
        fw, _, diff = differences(theirs, mine)
        if np.any((element_scores(fw, diff, rtol, atol) > 1.0) & np.asarray(mask, bool)):
            return False
    return True


def explain_flips(located: Located, origin: ImportOrigin, tol: Tolerance, out_tol: Tolerance,
                  tvm_outputs: Sequence, masks: Sequence) -> FlipOutcome:
    """Starting at ``origin``, each discontinuous node proven to flip is grafted
    and the rest judged again (``tol`` for values, ``out_tol`` for outputs;
    ``masks``: per output, the elements at fault or unjudged)."""
    flips: list
    flips, grafts, expected = [], {}, located.expected
    while origin is not None and origin.discontinuous and len(flips) < MAX_FLIPS:
        flip, why = prove_flip(located, expected, origin, tol)
        if flip is None:
            return FlipOutcome(tuple(flips), False, origin, why)
        flips.append(flip)
        theirs = np.asarray(expected[origin.key])
        grafts[origin.key] = np.asarray(located.computed[origin.binding]).astype(theirs.dtype)
        try:
            if explained_by(located.framework.run(located.witness, grafts=grafts), tvm_outputs, masks, out_tol):
                return FlipOutcome(tuple(flips), True, None)
            expected = located.framework.values(located.witness, grafts=grafts)
        except FrameworkError as err:
            return FlipOutcome(tuple(flips), False, origin,
                               f"the framework cannot run with the flip grafted in ({err})")
        origin, _ = first_difference(located, expected, tol)
    return FlipOutcome(tuple(flips), False, origin)


__all__ = ["FlipOutcome", "MAX_FLIPS", "explain_flips", "explained_by", "prove_flip"]
