"""Judging passes the guard cannot replay, by the chain of modules they made.

When the passes applied in a guard block before the compile call do not
replay (a pass that depends on state, randomness, or a context gone by the
time of the compile), they cannot be skipped. Their outputs are still there:
m0 (the module the block first saw) .. mn (the one compiled). Each is built on
its own (plain lowering); a short boundary search finds inputs where mn's
build differs from m0's, and snapshot-chain bisection (bisect/chain.py) names
the first pass call whose output differs there.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import tvm

from ..bisect.chain import first_bad
from ..search import Budget, make_strategy
from ..shadow.build import compile_plain, run_build
from ..shadow.compare import Tolerance, compare_outputs, is_finite_outputs
from .call import describe


class _ChainBuilds:
    """Each module of the chain built once, on demand; None if it does not build."""

    def __init__(self, modules: Sequence[tvm.IRModule], input_names, target):
        self.modules, self.input_names, self.target = modules, input_names, target
        self.builds: dict = {}

    def outputs(self, index: int, inputs: Mapping[str, np.ndarray]):
        if index not in self.builds:
            try:
                self.builds[index] = compile_plain(self.modules[index], self.target)
            except Exception:  # a module the user made but that does not build alone
                self.builds[index] = None
        build = self.builds[index]
        return None if build is None else run_build(build, self.input_names, inputs)


def judge_chain(modules: Sequence[tvm.IRModule], passes: Sequence, inputs, ranges, target, tol: Tolerance,
                seed: int, evaluations: int = 16) -> dict:
    """{"verdict", "score", "first_bad_call", "pass", "builds"}: does the last module
    differ from the first on the range, and from which pass call on?"""
    names = [s.name for s in inputs]
    builds = _ChainBuilds(modules, names, target)
    last = len(modules) - 1

    def evaluate(x):
        ref = builds.outputs(0, x)
        if ref is None or not is_finite_outputs(ref):
            return None
        return compare_outputs(ref, builds.outputs(last, x), tol).score

    found = make_strategy("boundary", budget=Budget(evaluations)).run(evaluate, inputs, ranges, seed)
    result = {"verdict": "clean", "score": found.best_score, "first_bad_call": None, "pass": None, "builds": 0}
    if found.best_inputs is not None and found.best_score > 1.0:
        witness = found.best_inputs
        ref = builds.outputs(0, witness)

        def is_bad(i):
            out = builds.outputs(i, witness)
            return None if out is None else compare_outputs(ref, out, tol).violated

        index, _ = first_bad(last, is_bad)
        result.update(verdict="violation", first_bad_call=index,
                      **{"pass": describe(passes[index - 1]) if index else None})
    result["builds"] = sum(1 for b in builds.builds.values() if b is not None)
    return result
