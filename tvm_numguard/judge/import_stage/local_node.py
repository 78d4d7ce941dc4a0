"""A differing node judged on its own inputs: the conditioning excuse, checked
where it could hide a defect.

An output element's conditioning bound (``agreement.conditioning_bound``) is measured at the
output. Where two branches meet at one element (a LayerNorm of near-constant
rows scaled up, plus a Gelu), the ill-conditioned branch's conditioning bound covers a
defect of the well-conditioned one: the Gelu 10% low passed as ``benign``. So
where the conditioning bound is what excuses an output, each node of the model whose TVM
value differs from the framework's (in the framework's order, up to
LOCAL_NODES of them, discontinuous ones left to the flip proof) is judged
alone, on its own inputs:

- its truth is the framework's node run in float64 on TVM's values of its
  arguments (``Framework.run_node(double=True)``), and the framework's node
  judged the same way on the framework's own arguments;
- TVM's node is at fault at an element where its error against that truth is
  beyond the tolerance, over ``K`` times the framework's error there, and
  beyond the node's own conditioning bound (its arguments moved by the same roundings)
  and, where the node sums, its summation bound (``judge/summation.py``).

A node the model computes in float16 or bfloat16 is not judged here: TVM
computes it in the model's dtype where ONNX Runtime often widens it inside,
and whether that is precision is the precision stage's question (a clean
float16 BERT block's first MatMul is "at fault" on its own inputs by that
alone).

A node that differs only because its arguments did is not at fault here: on
its own inputs it computes what the model's node does. Nothing here uses TVM's
float64 build: the truth is the framework's operator.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...base.compare import compare_output, element_scores
from ...base.tolerance import Tolerance
from ..framework import FrameworkError
from ..framework.runtimes import moved
from ..numbers import CONDITIONING_RUNS, K, LOCAL_NODES
from .agreement import conditioning_scale, conditioning_bound
from .first_node import Located, origin_at

_NARROW = ("float16", "bfloat16")


def local_fault(located: Located, tol: Tolerance) -> tuple:
    """(ImportOrigin of the first differing node that is at fault on its own
    inputs, or None; how many differing nodes were judged)."""
    if located.error is not None:
        return None, 0
    judged = 0
    for key, theirs in located.expected.items():
        name, provenance = located.named.get(key, (None, None))
        if name is None or name not in located.computed or provenance.op is None:
            continue
        mine, theirs = np.asarray(located.computed[name]), np.asarray(theirs)
        node_tol = located.tolerance_of(key, tol)
        if mine.shape != theirs.shape or theirs.dtype.kind != "f" or located.is_discontinuous(key):
            continue
        if theirs.dtype.name in _NARROW or located.history.get(key) in _NARROW:
            continue  # float16 arithmetic TVM keeps and the framework widens: the precision stage's question
        if not compare_output(0, theirs, mine, node_tol, top_k=0).violated:
            continue
        if judged >= LOCAL_NODES:
            break
        judged += 1
        if at_fault_alone(located, key, mine, theirs, node_tol):
            return origin_at(located, key, node_tol), judged
    return None, judged


def at_fault_alone(located: Located, key: str, mine: np.ndarray, theirs: np.ndarray, tol: Tolerance) -> bool:
    """Whether TVM's value ``mine`` of node ``key`` is at fault against the node's float64 truth on
    TVM's own arguments."""
    arguments = _arguments(located, key)
    if arguments is None:
        return False
    mine_args, theirs_args = arguments
    run = located.framework.run_node
    try:
        truth = np.asarray(run(key, mine_args, located.witness, double=True), np.float64)
        their_truth = np.asarray(run(key, theirs_args, located.witness, double=True), np.float64)
        bound = _conditioning_bound(located, key, mine_args, truth)
        summed = located.framework.node_summation_bound(key, mine_args, located.witness, truth)
    except Exception:  # the framework's node on other inputs: any failure proves nothing against TVM
        return False
    if truth.shape != mine.shape or their_truth.shape != theirs.shape:
        return False
    if summed is not None and np.shape(summed) == truth.shape:  # a sum: any honest order of it is within this
        bound = np.fmax(bound, summed)
    rtol, atol, _ = tol.for_values(0, theirs.dtype, truth)
    with np.errstate(invalid="ignore", over="ignore"):
        err_tvm = np.abs(mine.astype(np.float64) - truth)
        err_fw = np.abs(theirs.astype(np.float64) - their_truth)
    fault = (np.isfinite(truth) & np.isfinite(their_truth) & (element_scores(truth, err_tvm, rtol, atol) > 1.0)
             & (err_tvm > K * err_fw + atol / 10.0) & (err_tvm > bound))
    return bool(np.any(fault))


def _arguments(located: Located, key: str) -> Optional[tuple]:
    """(TVM's values of ``key``'s node's arguments, the framework's), by name;
    an input or a constant is filled in by the framework (the same on both sides)."""
    try:
        names = located.framework.node_arguments(key)
    except FrameworkError:
        return None
    mine_args, theirs_args = {}, {}
    for name in names:
        mine = located.tvm_value(name)
        if mine is None:
            continue
        if name not in located.expected:
            return None
        mine_args[name], theirs_args[name] = np.asarray(mine), np.asarray(located.expected[name])
    return mine_args, theirs_args


def _conditioning_bound(located: Located, key: str, args: dict, truth: np.ndarray) -> np.ndarray:
    """The node's truth's movement when its arguments and the model's inputs move by roundings of its float."""
    scale = conditioning_scale(located.history.get(key) or "float32")
    runs = []
    for seed in range(CONDITIONING_RUNS):
        rng = np.random.default_rng(seed)
        moved_args = {name: moved(value, rng, scale) for name, value in args.items()}
        moved_inputs = {name: moved(value, rng, scale) for name, value in located.witness.items()}
        runs.append([located.framework.run_node(key, moved_args, moved_inputs, double=True)])
    return conditioning_bound([truth], runs)[0]


__all__ = ["LOCAL_NODES", "at_fault_alone", "local_fault"]
