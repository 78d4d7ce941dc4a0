"""One class per subcommand. Each names its option groups and what it adds;
``run`` gets the groups' objects and returns the exit code. Rendering lives
in ``report/``; here results are only written where the options say."""

from __future__ import annotations

import json
import os
import sys
from typing import Callable, Optional

import click

from ..base.errors import ModelError, PipelineBreaksError
from ..base.flags import invoked_as
from ..locate.options import DEFAULT_SEARCHES
from ..report.files import read_witness, write_atomic, write_witness
from .console import Console
from .groups import SearchArgs, CompileArgs, ModelArgs, OutputArgs, Outputs, WorkerArgs

EXIT_CODES = """\b
Exit codes:
  0  clean: no violation on the inputs judged (or the command has no verdict)
  1  violation: the optimized build differs from the reference beyond tolerance
     (or the pipeline does not build the model: the pass that breaks it is named)
  2  bad usage or input (one line on stderr says what)
  3  internal error in numguard (please report it)
  5  TVM cannot import the model: a valid model with an operator TVM's
     frontend has no converter for (TVM's limit; the line names a route that
     imports, where there is one)
  130  interrupted (a violation's witness is kept)
  143  terminated by SIGTERM (as 130: the witness kept, workers stopped)"""


HELP_ORDER = ("model", "corpus", "config", "options", "workers", "run", "outputs")


class Command:
    """``name``, ``help``; ``groups()`` in the order they parse (model last:
    loading is the slow part, after every cheap check); ``run(**objects)``."""

    name = ""
    help = ""
    arguments: tuple = ()  # click decorators for what only this command takes (handed to ``run`` as is)
    extra: tuple = ()
    epilog = EXIT_CODES  # the exit codes --help lists (a command with codes of its own says so)
    run: Callable[..., int]  # each command's own: its exit code

    def groups(self) -> dict:
        raise NotImplementedError

    def register(self, group: click.Group) -> None:
        groups = self.groups()

        def callback(**values):
            # the checks that import no TVM first (seconds saved on a typo), the model file's existence among them
            cheap = {key: g.parse(values) for key, g in groups.items() if key not in ("config", "model")}
            if "model" in groups and not os.path.exists(values["model"]):
                raise ModelError(f"model file not found: {values['model']}")
            parsed = {**cheap, **{key: g.parse(values) for key, g in groups.items() if key in ("config", "model")}}
            try:
                return self.run(**parsed, **values)
            except PipelineBreaksError as err:  # a compiler defect found, delivered like a verdict (exit 1)
                return deliver_build_failure(err, parsed.get("outputs"), self.name)

        for decorator in reversed(self.extra):
            callback = decorator(callback)
        # --help lists the groups model first, outputs last (click shows the outermost decorator first)
        for key in reversed([k for k in HELP_ORDER if k in groups]):
            callback = groups[key].apply(callback)
        for decorator in reversed(self.arguments):
            callback = decorator(callback)
        group.command(self.name, help=self.help, epilog=self.epilog)(callback)

    @staticmethod
    def console(outputs: Outputs) -> Console:
        ctx = click.get_current_context(silent=True)
        return Console(outputs.verbose, outputs.quiet, getattr(ctx, "obj", None) if ctx is not None else None)


def deliver(report, outputs: Outputs) -> int:
    """Keep the witness of every violation, write the report, show the summary. A
    witness kept before it was judged is named in the report whatever the verdict."""
    ctx = click.get_current_context(silent=True)
    kept = getattr(getattr(ctx, "obj", None), "witness_path", None) if ctx is not None else None
    if report.violation or kept == outputs.witness_path:
        report.save_witness(outputs.witness_path)
    diagnostics = held_back()
    if diagnostics:
        report.add_diagnostics(diagnostics)
    if outputs.json:
        report.write_json(outputs.json)
    click.echo(report.summary(invoked_as()))
    script = component_script(report)
    if script is not None:  # a part of TVM below the frontend is at fault: the repro a maintainer runs
        path = repro_path(outputs.witness_path)
        write_atomic(path, script.encode())
        click.echo(f"  script    {sys.executable if os.path.isabs(sys.executable) else 'python'} {path}   "
                   "(stock TVM and numpy, no numguard: TVM's number beside the truth)")
    return report.exit_code


def component_script(report) -> Optional[str]:
    """The standalone script of the part of TVM placed at fault (None: none, or no script)."""
    imports = report.imports
    placement = getattr(imports, "placement", None) if imports is not None else None
    at_fault = placement.at_fault if placement is not None and imports.differs else ()
    return at_fault[0].script if at_fault else None


def repro_path(witness_path: str) -> str:
    """Where the component's script goes: beside the witness, named as it is (``...-repro...py``)."""
    directory, name = os.path.split(witness_path)
    stem = os.path.splitext(name)[0]
    stem = stem.replace("witness", "repro") if "witness" in stem else stem + ".repro"
    return os.path.join(directory, stem + ".py")


