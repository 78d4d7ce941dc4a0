"""``numguard replay REPORT.json``: does a recorded finding still show?

Reads a report of ``numguard bisect``, ``search`` or ``trace``, checks that the
model file is the one the report was made from (same sha256 of its bytes) and
that its witness is there, rebuilds the optimized and the reference build with
the recorded configuration, runs both on the witness and compares them. When the
report named a culprit, it also checks that skipping that event alone still
clears the violation. Returns a :class:`ReplayResult` (data, a text summary, a
small JSON document); nothing prints. Bad input raises ``ReportError``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Callable, Optional

import numpy as np

from ..base.errors import RangeError, ReportError, first_line
from ..base.flags import as_invoked
from ..ir.pipeline import CompileConfig
from ..base.numbers import plain
from ..judge.finding import Finding
from ..report import Report, environment, validate
from ..report.files import read_witness, write_atomic
from ..report.schemas import header
from ..report.text import num, score_text
from ..locate import resolve_ranges
from ..base.tolerance import Tolerance
from ..base.compare import Comparison

LABELS = {"tvm_version": "TVM", "numpy_version": "numpy", "python": "Python", "target": "target",
          "platform": "platform"}


@dataclasses.dataclass
class ReplayResult:
    report_path: str
    command: str  # the command that wrote the report
    model: str  # the model file replayed (resolved)
    sha256: str
    witness: str  # the witness file replayed (resolved)
    config: CompileConfig
    tolerance: Tolerance  # as recorded: None is the default for the output's dtype
    comparison: Comparison
    recorded_score: Optional[float]  # the witness's score in the report
    witness_in_range: bool
    # the report's culprit, if it named one and the violation shows: {"id", "still_clears"
    # (skipping it alone clears the violation now; None: untested), "score", "note" (why untested)}
    culprit: Optional[dict]
    recorded_environment: dict
    current_environment: dict
    builds: dict

    @property
    def reproduces(self) -> bool:
        return self.comparison.violated

    @property
    def exit_code(self) -> int:
        return 1 if self.reproduces else 0

    @property
    def changes(self) -> list:
        """What differs between the report's environment and now, e.g. ``TVM 0.27.0 -> 0.28.0``."""
        old, new = self.recorded_environment, self.current_environment
        return [f"{label} {old[key]} -> {new[key]}" for key, label in LABELS.items()
                if key in old and key in new and old[key] != new[key]]

    def to_json(self) -> dict:
        """The replay result document (``--json``); inf/NaN as strings like a report's."""
        return plain({
            **header("replay"),
            "report": self.report_path, "command": self.command,
            "model": {"source": self.model, "sha256": self.sha256},
            "witness": {"path": self.witness, "in_range": self.witness_in_range},
            "configuration": {**self.config.to_json(), **self.tolerance.to_json()},
            "reproduces": self.reproduces, "exit_code": self.exit_code,
            "score": self.comparison.score, "recorded_score": self.recorded_score,
            "metrics": self.comparison.to_json(),  # per output, as in a report's "metrics"
            "culprit": self.culprit,
            "environment": {"recorded": self.recorded_environment, "now": self.current_environment},
            "changes": self.changes, "builds": self.builds,
        })

    def write_json(self, path: str) -> None:
        text = json.dumps(self.to_json(), indent=2, allow_nan=False)
        write_atomic(path, (text + "\n").encode())

    def summary(self) -> str:
        since = "; ".join(self.changes) or "nothing in the environment changed"
        score = f"score {num(self.comparison.score)} now, {num(self.recorded_score)} in the report"
        if not self.reproduces:
            return f"numguard replay: the finding no longer reproduces ({score}); {since}"
        cfg, mark = self.config, "" if self.witness_in_range else "  (outside the recorded range)"
        lines = [f"numguard replay: VIOLATION, the finding reproduces ({self.report_path}, numguard {self.command})",
                 f"  model     {self.model}  (sha256 {self.sha256[:12]}, as in the report)",
                 f"  pipeline  {cfg.pipeline}   tir: {cfg.tir_pipeline}   target: {cfg.target}",
                 f"  witness   {self.witness}{mark}"]
        for m in self.comparison.outputs:
            lines.append(f"  output {m.index}  max abs {num(m.max_abs)}  max rel {num(m.max_rel)}  max ulp "
                         f"{num(m.max_ulp)}  violating {m.violations}/{math.prod(m.shape)}  {score_text(m.score)}")
        lines.append(f"  replayed  {score}")
        c = self.culprit
        if c is not None and c["still_clears"] is None:
            lines.append(f"  culprit   {c['id']}: not tested ({c['note']})")
        elif c is not None:
            does = "still clears" if c["still_clears"] else "no longer clears"
            lines.append(f"  culprit   {c['id']}: skipping it alone {does} the violation ({score_text(c['score'])})")
        lines.append(f"  since     {since}")
        lines.append(f"  builds    {self.builds['builds']} in all, {num(self.builds['build_seconds'])} s compiling")
        return "\n".join(lines)


