"""Judging passes the guard cannot replay, by the chain of modules they made.

When the passes applied in a guard block before the compile call do not
replay (a pass that depends on state, randomness, or a context gone by the
time of the compile), they cannot be skipped. Their outputs are still there:
m0 (the module the block first saw) .. mn (the one compiled). Each is built on
its own (plain lowering); a short boundary search finds inputs where mn's
build differs from m0's, and the same prefix search that bisects a pipeline
(locate/bisect/strategies.py: m_i is "the first i calls applied") names the first
pass call whose output differs there.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import tvm

from ...locate.bisect import prefix_bisect
from ...locate import Budget, make_search
from ...base.compare import compare_outputs, is_finite_outputs
from .call import describe


@dataclasses.dataclass(frozen=True)
class ChainVerdict:
    """Does the last module of the chain differ from the first on the range,
    and from which pass call on (``first_bad_call``: 1-based; None when the
    calls around the boundary do not build on their own)?"""

    verdict: str  # "violation" or "clean"
    score: float
    first_bad_call: Optional[int] = None
    pass_: Optional[str] = None  # the call's pass, described
    builds: int = 0

    @property
    def who(self) -> str:
        if self.pass_:
            return f"pass call #{self.first_bad_call} ({self.pass_})"
        return "the passes applied before the compile call (no single call isolated)"

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "score": self.score, "first_bad_call": self.first_bad_call,
                "pass": self.pass_, "builds": self.builds}

    @classmethod
    def from_json(cls, data: dict) -> "ChainVerdict":
        return cls(data["verdict"], float(data["score"]), data.get("first_bad_call"), data.get("pass"),
                   int(data.get("builds", 0)))


def judge_chain(session, modules: Sequence[tvm.IRModule], passes: Sequence, ranges, seed: int,
                evaluations: int = 16) -> ChainVerdict:
    """Judge the chain ``modules`` (m0 .. mn, made by ``passes``) of the model of
    ``session`` (a BuildSession: it builds and counts each module, once)."""
    built = {}
    last = len(modules) - 1

    def outputs(index: int, inputs):
        build = session.build_module(modules[index])
        built[index] = build.ok
        return session.run(build, inputs) if build.ok else None  # a module that does not build alone

    def evaluate(x):
        ref = outputs(0, x)
        if ref is None or not is_finite_outputs(ref):
            return None
        return compare_outputs(ref, outputs(last, x), session.tol).score

    found = make_search("boundary", budget=Budget(evaluations)).run(evaluate, session.model.inputs, ranges, seed)
    if found.best_inputs is None or found.best_score <= 1.0:
        return ChainVerdict("clean", found.best_score, builds=sum(built.values()))
    witness = found.best_inputs
    ref = outputs(0, witness)

    def is_bad(i):
        out = outputs(i, witness)
        return None if out is None else compare_outputs(ref, out, session.tol).violated

    prefix = prefix_bisect(last, is_bad)
    index = prefix.bad if prefix.exact else None
    return ChainVerdict("violation", found.best_score, index, describe(passes[index - 1]) if index else None,
                        builds=sum(built.values()))
