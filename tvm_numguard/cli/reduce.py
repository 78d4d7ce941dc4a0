"""``numguard reduce``: a regress report's violation cut down to a repro folder."""

from __future__ import annotations

import json
import os
import tempfile

import click

from ..base.errors import ReportError, UsageError
from ..report.schemas import kind_of
from .commands import Command
from .groups import OutputArgs

EXIT_CODES = """\b
Exit codes:
  0  the repro is written and verified: it violates with the pass, twice
  1  the repro is written but did not verify (repro.json says which check failed)
  2  bad usage, or no cut of the model shows the violation (one line says why)
  3  internal error in numguard (please report it)"""


def violation_row(report: dict, model, pass_spec) -> dict:
    """The report's violation row to reduce: the first one, or the one ``model``/``pass_spec`` name."""
    if kind_of(report) != "regress":
        raise ReportError("numguard reduce takes a 'numguard regress --json' report (kind regress)")
    rows = [r for r in report["rows"] if r["verdict"] == "violation" and r.get("witness")
            and (model is None or r["model"] == model) and (pass_spec is None or r["pass_spec"] == pass_spec)]
    if not rows:
        wanted = " ".join(filter(None, (model and f"model {model}", pass_spec and f"pass {pass_spec}")))
        raise UsageError(f"the report has no violation row{' for ' + wanted if wanted else ''} to reduce")
    return rows[0]


class Reduce(Command):
    name = "reduce"
    epilog = EXIT_CODES
    help = ("Cut a violation from a 'numguard regress --json' report down to a few Relax operators: writes the "
            "TVMScript model, its constants, the witness and a ready pytest file to --out.")

    def groups(self) -> dict:
        return {"outputs": OutputArgs()}

    arguments = (click.argument("report_path", metavar="REPORT.json", type=click.Path(exists=True, dir_okay=False)),)
    extra = (
        click.option("-o", "--out", "out_dir", default="repro", show_default=True, type=click.Path(),
                     help="The folder the repro is written to."),
        click.option("--model", "model_name", metavar="NAME",
                     help="Reduce this model's violation (default: the first)."),
        click.option("--pass", "pass_spec", metavar="SPEC", help="Reduce this pass's violation (default: the first)."),
        click.option("--max-builds", default=20, show_default=True, type=int,
                     help="The build budget of the reduction."),
    )

    def run(self, outputs, report_path, out_dir="repro", model_name=None, pass_spec=None, max_builds=20) -> int:
        from ..ir.pipeline import CompileConfig
        from ..testing.reduce import reduce_violation, write_repro
        from ..testing.regress.corpus import CorpusModel
        from ..report.files import read_witness
        from ..base.tolerance import Tolerance

        if max_builds < 5:
            raise UsageError(f"--max-builds must be >= 5 (a probe, one cut and the verification), got {max_builds}")
        try:
            with open(report_path) as f:
                report = json.load(f)
        except (OSError, ValueError) as err:
            raise ReportError(f"{report_path}: not a JSON report ({type(err).__name__})") from None
        row = violation_row(report, model_name, pass_spec)
        request = next((r for r in report.get("requests", ()) if r["pass"] == row["pass_spec"]), None)
        if request is None:
            raise ReportError(f"{report_path} does not record the configuration of {row['pass_spec']} (a report "
                              "from an older numguard): run 'numguard regress --json' again")
        config = CompileConfig(**request["config"])
        tol = Tolerance(**request["tolerance"])
        entry = CorpusModel.from_json(next(m for m in report["models"] if m["name"] == row["model"]))
        console = self.console(outputs)
        console.progress(f"reducing {row['pass_spec']} on {row['model']} (at most {max_builds} builds)")
        with tempfile.TemporaryDirectory(prefix="numguard_reduce_") as workdir, console.interruptible():
            model = entry.load(workdir)
            reduction = reduce_violation(model, config, read_witness(row["witness"]), tol, budget=max_builds,
                                         progress=console.progress)
        record = write_repro(out_dir, reduction, config, tol, {"model": row["model"], "replay": row.get("replay"),
                                                               "report": os.path.abspath(report_path)})
        verified = reduction.verified
        click.echo(f"reduced {row['pass_spec']} on {row['model']}: {reduction.operators_before} -> "
                   f"{reduction.operators} Relax operator(s) in {reduction.builds} builds "
                   f"(score {reduction.score:.3g})")
        click.echo(f"  reproduces twice: {'yes' if verified['reproduced_twice'] else 'NO'}; clean without the pass "
                   f"(float64): {_yes_no(verified['clean_without_pass'])}")
        click.echo(f"  written to {out_dir}/: {', '.join(record['files'])}, repro.json")
        click.echo(f"  run: python -m pytest {os.path.join(out_dir, 'test_repro.py')}")
        return 0 if verified["reproduced_twice"] and verified["clean_without_pass"] is not False else 1


def _yes_no(value) -> str:
    return "unknown (no float64 build)" if value is None else ("yes" if value else "NO")
