"""The ``numguard`` command line. Exit 0: clean; 1: violation; 2: bad usage or input."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import warnings

import click

from . import api
from .errors import NumguardError, UsageError
from .pipeline import CompileConfig
from .report.files import check_writable, read_witness, write_atomic, write_witness
from .report.text import _num
from .search import parse_budget, parse_range_spec


def _fail(message: str) -> None:
    raise UsageError(message)


class Interrupted(Exception):
    """Ctrl-C: ``main`` prints the message and exits 130."""


class Console:
    """Where the CLI's own words go: progress to stderr on a terminal, trace with -v.
    It also knows where a violation's witness was kept, to say so on Ctrl-C."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.interactive = sys.stderr.isatty()
        self.builds = 0
        self.witness_path = None

    @contextlib.contextmanager
    def interruptible(self):
        """Turn a Ctrl-C inside the block into Interrupted, naming the witness if one was kept."""
        try:
            yield
        except KeyboardInterrupt:
            kept = (f"the witness of the violation found is kept in {self.witness_path}" if self.witness_path
                    else "no violation had been found yet")
            raise Interrupted(f"interrupted; {kept}") from None

    def progress(self, message: str) -> None:
        if self.interactive or self.verbose:
            click.echo(f"numguard: {message}", err=True)

    def on_build(self, build) -> None:
        self.builds += 1
        if not self.verbose:
            return
        click.echo(f"BISECT: build {self.builds}: {len(build.skip)} events skipped"
                   + ("" if build.ok else f", FAILED: {build.error}"), err=True)
        for line in build.trace:
            click.echo(line, err=True)


def _parse_shapes(values) -> dict:
    shapes = {}
    for text in values:
        name, sep, dims = text.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            _fail(f"--shape '{text}' must look like NAME=1,3,224,224")
    return shapes


def model_options(f):
    @click.argument("model", type=click.Path(dir_okay=True))
    @click.option("--shape", "shapes", multiple=True, metavar="NAME=D0,D1,...", help="Fix an input's shape (dynamic dims).")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


def pipeline_options(f):
    @click.option("--pipeline", default="default", show_default=True,
                  help="Comma-separated Relax parts: zero, default, a relax.transform pass name, module:callable.")
    @click.option("--tir-pipeline", default="default", show_default=True, help="Comma-separated TIR parts around 'default'.")
    @click.option("--target", default="llvm", show_default=True)
    @click.option("--opt-level", default=3, show_default=True, type=int)
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


def check_options(f):
    @click.option("--low", type=float, help="Lower bound for every input.")
    @click.option("--high", type=float, help="Upper bound for every input.")
    @click.option("--range", "range_specs", multiple=True, metavar="NAME=LO:HI", help="Bounds for one input.")
    @click.option("--rtol", type=float, help="Relative tolerance (default by dtype: 1e-5 for float32).")
    @click.option("--atol", type=float, help="Absolute tolerance (default by dtype: 1e-6 for float32).")
    @click.option("--budget", default="200,60s", show_default=True,
                  help="Search budget: evaluations (200), seconds (60s, 2m) or both (200,60s).")
    @click.option("--seed", default=0, show_default=True, type=int)
    @click.option("--no-oracle", "no_oracle", is_flag=True,
                  help="Do not excuse differences that a float64 build shows are not worse than the reference's.")
    @click.option("--inputs", "inputs_path", type=click.Path(), help="Use these inputs (.npz, e.g. a saved witness) instead of sampling.")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


def output_options(f):
    @click.option("--json", "json_path", type=click.Path(), help="Write the report as JSON (validated against the schema).")
    @click.option("-v", "--verbose", is_flag=True, help="Print an opt-bisect style trace line per pass event of every build.")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


def _load(model, shapes):
    from .model import load_model

    return load_model(model, _parse_shapes(shapes))


def _config(pipeline, tir_pipeline, target, opt_level) -> CompileConfig:
    config = CompileConfig(pipeline=pipeline, tir_pipeline=tir_pipeline, target=target, opt_level=opt_level)
    config.validate()
    return config


