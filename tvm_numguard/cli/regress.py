"""``numguard regress``: a pass author's question over a corpus of models."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Optional

import click

from ..base.errors import UsageError
from ..base.flags import invoked_as
from ..report.files import ensure_writable, write_atomic
from .commands import Command
from .groups import SearchArgs, OptionGroup, OutputArgs, WorkerArgs

EXIT_CODES = """\b
Exit codes:
  0  no violation of the pass's own, and every pass changed --require-changed models
  1  a violation attributed to a pass under test (whatever else happened)
  2  bad usage, or numguard failed on some model (its row says how)
  3  internal error in numguard (please report it)
  4  a pass changed fewer than --require-changed models"""


class PassArgs(OptionGroup):
    """The passes under test and the pipeline around them -> one CompileConfig per pass."""

    options = (
        click.option("--pass", "relax_passes", multiple=True, metavar="SPEC",
                     help="A Relax pass under test (module:callable, file.py:callable, or a relax.transform "
                          "name); it runs first, before --pipeline. Repeat to test several, each on its own."),
        click.option("--tir-pass", "tir_passes", multiple=True, metavar="SPEC",
                     help="A TIR pass under test; it runs after --tir-pipeline, on lowered TIR (to run it on TIR "
                          "with blocks, put it in brackets in --tir-pipeline: '[SPEC],default')."),
        click.option("--pipeline", default="zero", show_default=True,
                     help="The Relax pipeline around the pass (a part in brackets is the pass under test)."),
        click.option("--tir-pipeline", default="default", show_default=True,
                     help="The TIR pipeline around the pass (a part in brackets is the pass under test)."),
        click.option("--target", default="llvm", show_default=True, help="The TVM target to build for."),
    )

    def parse(self, values: dict) -> list:
        relax, tir = values.pop("relax_passes"), values.pop("tir_passes")
        pipeline, tir_pipeline, target = values.pop("pipeline"), values.pop("tir_pipeline"), values.pop("target")
        from ..testing.regress.row import pass_config

        # a bracketed part in the pipeline as well is refused by CompileConfig: one pass under test at a time
        configs = [pass_config(spec, "relax", pipeline, tir_pipeline, target) for spec in relax]
        configs += [pass_config(spec, "tir", pipeline, tir_pipeline, target) for spec in tir]
        if not configs:
            from ..ir.pipeline import CompileConfig  # TVM's import: when a command runs, not for --help

            config = CompileConfig(pipeline=pipeline, tir_pipeline=tir_pipeline, target=target)
            if config.under_test is None:
                raise UsageError("name the pass under test: --pass SPEC, --tir-pass SPEC, or a part in brackets in "
                                 "--pipeline/--tir-pipeline")
            configs = [(config, ("--pipeline", pipeline, "--tir-pipeline", tir_pipeline))]
        for config, _ in configs:
            config.validate()
        if target != "llvm":
            configs = [(c, words + ("--target", target)) for c, words in configs]
        return configs


@dataclasses.dataclass(frozen=True)
class RangeChoice:
    """The options, and whether a model's own range (manifest, test data) wins over them."""

    options: object
    model_ranges: bool


class RegressSearchArgs(SearchArgs):
    """SearchArgs where the range may be left out: each model's own, else [0, 1]."""

    def __init__(self):
        from ..locate.budget import REGRESS_BUDGET

        super().__init__(bisect=False, budget_default=REGRESS_BUDGET)

    def parse(self, values: dict) -> RangeChoice:  # type: ignore[override]  # the Options, with where ranges come from
        given = values["low"] is not None or values["high"] is not None or bool(values["range_specs"])
        if not given:
            values["low"], values["high"] = 0.0, 1.0
        return RangeChoice(super().parse(values), model_ranges=not given)


@dataclasses.dataclass(frozen=True)
class CorpusChoice:
    """The models ``--models`` and ``--random`` name (checked when made; collected by ``models``)."""

    items: tuple = ()
    random_count: int = 0
    target_pass: Optional[str] = None
    discontinuous: bool = False

    def __post_init__(self):
        if self.random_count < 0:
            raise UsageError(f"--random must be >= 0, got {self.random_count}")
        if (self.target_pass or self.discontinuous) and not self.random_count:
            raise UsageError("--target-pass and --discontinuous shape generated models: give --random N too")
        if not self.items and not self.random_count:
            raise UsageError("give the models: --models PATH|CORPUS and/or --random N")

    def models(self, seed: int) -> list:
        """The models of ``--models`` and ``--random`` (stream ``seed``), in that order."""
        from ..testing.regress.corpus import collect, random_models

        return ((collect(self.items) if self.items else [])
                + random_models(self.random_count, seed, self.target_pass, self.discontinuous))


