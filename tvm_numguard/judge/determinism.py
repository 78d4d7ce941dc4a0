"""A build that gives other outputs on the same inputs: a finding of its own.

Nothing can be judged against a build that does not compute the same thing
twice: no pass is blamed, no fix is printed. A kernel that reads memory it does
not own (an index past a table: TVM 0.27's torch frontend turns ``x[:, -1]``
into ``take(x, -1, mode="fast")``) or races gives such outputs. The node is
found as the import's first difference is: TVM's import of the model run
twice, plainly built, every kernel's output captured, and the first value that
differs between the two runs named in the user's model.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, overload

import numpy as np

from ..base.errors import summarize_error
from ..base.numbers import plain, unplain
from ..base.words import DeterminismVerdict, Stage, StageVerdict
from ..ir.targets import local_target
from .import_stage.first_node import tvm_values


@dataclasses.dataclass(frozen=True)
class Nondeterminism:
    """``builds`` ("reference", "optimized") gave other outputs on the same
    inputs; ``node`` (where in the model), ``binding`` and ``op``: the first
    value of TVM's import that differs between two runs (None: not found,
    ``note`` says why); ``first``, ``second``: its worst element in each run."""

    builds: tuple
    node: Optional[str] = None
    binding: Optional[str] = None
    op: Optional[str] = None
    index: Optional[list] = None
    first: Optional[float] = None
    second: Optional[float] = None
    note: Optional[str] = None

    def to_json(self) -> dict:
        return plain({**dataclasses.asdict(self), "builds": list(self.builds)})

    @overload
    @classmethod
    def from_json(cls, data: None) -> None: ...

    @overload
    @classmethod
    def from_json(cls, data: Mapping) -> "Nondeterminism": ...

    @classmethod
    def from_json(cls, data) -> Optional["Nondeterminism"]:
        if data is None:
            return None
        fields = unplain(dict(data))
        return cls(**{**fields, "builds": tuple(fields["builds"])})

    def builds_give(self) -> str:
        """``"the optimized build gives"``, ``"the reference and the optimized builds give"``."""
        return which_builds_give(self.builds)

    def text(self) -> str:
        which = " and ".join(f"the {b} build" for b in self.builds)
        verb = "give" if len(self.builds) > 1 else "gives"
        where = ""
        if self.node is not None:
            where = (f"; first at {self.node} (TVM: {self.op or 'no op'}): {_num(self.first)} in one run, "
                     f"{_num(self.second)} in the next at {self.index}")
        elif self.note:
            where = f"; no node named: {self.note}"
        return f"{which} {verb} other outputs on the same inputs{where}"


def _num(value) -> str:
    return "?" if value is None else f"{value:.6g}"


def locate(model, witness: Mapping[str, np.ndarray], target, builds: tuple) -> Nondeterminism:
    """Nondeterminism of ``builds``, with the first value of ``model``'s import
    that differs between two runs on ``witness`` (where it shows there)."""
    try:
        first, second = tvm_values(model, witness, target), tvm_values(model, witness, target)
    except Exception as err:  # naming the node is a help
        return Nondeterminism(builds, note=summarize_error(err))
    for name, value in first.items():
        other = second.get(name)
        a, b = np.asarray(value), np.asarray(other) if other is not None else None
        if b is None or a.shape != b.shape or a.tobytes() == b.tobytes():
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.abs(a.astype(np.float64) - b.astype(np.float64)) if a.dtype.kind in "fiub" else None
        at = np.unravel_index(int(np.nanargmax(np.where(np.isnan(gap), np.inf, gap))), a.shape) if gap is not None \
            and gap.size else None
        provenance = model.provenance.get(name)
        return Nondeterminism(builds, provenance.label if provenance is not None else f"binding {name}", name,
                              getattr(provenance, "op", None), [int(i) for i in at] if at is not None else None,
                              float(a[at]) if at is not None else None, float(b[at]) if at is not None else None)
    return Nondeterminism(builds, note="TVM's import, built plainly, gave the same values twice here")


def judge_determinism(at, said) -> Optional[Nondeterminism]:
    """The determinism stage on ``at``'s witness (a stages.Witnessed): where
    anything differs, the builds are run again, and one that gives other
    outputs on the same inputs is a finding of its own (None: none does)."""
    session, witness = at.session, at.witness
    differs = at.comparison.violated or (at.watch is not None and at.watch.differs_on(witness))
    builds = session.runs.nondeterministic_builds(witness) if differs else ()
    if not builds:
        return None
    session.progress(f"{which_builds_give(builds)} other outputs on the same inputs: finding the first value "
                     "that differs")
    return locate(session.model, witness, local_target(session.config.target), builds)


def which_builds_give(builds) -> str:
    """``"the optimized build gives"``, ``"the reference and the optimized builds give"``."""
    return f"the {' and the '.join(builds)} build{'s give' if len(builds) > 1 else ' gives'}"


def determinism_answer(finding) -> Optional[Nondeterminism]:
    return finding.nondeterminism


def determinism_verdict(found: Optional[Nondeterminism]) -> StageVerdict:
    return StageVerdict(Stage.DETERMINISM, DeterminismVerdict.AGREES if found is None else DeterminismVerdict.DIFFERS,
                        at_fault=found is not None)


__all__ = ["Nondeterminism", "determinism_answer", "determinism_verdict", "judge_determinism", "locate",
           "which_builds_give"]