def load_report(path: str) -> dict:
    """The report at ``path``, validated against the schema."""
    if not os.path.isfile(path):
        raise ReportError(f"report {'path is a directory' if os.path.isdir(path) else 'file not found'}: {path}")
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError) as err:
        raise ReportError(f"{path}: not a numguard report: not JSON ({first_line(err, 120)})") from None
    try:
        validate(data)
    except Exception as err:  # jsonschema.ValidationError: "'verdict' is a required property" (at $.x)
        where = getattr(err, "json_path", "$")
        message = first_line(getattr(err, "message", str(err)), 120) + (f" (at {where})" if where != "$" else "")
        raise ReportError(f"{path}: not a numguard report: {message}") from None
    return data


def _locate(what: str, recorded: str, report_path: str, typed_in: Optional[str]) -> str:
    """A file the report names: as recorded (relative to the working
    directory), else relative to the report's folder, else next to the report,
    else relative to the folder the report's command ran in (``typed_in``)."""
    folder = os.path.dirname(os.path.abspath(report_path))
    candidates = [recorded, os.path.join(folder, recorded), os.path.join(folder, os.path.basename(recorded))]
    if typed_in:
        candidates.append(os.path.join(typed_in, recorded))
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise ReportError(f"{what} file not found: {recorded} (named in {report_path})")


def replay(report_path: str, progress: Optional[Callable[[str], None]] = None, on_build=None,
           program: str = "numguard") -> ReplayResult:
    """Rebuild a report's configuration and rerun its witness (see the module
    docstring); ``program``: how numguard is run here (a command line an error
    names starts with it)."""
    from ..engine.engine import coerce_given_inputs
    from ..ir.model import file_sha256, load_model
    from ..build.session import RunContext
    from ..build.session import BuildSession

    report = Report.read_back(load_report(report_path))
    finding = Finding.from_json(report.data)
    if finding.command == "guard":
        raise ReportError(f"{report_path}: a guard report's model was an in-memory module; it cannot be replayed "
                          "from the command line")
    if finding.import_differs and not finding.violation:
        raise ReportError(f"{report_path}: nothing for replay to rebuild: the report blames TVM's import, not a "
                          f"pass; its replay line reruns it with the framework: "
                          f"{as_invoked(report.replay_line, program)}")
    if not finding.violation or not report.witness_path:
        raise ReportError(f"{report_path}: nothing to replay: the report's verdict is {finding.verdict} "
                          "and it has no witness")
    typed_in = report.environment.get("cwd")
    witness_path = _locate("witness", report.witness_path, report_path, typed_in)
    model_path = _locate("model", finding.model.source, report_path, typed_in)
    sha = file_sha256(model_path)
    if sha != finding.model.sha256:
        raise ReportError(f"{model_path}: the report was made from a different model file "
                          f"(sha256 {finding.model.sha256[:12]}, this file has {sha[:12]})")
    config = finding.config
    config.validate()
    # the recorded shapes include any --shape the report was made with
    model = load_model(model_path, {spec.name: spec.shape for spec in finding.model.inputs if spec.shape},
                       import_at_shapes=finding.model.dims == "fixed")
    try:
        witness = coerce_given_inputs(model, read_witness(witness_path))
        ranges = resolve_ranges(model.inputs, None, None, finding.options.ranges)
    except RangeError as err:
        raise ReportError(f"{witness_path}: {err}") from None
    in_range = all(float(np.min(witness[n])) >= r.low and float(np.max(witness[n])) <= r.high
                   for n, r in ranges.items())
    session = BuildSession(model, config, finding.options.tolerance, RunContext.of(progress, on_build).in_process())
    session.prepare(record=False)
    comparison = session.runs.compare(session.built, witness)
    culprit = _confirm_culprit(session, witness, finding.blame()) if comparison.violated else None
    recorded = finding.comparison.score if finding.comparison.outputs else None
    return ReplayResult(report_path, finding.command, model_path, sha, witness_path, config, session.tol, comparison,
                        recorded, in_range, culprit, report.environment, environment(config.target),
                        session.memo.timing())


def _confirm_culprit(session, witness, blame) -> Optional[dict]:
    """Does skipping the culprit the report blamed alone still clear the violation?"""
    if blame.kind != "culprit":
        return None
    found = {"id": blame.disable[0], "still_clears": None, "score": None, "note": None}
    if found["id"] not in {e.id for e in session.optional}:
        return {**found, "note": "it is no longer an optional pass event of this pipeline"}
    build = session.build([found["id"]])
    if not build.ok:
        return {**found, "note": f"the build without it fails: {build.error}"}
    score = session.runs.compare(build, witness).score
    return {**found, "still_clears": score <= 1.0, "score": score}