@click.group()
@click.version_option(package_name="tvm_numguard")
def cli():
    """Find the TVM compiler pass that changes what a model computes."""


@cli.command()
@model_options
@pipeline_options
@check_options
@click.option("--search", "search", type=click.Choice(["evolve", "boundary", "random"]), default="evolve",
              show_default=True, help="How to search the range for inputs where the builds differ.")
@click.option("--strategy", type=click.Choice(["bisect", "linear"]), default="bisect", show_default=True,
              help="bisect: log2(events) builds; linear: one build per event (TracNe style).")
@click.option("--save-inputs", "save_inputs", type=click.Path(), help="Where to save the witness (.npz).")
@output_options
def bisect(model, shapes, pipeline, tir_pipeline, target, opt_level, low, high, range_specs, rtol, atol, budget,
           seed, no_oracle, inputs_path, search, strategy, save_inputs, json_path, verbose):
    """Find the pass that makes MODEL's optimized build differ from its reference build."""
    console = Console(verbose)
    _check_paths(json_path, save_inputs)
    options = _options(low, high, range_specs, rtol, atol, budget, seed, no_oracle, search=search, strategy=strategy)
    config = _config(pipeline, tir_pipeline, target, opt_level)
    loaded = _load(model, shapes)
    given = read_witness(inputs_path) if inputs_path else None
    with console.interruptible():
        report = api.bisect(loaded, config, options, inputs=given, progress=console.progress, on_build=console.on_build,
                            on_witness=_keep_witness(save_inputs, json_path, console))
    return _deliver(report, json_path, save_inputs)


@cli.command("search")
@model_options
@pipeline_options
@check_options
@click.option("--search", "strategies", default="random,boundary,evolve", show_default=True,
              help="Comma-separated strategies, each run with the same budget and seed.")
