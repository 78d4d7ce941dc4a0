"""The report document: data, schema validation, JSON, text summary."""

from __future__ import annotations

import json
import os
import shlex
from typing import Mapping, Optional

import numpy as np

from ..locate.bisect.result import Blame, document_blame
from ..base.numbers import plain
from ..judge.import_stage import ImportJudgement
from .files import write_atomic, write_witness
from .schemas import header, validate
from .sections import document

class Report:
    """What a run found, as a document. ``summary()`` is the text a terminal shows.

    ``Report.from_finding`` makes one of a Finding (kept as ``.finding``);
    ``Report(data)`` wraps a document read back (a verdict cache, a file)."""

    def __init__(self, data: dict, witness: Optional[Mapping[str, np.ndarray]] = None, finding=None,
                 plain_already: bool = False):
        data = {**header("report"), **data}
        self.data = data if plain_already else plain(data)  # JSON read back is plain: not walked again
        self.witness = witness
        self.finding = finding
        self._validated = False

    @classmethod
    def read_back(cls, data: dict) -> "Report":
        """The report of a document read back from JSON (a verdict cache, a
        file): plain already, so not walked again (a guard's cached compile
        spent 2% of a plain compile on that walk)."""
        return cls(data, plain_already=True)

    @classmethod
    def from_finding(cls, finding) -> "Report":
        """The report of ``finding``; it keeps the witness of a violation."""
        return cls(document(finding), witness=finding.witness if finding.at_fault else None, finding=finding)

    @property
    def violation(self) -> bool:
        """Something makes TVM compute other numbers than the model: a pass, or TVM's import."""
        return bool(self.data.get("at_fault", [])) or self.verdict == "violation"

    @property
    def imports(self):
        """TVM's reference against the model's framework (source.ImportJudgement; None: not run)."""
        if self.finding is not None:
            return self.finding.imports
        return ImportJudgement.from_json(self.data.get("framework"))

    @property
    def at_fault(self) -> list:
        """The stages at fault (finding.STAGES): "import", "pass"."""
        return list(self.data.get("at_fault", ["pass"] if self.verdict == "violation" else []))

    def blame(self) -> Blame:
        """What the report blames (the Finding's rule, also for a document read back)."""
        if self.finding is not None:
            return self.finding.blame()
        return document_blame(self.data.get("bisection"))

    @property
    def culprit(self) -> Optional[str]:
        """The one event blamed, if the bisection isolated one."""
        blame = self.blame()
        return blame.disable[0] if blame.kind == "culprit" else None

    @property
    def minimal_set(self) -> list:
        return list(self.blame().disable)

    @property
    def exit_code(self) -> int:
        return 1 if self.violation else 0

    def to_json(self) -> dict:
        """The document, validated against the schema (once until it changes)."""
        if not self._validated:
            validate(self.data)
            self._validated = True
        return self.data

    def add_diagnostics(self, lines) -> None:
        """What TVM or a frontend wrote to stderr while the command ran (the CLI held it back)."""
        self.data["diagnostics"] = list(lines)
        self._validated = False

    def with_section(self, name: str, section: dict) -> "Report":
        """A copy of this report (no finding, no witness) with section ``name`` replaced."""
        return Report({**self.data, name: section})

    @property
    def verdict(self) -> str:
        """"violation", "clean" or "benign"."""
        return self.data["verdict"]

    @property
    def witness_path(self) -> Optional[str]:
        """Where the witness was saved (None: not saved, or no violation)."""
        return self.data["witness"]["path"]

    @property
    def replay_line(self) -> str:
        """The command line that reruns this check (with ``--inputs`` once the witness is saved)."""
        return self.data["replay"]

    @property
    def environment(self) -> dict:
        """Where the report was made: versions, target, platform, working directory."""
        return self.data["environment"]

    @property
    def worst_score(self) -> float:
        """The witness's worst output score (inf when no output was compared)."""
        return max((float(m["score"]) for m in self.data["metrics"]), default=float("inf"))

    def save_witness(self, path: str) -> None:
        """Write the witness inputs and record where they are."""
        if self.witness is None:
            return
        write_witness(path, self.witness)
        self._validated = False
        self.data["witness"]["path"] = path
        replay = self.data["replay"].split(" --inputs ")[0]
        self.data["replay"] = replay + " --inputs " + shlex.quote(os.path.abspath(path))

    def write_json(self, path: str) -> None:
        text = json.dumps(self.to_json(), indent=2, sort_keys=False, allow_nan=False)
        write_atomic(path, (text + "\n").encode())

    def summary(self, program: str = "numguard") -> str:
        """The terminal summary; ``program``: how numguard was invoked, for its command lines."""
        from .text import render_summary

        return render_summary(self.data, program)