class CorpusArgs(OptionGroup):
    options = (
        click.option("--models", "model_items", multiple=True, metavar="PATH|CORPUS",
                     help="Models to judge the pass on (repeat for more)."),
        click.option("--random", "random_count", default=0, show_default=True, type=int, metavar="N",
                     help="Also judge it on N generated models (stream --seed), each at the ranges it is valid in."),
        click.option("--discontinuous", is_flag=True,
                     help="Generated models may also use round, floor, sign, compares and int casts (off by default: "
                          "they turn rounding-level differences into large ones)."),
        click.option("--target-pass", metavar="PASS|OPS",
                     help="Generated models favour the patterns this pass rewrites (a stock pass name, or a comma "
                          "list of Relax operators such as exp,divide)."),
    )

    def parse(self, values: dict) -> CorpusChoice:
        return CorpusChoice(tuple(values.pop("model_items")), values.pop("random_count"), values.pop("target_pass"),
                            values.pop("discontinuous"))


@dataclasses.dataclass(frozen=True)
class RegressRunChoice:
    """Where a regress run's rows go besides the outputs, and when it fails."""

    junit: Optional[str] = None
    out_dir: str = "numguard-regress"
    cluster: Optional[str] = None
    require_changed: int = 1

    def __post_init__(self):
        if self.require_changed < 0:
            raise UsageError(f"--require-changed must be >= 0, got {self.require_changed}")
        if self.junit:
            ensure_writable(self.junit)


class RegressRunArgs(OptionGroup):
    options = (
        click.option("--junit", type=click.Path(), help="Write JUnit XML: a testsuite per pass, a testcase per model."),
        click.option("--out", "out_dir", default="numguard-regress", show_default=True, type=click.Path(),
                     help="Where the witnesses of violations are kept (one .npz per pass and model)."),
        click.option("--cluster", metavar="ADDRESS",
                     help="Run the rows on an existing Dask cluster (its scheduler's address, tcp://HOST:8786) "
                          "instead of local workers (the 'cluster' extra)."),
        click.option("--require-changed", "--require-fired", "require_changed", default=1, show_default=True,
                     type=int, metavar="K",
                     help="Exit 4 when a pass changed fewer than K models (0: never; --require-fired: its old name)."),
    )

    def parse(self, values: dict) -> RegressRunChoice:
        return RegressRunChoice(values.pop("junit"), values.pop("out_dir"), values.pop("cluster"),
                                values.pop("require_changed"))


class Regress(Command):
    name = "regress"
    epilog = EXIT_CODES
    help = ("Check passes under test on a corpus of models: for each model, the pipeline with the pass against "
            "the same pipeline without it, on inputs searched in the model's range. --models takes model files, "
            "folders of them, built-in corpora (onnx-node, onnx-light, tiny, patches) or CORPUS/MODEL; --random N adds "
            "generated models.")

    def groups(self) -> dict:
        return {"outputs": OutputArgs("json", "html"), "options": RegressSearchArgs(), "config": PassArgs(),
                "workers": WorkerArgs(), "corpus": CorpusArgs(), "run": RegressRunArgs()}

    def run(self, outputs, options, config, workers, corpus: CorpusChoice, run: RegressRunChoice) -> int:
        from ..testing.regress import RowRequest, regress
        from ..testing.regress.render import render_html, render_junit, render_text
        from ..testing.regress.run import ROW_TIMEOUT

        models = corpus.models(options.options.seed)
        requests = [RowRequest(c, options.options, os.path.abspath(run.out_dir), options.model_ranges, words)
                    for c, words in config]
        console = self.console(outputs)
        with console.interruptible():
            result = regress(requests, models, workers, progress=console.progress, require_changed=run.require_changed,
                             row_timeout=workers.build_timeout or ROW_TIMEOUT, cluster=run.cluster)
        if outputs.json:
            from ..report.schemas import REGRESS_SCHEMA, validate

            document = result.to_json()
            validate(document, REGRESS_SCHEMA)  # as every document numguard writes: its schema is shipped
            write_atomic(outputs.json, (json.dumps(document, indent=2) + "\n").encode())
        program = invoked_as()
        if run.junit:
            write_atomic(run.junit, render_junit(result, program))
        if outputs.html:
            write_atomic(outputs.html, render_html(result, program).encode())
        click.echo(render_text(result, program), nl=False)
        return result.exit_code
