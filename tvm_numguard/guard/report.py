"""What a guard block checked: one Report per compile call, in order."""

from __future__ import annotations

import json

from ..report import Report
from ..report.document import SCHEMA_VERSION


class GuardReport:
    """``g.report``: the entries (CLI-schema reports with a ``guard`` section)."""

    def __init__(self):
        self.entries: list = []

    def add(self, report: Report) -> None:
        self.entries.append(report)

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
        return {"schema_version": SCHEMA_VERSION, "kind": "guard", "entries": [r.to_json() for r in self.entries]}

    def to_text(self) -> str:
        return json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n"

    def summary(self) -> str:
        if not self.entries:
            return "numguard guard: no Relax compile was checked"
        lines = [f"numguard guard: {len(self.entries)} compile(s) checked, {len(self.violations)} with a violation"]
        for index, report in enumerate(self.entries):
            info = report.data["guard"]
            head = f"[{index}] {info['call']}: {report.data['verdict']}"
            if info["cached"]:
                head += " (cached verdict)"
            if info["disabled"]:
                head += f"; disabled {', '.join(info['disabled'])} ({info['returned']})"
            elif report.violation:
                head += f"; action {info['action']}"
            lines.append(head)
            if info.get("note"):
                lines.append(f"    note: {info['note']}")
            lines.extend("    " + line for line in report.summary().splitlines())
        return "\n".join(lines)