@click.option("--save-inputs", "save_inputs", type=click.Path(), help="Where to save the witness (.npz).")
@click.option("--plot", "plot_path", type=click.Path(), help="Write the best score over evaluations as a PNG.")
@output_options
def search_command(model, shapes, pipeline, tir_pipeline, target, opt_level, low, high, range_specs, rtol, atol,
                   budget, seed, no_oracle, inputs_path, strategies, save_inputs, plot_path, json_path, verbose):
    """Search the range for the inputs where MODEL's optimized build is worst."""
    from .report.plot import write_search_plot
    from .search import STRATEGIES

    console = Console(verbose)
    _check_paths(json_path, save_inputs, plot_path)
    if inputs_path:
        _fail("--inputs is for bisect; search makes its own inputs")
    names = [n.strip() for n in strategies.split(",") if n.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if not names or unknown:
        _fail(f"--search takes a comma-separated list of {', '.join(STRATEGIES)}; got '{strategies}'")
    options = _options(low, high, range_specs, rtol, atol, budget, seed, no_oracle)
    config = _config(pipeline, tir_pipeline, target, opt_level)
    loaded = _load(model, shapes)
    with console.interruptible():
        report = api.search(loaded, config, options, names, progress=console.progress, on_build=console.on_build)
    if plot_path:
        write_search_plot(report.data, plot_path)
    code = _deliver(report, json_path, save_inputs)
    click.echo("  strategies " + "; ".join(
        f"{r['strategy']}: best score {r['best_score']:.3g} in {r['evaluations']} evaluations ({r['invalid']} invalid)"
        if not isinstance(r["best_score"], str) else f"{r['strategy']}: best score {r['best_score']}"
        for r in report.data["search"]["strategies"]))
    return code


@cli.command("trace")
@model_options
@pipeline_options
@check_options
@click.option("--search", "search", type=click.Choice(["evolve", "boundary", "random"]), default="evolve",
              show_default=True, help="How to search the range for inputs where the builds differ.")
@click.option("--save-inputs", "save_inputs", type=click.Path(), help="Where to save the witness (.npz).")
@click.option("--html", "html_path", type=click.Path(),
              help="Write a self-contained HTML report: error per pass, origin, propagation graph.")
@click.option("--dot", "dot_path", type=click.Path(), help="Write the propagation graph as Graphviz DOT.")
@click.option("--plot", "plot_path", type=click.Path(), help="Write the error per pass as a PNG.")
@output_options
def trace_command(model, shapes, pipeline, tir_pipeline, target, opt_level, low, high, range_specs, rtol, atol,
                  budget, seed, no_oracle, inputs_path, search, save_inputs, html_path, dot_path, plot_path,
                  json_path, verbose):
    """Bisect MODEL's pipeline, then show which pass added how much error, where it starts, how it spreads."""
    from .report.files import write_atomic
    from .report.graph import propagation_dot
    from .report.html import render_html
    from .report.plot import pass_errors_png
    from .trace.tracer import trace

    console = Console(verbose)
    _check_paths(json_path, save_inputs, html_path, dot_path, plot_path)
    if inputs_path:
        _fail("--inputs is for bisect; trace makes its own witness")
    options = _options(low, high, range_specs, rtol, atol, budget, seed, no_oracle, search=search)
    config = _config(pipeline, tir_pipeline, target, opt_level)
    loaded = _load(model, shapes)
    with console.interruptible():
        report = trace(loaded, config, options, progress=console.progress, on_build=console.on_build,
                       on_witness=_keep_witness(save_inputs, json_path, console))
    code = _deliver(report, json_path, save_inputs)
    traced = report.data.get("trace")
    if traced is None:
        click.echo("  trace     nothing to trace: no violation on the searched inputs")
        return code
    click.echo(render_trace_lines(traced))
    if html_path:
        write_atomic(html_path, render_html(report.data).encode())
    if dot_path:
        write_atomic(dot_path, propagation_dot(traced["graph"]).encode())
    if plot_path and traced["passes"]:
        write_atomic(plot_path, pass_errors_png(report.data))
    return code


def render_trace_lines(traced: dict) -> str:
    """The terminal lines of a trace: the passes that added error, the origin, the graph's size."""
    lines = []
    adding = [r for r in traced["passes"] if r["local"] and _positive(r["local"]["score"])]
    lines.append(f"  passes    {len(traced['passes'])} measured, {len(adding)} added error"
                 + (": " + ", ".join(f"{r['id']} ({_num(r['local']['score'])})" for r in adding[:6]) if adding else ""))
    origin = traced.get("origin")
    if origin:
        lines.append(f"  origin    {origin['value']} ({origin['op']}, kernel {origin['kernel']}), "
                     f"score {_num(origin['score'])}; before the pass: {origin['binding_before'][:90]}")
        lines.append(f"            after the pass: {origin['binding_after'][:100]}")
    else:
        lines.append(f"  origin    none: {traced.get('reason')}")
    graph, matching = traced["graph"], traced.get("matching") or {}
    on_path = sum(1 for n in graph["nodes"] if n["on_path"])
    lines.append(f"  spread    {len(graph['nodes'])} values downstream of the origin, {on_path} on a path to a "
                 f"violating output; {matching.get('matched', 0)}/{matching.get('values', 0)} values matched")
    return "\n".join(lines)


def _positive(score) -> bool:
    return score in ("inf", "nan") or (isinstance(score, (int, float)) and score > 0)


def _check_paths(*paths) -> None:
    for path in paths:
        if path:
            check_writable(path)


def _options(low, high, range_specs, rtol, atol, budget, seed, no_oracle, **extra) -> api.Options:
    ranges = {}
    for spec in range_specs:
        name, lo, hi = parse_range_spec(spec)
        ranges[name] = (lo, hi)
    if not ranges and (low is None or high is None):
        _fail("give the input range: --low and --high, or --range NAME=LO:HI for each input")
    parse_budget(budget)  # a bad budget fails before any build
    return api.Options(low=low, high=high, ranges=ranges, rtol=rtol, atol=atol, budget=budget, seed=seed,
                       oracle=not no_oracle, **extra)


def _deliver(report, json_path, save_inputs) -> int:
    """Keep the witness of every violation, write the report, show the summary."""
    if report.violation:
        report.save_witness(_witness_path(save_inputs, json_path))
    if json_path:
        report.write_json(json_path)
    click.echo(report.summary())
    return report.exit_code


def _keep_witness(save_inputs, json_path, console):
    """Write a violation's witness as soon as it is found: a bisection that is
    interrupted (Ctrl-C, a crash inside TVM) must not lose it."""
    path = _witness_path(save_inputs, json_path)

    def keep(witness) -> None:
        write_witness(path, witness)
        console.witness_path = path
        console.progress(f"witness saved to {path} (kept whatever happens to the bisection)")
    return keep


def _witness_path(save_inputs, json_path) -> str:
    """Every violation keeps its witness, asked for or not: --save-inputs, else
    next to the JSON report, else in the working directory."""
    if save_inputs:
        return save_inputs
    if json_path:
        return os.path.splitext(json_path)[0] + ".witness.npz"
    return "numguard-witness.npz"


@cli.command()
@model_options
@pipeline_options
@output_options
def passes(model, shapes, pipeline, tir_pipeline, target, opt_level, json_path, verbose):
    """List the pass events of one compilation: id, level, required, time, changed."""
    console = Console(verbose)
    if json_path:
        check_writable(json_path)
    config = _config(pipeline, tir_pipeline, target, opt_level)
    loaded = _load(model, shapes)
    with console.interruptible():
        rows = api.list_passes(loaded, config, progress=console.progress, on_build=console.on_build)
    rows = [r for r in rows if r["ran"]]
    if json_path:
        write_atomic(json_path, (json.dumps({"events": rows}, indent=2) + "\n").encode())
    click.echo(_event_table(rows))
    return 0


def _event_table(rows) -> str:
    header = f"{'#':>4}  {'event id':<44} {'level':<5} {'opt':>3}  {'kind':<8} {'changed':<7} {'ms':>8}"
    lines = [header, "-" * len(header)]
    for r in rows:
        kind = "wrapper" if r["wrapper"] else ("required" if r["required"] else ("optional" if r["optional"] else "nested"))
        changed = {True: "yes", False: "no", None: "-"}[r["changed"]]
        lines.append(f"{r['index']:>4}  {r['id']:<44} {r['level']:<5} {r['opt_level']:>3}  {kind:<8} {changed:<7} "
                     f"{r['duration_s'] * 1000:>8.1f}")
    optional = sum(1 for r in rows if r["optional"])
    lines.append(f"{len(rows)} events ran, {optional} optional (a bisection may skip them)")
    return "\n".join(lines)


@cli.command()
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=True))
@click.option("--json", "json_path", type=click.Path(), help="Write the replay result as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Print an opt-bisect style trace line per pass event of every build.")
def replay(report_path, json_path, verbose):
    """Rerun a report's witness with its recorded configuration: does the violation still show?"""
    from .replay import replay as replay_report

    console = Console(verbose)
    if json_path:
        check_writable(json_path)
    with console.interruptible():
        result = replay_report(report_path, progress=console.progress, on_build=console.on_build)
    if json_path:
        result.write_json(json_path)
    click.echo(result.summary())
    return result.exit_code


def main(argv=None) -> None:
    try:
        with warnings.catch_warnings():
            # TVM's own Python warnings (e.g. "Tag 'broadcast' declared via TagScope was not used") are
            # about TVM's internals; the user asked numguard a question and gets its answer
            warnings.filterwarnings("ignore", module=r"tvm(\.|$)")
            code = cli.main(args=argv, prog_name="numguard", standalone_mode=False)
    except NumguardError as err:
        click.echo(f"numguard: error: {err}", err=True)
        sys.exit(2)
    except Interrupted as err:
        click.echo(f"numguard: {err}", err=True)
        sys.exit(130)
    except click.exceptions.Abort:
        click.echo("numguard: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
