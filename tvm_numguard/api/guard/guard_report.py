"""What a guard block judged: one Report per compile call, in order."""

from __future__ import annotations

import dataclasses
import json
from typing import Optional

from ...base.frozen import freeze_fields
from ...report import Report
from ...report.schemas import header
from ...locate import Budget
from ...ir.narrow.plan import FixPlan
from .chain import ChainVerdict


@dataclasses.dataclass(frozen=True)
class GuardInfo:
    """The ``guard`` section of a guarded compile's report: the call, what was
    done (``returned``: "optimized", "narrow fix", "culprit disabled" or
    "reference"), the events ``disabled`` or the narrow ``fix``, and on how
    many inputs that build was verified."""

    call: str
    action: str
    budget: Budget
    note: Optional[str] = None
    prelude: list = dataclasses.field(default_factory=list)
    builds: str = "in-process"  # where the builds that judged the call ran, and why (see Guard._workers)
    cached: bool = False
    disabled: list = dataclasses.field(default_factory=list)
    verified_inputs: int = 0
    returned: str = "optimized"
    chain: Optional[ChainVerdict] = None
    fix: FixPlan = FixPlan()  # the narrow fix returned (empty: none)
    not_narrowed: Optional[str] = None  # why the remedy "narrow" returned no narrow fix, where it did not
    prelude_calls: list = dataclasses.field(default_factory=list)  # where the code applied them: PassCall.to_json

    def __post_init__(self):
        freeze_fields(self, "prelude", "disabled", "prelude_calls")

    def to_json(self) -> dict:
        return {"call": self.call, "action": self.action, "cached": self.cached, "note": self.note,
                "builds": self.builds,
                "prelude": list(self.prelude), "budget": self.budget.to_json(), "disabled": list(self.disabled),
                "verified_inputs": self.verified_inputs, "returned": self.returned,
                "chain": self.chain.to_json() if self.chain is not None else None, "fix": self.fix.to_json(),
                "not_narrowed": self.not_narrowed, "prelude_calls": list(self.prelude_calls)}

    @classmethod
    def from_json(cls, data: dict) -> "GuardInfo":
        """The section read back (a cached verdict's)."""
        chain = data.get("chain")
        return cls(data["call"], data["action"], Budget(**data["budget"]), data.get("note"),
                   list(data.get("prelude", [])), data.get("builds", "in-process"), bool(data.get("cached")),
                   list(data.get("disabled", [])), int(data.get("verified_inputs", 0)),
                   data.get("returned", "optimized"), ChainVerdict.from_json(chain) if chain else None,
                   FixPlan.from_json(data.get("fix")), data.get("not_narrowed"), list(data.get("prelude_calls", [])))



class GuardReport:
    """``g.report``: the entries (CLI-schema reports with a ``guard`` section)."""

    def __init__(self):
        self.entries: list = []
        self._infos: list = []  # the GuardInfo of each entry

    def add(self, report: Report, info: GuardInfo) -> None:
        self.entries.append(report)
        self._infos.append(info)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __getitem__(self, index) -> Report:
        return self.entries[index]

    @property
    def violations(self) -> list:
        return [r for r in self.entries if r.violation]

    def to_json(self) -> dict:
        return {**header("guard"), "entries": [r.to_json() for r in self.entries]}

    def to_text(self) -> str:
        return json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n"

    def summary(self) -> str:
        if not self.entries:
            return "numguard guard: no Relax compile was judged"
        lines = [f"numguard guard: {len(self.entries)} compile(s) judged, {len(self.violations)} with a violation"]
        for index, (report, info) in enumerate(zip(self.entries, self._infos)):
            head = f"[{index}] {info.call}: {report.verdict}"
            if "import" in report.at_fault:
                head += "; TVM's import differs from the model's framework (no pass to switch off)"
            if info.cached:
                head += " (cached verdict)"
            if info.disabled:
                head += f"; disabled {', '.join(info.disabled)} ({info.returned})"
            elif report.violation:
                head += f"; action {info.action}"
            lines.append(head)
            if info.note:
                lines.append(f"    note: {info.note}")
            lines.extend("    " + line for line in report.summary().splitlines())
        return "\n".join(lines)


def import_message(imports) -> str:
    """The guard's warning for an import difference (source.ImportJudgement): what
    differs, and that no pass can be switched off for it."""
    where = f"; first at {imports.origin.text()}" if imports.origin is not None else ""
    worst = max((o.score for o in imports.outputs), default=float("inf"))
    return (f"numguard: TVM's import computes other numbers than {imports.framework} (score {worst:.3g} on the "
            f"witness){where}. numguard cannot change the frontend: no pass is switched off for it, and the build is "
            "returned as the compile made it")
