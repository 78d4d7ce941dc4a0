"""The flag table: each value type says its command-line arguments back
(parsing them gives the same value), replay lines are made of it, and a
library error names the Python parameter while the CLI names the flag."""

import click
import pytest

import tvm_numguard as ng
from tvm_numguard.cli.groups import SearchArgs, CompileArgs
from tvm_numguard.cli.regress import RegressSearchArgs
from tvm_numguard.base.errors import UsageError
from tvm_numguard.api.guard import GuardSettings
from tvm_numguard.locate.options import Options
from tvm_numguard.locate import resolve_ranges

from clirun import assert_one_line_error, run_cli


def parsed(group, words: list):
    """What ``group`` makes of ``words``, parsed as the CLI parses them."""
    @click.command()
    def command(**values):
        return group.parse(values)

    return group.apply(command).main(words, standalone_mode=False)


OPTIONS = [
    Options(low=-1.0, high=2.5),
    Options(ranges={"x": (0.0, 1.0), "y": (-3.0, 3.0)}, rtol=1e-3, atol=0.0, search="random,evolve",
            budget="50,10s", seed=7, strategy="linear", oracle=False),
    Options(low=0.0, high=1.0, ranges={"x": (0.5, 0.75)}, budget="3/30"),
]


@pytest.mark.parametrize("options", OPTIONS)
def test_options_said_back_parse_to_the_same_options(options):
    assert parsed(SearchArgs(), options.to_args()) == options


@pytest.mark.parametrize("options", OPTIONS)
def test_regress_lines_keep_every_option_regress_takes(options):
    again = parsed(RegressSearchArgs(), options.to_args(bisects=False)).options
    assert again == options.replace(strategy="bisect")  # regress does not bisect by strategy


def test_a_configuration_said_back_parses_to_the_same_configuration():
    config = ng.CompileConfig(pipeline="FastMathTransform,zero", tir_pipeline="default",
                              target='{"kind": "llvm", "mcpu": "generic"}',
                              opt_level=2, disable=("FoldConstant#0", "FuseOps#0"))
    assert parsed(CompileArgs(), config.to_args()) == config


def test_the_replay_line_states_each_resolved_range(tmp_path):
    from tvm_numguard.testing import tiny_mlp_onnx

    model = ng.load_model(tiny_mlp_onnx(str(tmp_path / "mlp.onnx")))
    options = Options(low=0.0, high=1.0)
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    words = model.to_args() + options.to_args(ranges)
    name = model.inputs[0].name
    assert words[0] == str(tmp_path / "mlp.onnx") and "--shape" in words
    assert parsed(SearchArgs(), options.to_args(ranges)).ranges == {name: (0.0, 1.0)}


def test_a_python_caller_is_told_the_parameter_and_the_cli_the_flag(capsys):
    with pytest.raises(UsageError, match=r"^jobs must be a whole number") as caught:
        ng.guard(0.0, 1.0, jobs=-1)
    assert "--jobs" not in str(caught.value)
    code, _, err = run_cli(capsys, "bisect", "model.onnx", "--low", "0", "--high", "1", "--jobs", "-1")
    assert_one_line_error(code, err, "--jobs must be a whole number >= 0")


def test_a_bad_budget_names_budget_in_python_and_the_flag_on_the_cli(capsys):
    with pytest.raises(UsageError, match=r"^budget 'lots'"):
        Options(low=0.0, high=1.0, budget="lots")
    code, _, err = run_cli(capsys, "search", "model.onnx", "--low", "0", "--high", "1", "--budget", "lots")
    assert_one_line_error(code, err, "--budget 'lots'")


def test_guard_settings_are_checked_when_made():
    with pytest.raises(UsageError, match="unknown keyword 'budgte'"):
        ng.guard(0.0, 1.0, budgte="5")
    with pytest.raises(UsageError, match="unknown guard action 'fix'"):
        GuardSettings(action="fix")
    assert GuardSettings(jobs=0).workers.count == 0


def test_a_regress_row_without_the_oracle_replays_without_it():
    import shlex

    from tvm_numguard.testing.regress.corpus import CorpusModel
    from tvm_numguard.testing.regress.row import RowRequest, replay_line

    options = Options(low=0.0, high=1.0, oracle=False, budget="20")
    request = RowRequest(ng.CompileConfig(pipeline="[FastMathTransform],zero"), options, "/tmp/out",
                         pass_words=("--pass", "FastMathTransform"))
    words = shlex.split(replay_line(request, CorpusModel("tiny/mlp", "tiny/mlp"), options))
    assert words[:6] == ["numguard", "regress", "--pass", "FastMathTransform", "--models", "tiny/mlp"]
    assert parsed(RegressSearchArgs(), words[6:]).options == options


def test_every_document_kind_reads_back_by_the_one_convention():
    from tvm_numguard.report.schemas import KINDS, SCHEMA_VERSION, header, kind_of

    for kind in KINDS:
        assert kind_of(header(kind)) == kind and header(kind)["schema_version"] == SCHEMA_VERSION
    # what earlier versions wrote still reads (numguard reduce takes old regress reports)
    assert kind_of({"schema": "numguard-regress/1"}) == "regress" and kind_of({"replay_version": 1}) == "replay"
    assert kind_of({"verdict": "clean"}) is None
