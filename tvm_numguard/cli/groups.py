"""Option groups, in the Polygraphy manner: each declares its options once
(one meaning, one help text) and parses what they got into one object:
``ModelArgs`` -> Model, ``CompileArgs`` -> CompileConfig, ``SearchArgs`` ->
Options, ``OutputArgs`` -> Outputs. A command lists its groups; the group
adds its options to the command and takes its values back out."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import time
from typing import TYPE_CHECKING, Optional

import click

from ..base.errors import UsageError
from ..locate.options import BISECT_STRATEGIES, Options
from ..base.flags import FLAG
from ..report.files import ensure_writable
from ..locate import SEARCHES, parse_range_spec

if TYPE_CHECKING:  # imported where used: ir.pipeline imports TVM
    from ..ir.pipeline import CompileConfig


class OptionGroup:
    """``options``: the click parameters it adds; ``parse(values)`` pops them from
    the command's keyword values and returns the group's object."""

    options: tuple = ()

    def apply(self, function):
        for option in reversed(self.options):
            function = option(function)
        return function

    def parse(self, values: dict):
        raise NotImplementedError


class ModelArgs(OptionGroup):
    options = (
        click.argument("model", type=click.Path(dir_okay=True)),
        click.option(FLAG["shapes"], "shapes", multiple=True, metavar="NAME=D0,D1,...",
                     help="The shape an input is run at (its dynamic dims stay symbolic at import, as you "
                          "compile the model); a size other than one the model fixes is refused."),
        click.option(FLAG["import_at_shapes"], "import_at_shapes", is_flag=True,
                     help="Have the ONNX frontend import the model at the --shape shapes instead (dynamic dims "
                          "fixed at import), also where they change a size the model fixes (a CNN at a smaller "
                          "image: ONNX Runtime cannot run it there, so the import is not judged)."),
        click.option(FLAG["kept_float32"], "keep_float32", metavar="NAME[,NAME...]",
                     help="Compute these values of a float16 model in float32 in TVM (casts around them): the widening "
                          "a precision finding prints. Bindings of main, as that line and tvm_numguard.keep_float32 "
                          "name them, or the model's own names."),
    )

    def parse(self, values: dict):
        """The Model (loaded last: the other groups' cheap validation comes first)."""
        from ..ir.model import load_model

        model = load_model(values.pop("model"), parse_shapes(values.pop("shapes")), values.pop("import_at_shapes"))
        kept = values.pop("keep_float32")
        return model.keeping_float32([n for n in kept.split(",") if n]) if kept else model


def parse_shapes(texts) -> dict:
    shapes = {}
    for text in texts:
        name, sep, dims = text.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise UsageError(f"--shape '{text}' must look like NAME=1,3,224,224") from None
    return shapes


class CompileArgs(OptionGroup):
    """The compile configuration. ``builds``: the command builds the model (the
    range check does not: it reads the pipeline's module, and says so)."""

    def __init__(self, builds: bool = True):
        where = "in every build" if builds else "in the pipeline the check reads (it builds nothing)"
        self.options = self._common + (
            click.option(FLAG["disable"], multiple=True, metavar="EVENT",
                         help=f"Skip this pass event (an id from 'numguard passes', e.g. FoldConstant#0) {where}"
                              + (": judge the build with it switched off." if builds else ".")),
            click.option(FLAG["fix"], "apply_fix", type=click.Path(), metavar="FIX.json",
                         help=f"Apply this fix (written by 'numguard fix') {where}"
                              + (": judge the fixed build." if builds else ".")),
        )

    _common = (
        click.option(FLAG["pipeline"], default="default", show_default=True,
                     help="Comma-separated Relax parts: zero, default, a relax.transform pass name, "
                          "module:callable."),
        click.option(FLAG["tir_pipeline"], default="default", show_default=True,
                     help="Comma-separated TIR parts around 'default'."),
        click.option(FLAG["target"], default="llvm", show_default=True, help="The TVM target to build for."),
        click.option(FLAG["opt_level"], default=3, show_default=True, type=int,
                     help="The PassContext opt_level (0-4)."),
    )

    def parse(self, values: dict) -> "CompileConfig":
        from ..ir.pipeline import CompileConfig

        fix_path = values.pop("apply_fix", None)
        fix, made_for, verified = None, "", None
        if fix_path:
            from ..fixes import load

            loaded = load(fix_path).applicable()  # an empty fix is refused: it would change nothing, silently
            fix, made_for, verified = loaded.plan, loaded.model_sha256, loaded.verified
            if loaded.unverified_note():  # said where the user typed it, as a target's note is
                click.echo(f"numguard: note: {loaded.unverified_note()}", err=True)
        from ..ir.targets import parse_target

        note = parse_target(values["target"]).note
        if note:  # said once, where the user typed it
            click.echo(f"numguard: note: {note}", err=True)
        config = CompileConfig(pipeline=values.pop("pipeline"), tir_pipeline=values.pop("tir_pipeline"),
                               target=values.pop("target"), opt_level=values.pop("opt_level"),
                               disable=tuple(d.strip() for text in values.pop("disable") for d in text.split(",")
                                             if d.strip()),
                               fix=fix or None, fix_file=os.path.abspath(fix_path) if fix else "",
                               fix_model=made_for if fix else "", fix_verified=verified if fix else None)
        config.validate()
        return config


class RangeArgs(OptionGroup):
    """The input range alone (``numguard check``): parses to Options' low, high and ranges."""

    options: tuple = (
        click.option(FLAG["low"], type=float, help="Lower bound for every input."),
        click.option(FLAG["high"], type=float, help="Upper bound for every input."),
        click.option(FLAG["ranges"], "range_specs", multiple=True, metavar="NAME=LO:HI",
                     help="Bounds for one input."),
    )

    def parse(self, values: dict) -> dict:
        ranges = {}
        for spec in values.pop("range_specs"):
            name, lo, hi = parse_range_spec(spec)
            ranges[name] = (lo, hi)
        return {"low": values.pop("low"), "high": values.pop("high"), "ranges": ranges}


class RangeCheckArgs(RangeArgs):
    """``numguard check``'s: the range, and a tolerance to tell the rounding of narrowed floats against."""

    options = (
        *RangeArgs.options,
        click.option("--rtol", type=float, help="Relative tolerance the rounding of low-precision values is "
                                                "compared with (default: float32's, 1e-5)."),
    )

    def parse(self, values: dict) -> dict:
        return {**super().parse(values), "rtol": values.pop("rtol")}


class SearchArgs(OptionGroup):
    """The input range, the tolerance and the search: everything a check's verdict depends on."""

    def __init__(self, search_default: str = "evolve", bisect: bool = True, budget_default: str = "200,60s"):
        self.bisect = bisect
        options = [
            *RangeArgs.options,
            click.option(FLAG["rtol"], type=float, help="Relative tolerance (default by dtype: 1e-5 for "
                                                                "float32)."),
            click.option(FLAG["atol"], type=float, help="Absolute tolerance (default by dtype: 1e-6 for "
                                                                "float32)."),
            click.option(FLAG["search"], default=search_default, show_default=True, metavar="NAMES",
                         help=f"Input searches, comma-separated ({', '.join(SEARCHES)}); each runs with the "
                              "same budget and seed, and the worst input any finds is the witness."),
            click.option(FLAG["budget"], default=budget_default, show_default=True,
                         help="Search budget per input search: evaluations (200), seconds (60s, 2m) "
                              "or both (200,60s)."),
            click.option(FLAG["seed"], default=0, show_default=True, type=int,
                         help="Seed of every random choice."),
            click.option(FLAG["oracle"], "no_oracle", is_flag=True,
                         help="Do not excuse differences that a float64 build shows are not worse than the "
                              "reference's."),
            click.option(FLAG["framework"], "no_framework", is_flag=True,
                         help="Do not run the model's own framework (ONNX Runtime, PyTorch) beside TVM: only the "
                              "passes are judged, not TVM's import."),
        ]
        if bisect:
            options.append(click.option(
                FLAG["strategy"], type=click.Choice(BISECT_STRATEGIES), default="bisect", show_default=True,
                help="How to isolate the pass: bisect (log2(events) builds) or linear (one build per event)."))
        self.options = tuple(options)

    def parse(self, values: dict) -> Options:
        extra = {"strategy": values.pop("strategy")} if self.bisect else {}
        return Options(**RangeArgs().parse(values), rtol=values.pop("rtol"),
                       atol=values.pop("atol"), search=values.pop("search"), budget=values.pop("budget"),
                       seed=values.pop("seed"), oracle=not values.pop("no_oracle"),
                       framework=not values.pop("no_framework"), **extra)


class WorkerArgs(OptionGroup):
    """How builds are made: worker processes, their time and memory."""

    options = (
        click.option(FLAG["jobs"], type=int, default=None, metavar="N",
                     help="Worker processes that build and run configurations (default: one per core; 0 builds "
                          "in this process, where a crashing pass ends the run)."),
        click.option(FLAG["build_timeout"], type=float, default=None, metavar="SECONDS",
                     help="Stop a worker still building one configuration after this long; the configuration is "
                          "untestable (default: 10 times the recorded build and run, at least 60 s)."),
        click.option(FLAG["max_memory"], default=None, metavar="SIZE",
                     help="Cap on the workers' memory together, e.g. 16G or 800M (default: 75% of this machine); "
                          "a worker past its share is stopped and its configuration is untestable."),
    )

    def parse(self, values: dict):
        from ..build.workers import Workers

        memory = values.pop("max_memory")
        return Workers(jobs=values.pop("jobs"), build_timeout=values.pop("build_timeout"),
                       max_memory=None if memory is None else parse_size(memory))


def parse_size(text: str) -> int:
    """``16G``, ``800M``, ``1.5GiB``, ``2000000000`` -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", text.lower())
    if not match or not float(match.group(1)) > 0:
        raise UsageError(f"--max-memory '{text}' must be a positive size such as 16G, 800M or a number of bytes")
    return int(float(match.group(1)) * 1024 ** " kmgt".index(match.group(2) or " "))


# where a witness goes when --save-inputs is not given (Outputs.witness_path), as --help says it
STAMPED_WITNESS = "numguard-witness-DATE-TIME.npz (when the command started)"
WITNESS_DEFAULT = f"next to --json (REPORT.witness.npz for REPORT.json), else ./{STAMPED_WITNESS}"


@dataclasses.dataclass
class Outputs:
    """Where results go; every path is refused before any build if it is not writable."""

    json: Optional[str] = None
    save_inputs: Optional[str] = None
    html: Optional[str] = None
    dot: Optional[str] = None
    plot: Optional[str] = None
    verbose: bool = False
    quiet: bool = False

    @functools.cached_property
    def witness_path(self) -> str:
        """Every violation keeps its witness, asked for or not: --save-inputs, else
        next to the JSON report, else in the working directory under a name that
        says which run it is (``numguard-witness-20261126-154512.npz``: when the
        command started; ``-2`` ... after it where two start in one second): a
        witness nobody asked to replace is never overwritten, and the folder
        tells them apart. Chosen once per command."""
        if self.save_inputs:
            return self.save_inputs
        if self.json:
            return os.path.splitext(self.json)[0] + ".witness.npz"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path, k = f"numguard-witness-{stamp}.npz", 1
        while os.path.exists(path):
            k += 1
            path = f"numguard-witness-{stamp}-{k}.npz"
        return path


_OUTPUT_OPTIONS = {
    "json": click.option("--json", "json", type=click.Path(),
                         help="Write the result as JSON (a report is validated against the shipped schema)."),
    "save_inputs": click.option("--save-inputs", type=click.Path(),
                                help="Where to save a violation's witness (.npz); default: "
                                     f"{WITNESS_DEFAULT}."),
    "html": click.option("--html", type=click.Path(),
                         help="Write a self-contained HTML report: error per pass, origin, propagation graph."),
    "dot": click.option("--dot", type=click.Path(), help="Write the propagation graph as Graphviz DOT."),
    "plot": click.option("--plot", type=click.Path(), help="Write a PNG plot (search: best score over "
                                                            "evaluations; trace: error per pass)."),
}


class OutputArgs(OptionGroup):
    def __init__(self, *names: str):
        self.names = names
        options = dict(_OUTPUT_OPTIONS)
        if "save_inputs" in names and "json" not in names:  # no report to put the witness next to
            options["save_inputs"] = click.option(
                "--save-inputs", type=click.Path(),
                help=f"Where to save a violation's witness (.npz); default: ./{STAMPED_WITNESS}.")
        self.options = tuple(options[n] for n in names) + (
            click.option("-v", "--verbose", is_flag=True,
                         help="Show every progress step and an opt-bisect style line per pass event of every build."),
            click.option("-q", "--quiet", is_flag=True, help="No progress on stderr."),
        )

    def parse(self, values: dict) -> Outputs:
        outputs = Outputs(**{n: values.pop(n) for n in self.names}, verbose=values.pop("verbose"),
                          quiet=values.pop("quiet"))
        for name in self.names:
            if getattr(outputs, name):
                ensure_writable(getattr(outputs, name))
        return outputs