def deliver_build_failure(err, outputs: Optional[Outputs], command: str) -> int:
    """Write a build failure's document where --json says, show its summary; exit code 1."""
    from ..report.build_failure_text import build_failure_document, build_failure_summary

    if outputs is not None and outputs.json:
        data = build_failure_document(err.failure, err.config, err.model, command, held_back())
        write_atomic(outputs.json, (json.dumps(data, indent=2, allow_nan=False) + "\n").encode())
    # the head is greppable
    click.echo(build_failure_summary(err.failure, err.config, err.model, f"numguard {command}"))
    return 1


def held_back() -> list:
    """What TVM and the frontends wrote to stderr so far in this command (``main`` holds it back)."""
    ctx = click.get_current_context(silent=True)
    invocation = getattr(ctx, "obj", None) if ctx is not None else None
    captured = getattr(invocation, "captured", None)
    return captured.lines() if captured is not None else []


def keep_witness(outputs: Outputs, console: Console):
    """Write a violation's witness as soon as it is found: a phase after it
    that is interrupted (Ctrl-C, a crash inside TVM) must not lose it."""
    path = outputs.witness_path

    def keep(witness) -> None:
        write_witness(path, witness)
        console.witness_path = path
        console.progress(f"witness saved to {path} (kept whatever happens next)")
    return keep


class Bisect(Command):
    name = "bisect"
    help = "Find the pass that makes MODEL's optimized build differ from its reference build."

    def groups(self) -> dict:
        return {"outputs": OutputArgs("json", "save_inputs"), "options": SearchArgs(), "config": CompileArgs(),
                "workers": WorkerArgs(), "model": ModelArgs()}

    extra = (click.option("--inputs", "inputs_path", type=click.Path(),
                          help="Check these inputs (.npz, e.g. a saved witness) instead of searching."),)

    def run(self, outputs, options, config, workers, model, inputs_path=None) -> int:
        from ..api import public as api

        console = self.console(outputs)
        given = read_witness(inputs_path) if inputs_path else None
        with console.interruptible():
            report = api.bisect(model, config, options, inputs=given, progress=console.progress,
                                on_build=console.on_build, on_witness=keep_witness(outputs, console),
                                workers=workers)
        return deliver(report, outputs)


class Search(Command):
    name = "search"
    help = "Search the range for the inputs where MODEL's optimized build is worst (no bisection)."

    def groups(self) -> dict:
        return {"outputs": OutputArgs("json", "save_inputs", "plot"),
                "options": SearchArgs(search_default=DEFAULT_SEARCHES, bisect=False), "config": CompileArgs(),
                "workers": WorkerArgs(), "model": ModelArgs()}

    def run(self, outputs, options, config, workers, model) -> int:
        from ..api import public as api
        from ..report.plot import write_search_plot
        from ..report.text import searches_line

        console = self.console(outputs)
        with console.interruptible():
            report = api.search(model, config, options, progress=console.progress, on_build=console.on_build,
                                workers=workers)
        if outputs.plot:
            write_search_plot(report.data, outputs.plot)
        code = deliver(report, outputs)
        click.echo(searches_line(report.finding.search.searches))
        return code


class Trace(Command):
    name = "trace"
    help = "Bisect MODEL's pipeline, then show which pass added how much error, where it starts, how it spreads."

    def groups(self) -> dict:
        return {"outputs": OutputArgs("json", "save_inputs", "html", "dot", "plot"), "options": SearchArgs(),
                "config": CompileArgs(), "workers": WorkerArgs(), "model": ModelArgs()}

    def run(self, outputs, options, config, workers, model) -> int:
        from ..report.propagation_svg import propagation_dot
        from ..report.html import render_html
        from ..report.plot import pass_errors_png
        from ..fixes import load as load_fix
        from ..report.text import trace_lines
        from ..api.trace.tracer import trace

        console = self.console(outputs)
        with console.interruptible():
            report = trace(model, config, options, progress=console.progress, on_build=console.on_build,
                           on_witness=keep_witness(outputs, console), workers=workers)
        code = deliver(report, outputs)
        traced = report.finding.trace
        if outputs.html:  # a clean check gets its page too, saying so
            fix = load_fix(config.fix_file).document if config.fix_file else None
            write_atomic(outputs.html, render_html(report.data, invoked_as(), fix).encode())
        if traced is None:
            why = ("TVM's import is at fault, not a pass (the first node it computes differently is named above)"
                   if "import" in report.at_fault else "no violation on the searched inputs")
            click.echo(f"  trace     nothing to trace: {why}"
                       + (f" (the page {outputs.html} says so)" if outputs.html else ""))
            return code
        click.echo(trace_lines(traced.to_json()))
        if outputs.dot:
            write_atomic(outputs.dot, propagation_dot(traced.localization.graph).encode())
        if outputs.plot and traced.passes:
            write_atomic(outputs.plot, pass_errors_png(report.data))
        return code


