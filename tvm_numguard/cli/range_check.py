"""``numguard check``: the static range check, no build, no run."""

from __future__ import annotations

import json

import click

from .commands import Command
from .groups import RangeCheckArgs, CompileArgs, ModelArgs, OutputArgs

EXIT_CODES = """\b
Exit codes:
  0  no operator can leave its domain or its dtype's range in the given range
  1  a possible defect: some operator can (the warnings say which, where, and driven by what)
     (or the pipeline does not build the model: the pass that breaks it is named)
  2  bad usage or input (one line on stderr says what)
  3  internal error in numguard (please report it)
  5  TVM cannot import the model (an operator its frontend has no converter for)"""


class Check(Command):
    name = "check"
    epilog = EXIT_CODES
    help = ("Predict, without building, which operators of MODEL and of its module after the pipeline's Relax "
            "passes can leave their domain (log of <= 0, division by 0, exp past the limit) or overflow their "
            "dtype for inputs in the range, and which part of the range drives them there.")

    def groups(self) -> dict:
        return {"outputs": OutputArgs("json"), "options": RangeCheckArgs(), "config": CompileArgs(builds=False),
                "model": ModelArgs()}

    def run(self, outputs, options, config, model) -> int:
        from ..api import public as api
        from ..locate.options import Options
        from ..report.range_check import check_document, check_summary
        from ..report.files import write_atomic
        console = self.console(outputs)
        options = Options(**options)
        console.progress(f"analysing {model.source} and its pipeline's Relax passes")
        with console.interruptible():
            result = api.range_check(model, config, options)
        data = check_document(result, model, config, options.rtol)
        if outputs.json:
            write_atomic(outputs.json, (json.dumps(data, indent=2, allow_nan=False) + "\n").encode())
        click.echo(check_summary(data))
        return result.exit_code