class Passes(Command):
    name = "passes"
    help = ("List the pass events of one compilation: id, level, kind, changed, time. Top-level events only "
            "(what a bisection may skip); --all adds the nested ones. A pipeline that does not build lists the "
            "events up to where it stopped and exits 1 (numguard bisect names the pass that breaks it).")

    def groups(self) -> dict:
        return {"outputs": OutputArgs("json"), "config": CompileArgs(), "model": ModelArgs()}

    extra = (click.option("--all", "show_all", is_flag=True,
                          help="Also list nested events (passes run inside other passes)."),)

    def run(self, outputs, config, model, show_all=False) -> int:
        from ..api import public as api
        from ..report.text import event_table

        console = self.console(outputs)
        with console.interruptible():
            rows = api.list_passes(model, config, progress=console.progress, on_build=console.on_build)
        rows = [r for r in rows if r["ran"] and (show_all or "/" not in r["id"])]
        if outputs.json:
            write_atomic(outputs.json, (json.dumps({"events": rows}, indent=2) + "\n").encode())
        click.echo(event_table(rows, nested_hidden=not show_all))
        # a pipeline that does not build is a finding (exit 1), as for every command
        return 1 if any("build_error" in r for r in rows) else 0


class Replay(Command):
    name = "replay"
    help = "Rerun a report's witness with its recorded configuration: does the violation still show?"

    def groups(self) -> dict:
        return {"outputs": OutputArgs("json")}

    arguments = (click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=True)),)

    def run(self, outputs, report_path) -> int:
        from ..api.replay import replay as replay_report

        console = self.console(outputs)
        with console.interruptible():
            result = replay_report(report_path, progress=console.progress, on_build=console.on_build,
                                   program=invoked_as())
        if outputs.json:
            result.write_json(outputs.json)
        click.echo(result.summary())
        return result.exit_code



FIX_EXIT_CODES = """\b
Exit codes:
  0  a verified fix was written (or there was nothing to fix: no file written)
  1  no fix verifies (the document written says why), or TVM's import
     differs from the model and no pass does (no file: nothing to apply)
  2  bad usage or input (one line on stderr says what)
  3  internal error in numguard (please report it)
  5  TVM cannot import the model (an operator its frontend has no converter for)
  130  interrupted
  143  terminated by SIGTERM"""


class Fix(Command):
    name = "fix"
    help = ("Bisect MODEL, then find the fewest places where the culprit pass must be kept from acting "
            "(operators kept in float32, exact kernels kept, a rewrite undone); verify it on a fresh search "
            "and measure what the safety costs. Writes the fix to apply with --apply-fix or fixes.load.")
    epilog = FIX_EXIT_CODES

    def groups(self) -> dict:
        return {"outputs": OutputArgs("save_inputs", "html"), "options": SearchArgs(), "config": CompileArgs(),
                "workers": WorkerArgs(), "model": ModelArgs()}

    extra = (click.option("-o", "--output", "fix_path", default="numguard-fix.json", show_default=True,
                          type=click.Path(), help="Where to write the fix document."),
             click.option("--no-cost", "no_cost", is_flag=True,
                          help="Skip timing the unsafe, narrowly fixed and pass-off builds."))

    def run(self, outputs, options, config, workers, model, fix_path="numguard-fix.json", no_cost=False) -> int:
        from ..build.session import RunContext
        from ..fixes import find_fix, fix_document
        from ..base.progress import waiting
        from ..fixes.cost import RUNS, cost_table
        from ..fixes.fix_file import FIX_SCHEMA
        from ..report.fix import fix_html, fix_summary
        from ..report.schemas import validate

        console = self.console(outputs)
        context = RunContext.of(console.progress, console.on_build, keep_witness(outputs, console), workers)
        with console.interruptible():
            outcome = find_fix(model, config, options, context)
            if outcome.nothing_to_fix:
                return nothing_to_fix(outcome)
            cost = None
            if outcome.narrowings and not no_cost:
                console.progress("measuring the cost of safety (unsafe, narrow fix, pass off)")
                with waiting(console.progress, "the cost of safety: three builds, their VMs and "
                             f"{RUNS} timed runs of each"):
                    cost = cost_table(model.mod, config, outcome.plan, list(outcome.narrowings.values()),
                                      outcome.first.searched_witness, model.input_names(), workers)
        document = fix_document(outcome, model, config, options, cost, fix_path)
        validate(document, FIX_SCHEMA)
        write_atomic(fix_path, (json.dumps(document, indent=2, allow_nan=False) + "\n").encode())
        if outputs.html:
            write_atomic(outputs.html, fix_html(document).encode())
        click.echo(fix_summary(document, invoked_as(), fix_path))
        return 0 if outcome.verified else 1


def nothing_to_fix(outcome) -> int:
    """No pass to fix: say so, and an import finding met beside (exit 1: a finding no fix mends)."""
    from ..fixes.fix_file import imports_json
    from ..report.fix import import_lines

    if outcome.imports is None:
        click.echo("numguard fix: no violation on the searched inputs: nothing to fix (no fix written)")
        return 0
    click.echo("numguard fix: no pass changes what the model computes on the searched inputs (against TVM's "
               "reference build): no pass to fix (no fix written)\n"
               + "\n".join(import_lines(imports_json(outcome.imports), fixed=False)))
    return 1


COMMANDS = (Bisect(), Search(), Trace(), Passes(), Replay(), Fix())
