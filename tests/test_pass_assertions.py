"""assert_pass_numerically_safe and the pytest plugin: the pass author's routes."""

from __future__ import annotations

import os
import re

import pytest

from tvm_numguard.testing import assert_pass_numerically_safe, judge_pass

import patches.exp_range
import patches.tir_tf32
from clirun import run_printed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytest_plugins = ["pytester"]


def test_a_pass_object_that_breaks_a_model_fails_with_culprit_and_witness_and_no_replay_line_that_cannot_run(tmp_path):
    with pytest.raises(AssertionError) as caught:
        assert_pass_numerically_safe(patches.exp_range.make_pass(), patches.exp_range.make_model(), 0.0, 20.0,
                                     witness_dir=str(tmp_path))
    message = str(caught.value)
    assert "FastExpCutoff#0" in message and "violation score" in message
    # a Pass object and an IRModule are no words of a command line: no replay line that cannot run
    assert "replay:" not in message and "no replay line: the pass or the model was given as an object" in message
    witness = message.split("witness inputs saved to ")[1].split(";")[0]
    assert os.path.isfile(witness) and witness.startswith(str(tmp_path))


def test_a_tir_pass_object_is_tested_at_the_tir_level(tmp_path):
    row = judge_pass(patches.tir_tf32.make_pass(), "tiny/mlp", -1.0, 1.0, witness_dir=str(tmp_path))
    assert row.verdict == "violation" and row.culprit == ["TF32ReductionProducts#0"]


def test_the_same_pass_is_safe_where_its_bug_cannot_show(tmp_path):
    # exact below 10: the exp_range bug cannot show on [0, 5]
    row = assert_pass_numerically_safe("patches.exp_range:make_pass", patches.exp_range.make_model(), 0.0, 5.0,
                                       witness_dir=str(tmp_path))
    assert row.verdict == "clean" and row.changed


def test_a_pass_that_did_not_change_the_model_passes_unless_a_change_is_required():
    row = assert_pass_numerically_safe("FoldConstant", "tiny/mlp", -1.0, 1.0)
    assert row.changed is False
    with pytest.raises(AssertionError, match="did not change tiny/mlp"):
        assert_pass_numerically_safe("FoldConstant", "tiny/mlp", -1.0, 1.0, require_changed=True)


TEST_FILE = """
def test_pass(numguard_assert_safe, numguard_corpus, numguard_pass):
    numguard_assert_safe(numguard_pass, numguard_corpus)
"""


@pytest.mark.parametrize("xdist", [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)], ids=["plain", "xdist"])
def test_the_plugin_parametrizes_passes_and_models_and_fails_the_broken_pair(pytester, xdist, script_not_on_path):
    pytester.makepyfile(test_my_pass=TEST_FILE)
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {ROOT!r})\n")  # patches/ importable
    result = pytester.runpytest_subprocess(
        "--numguard-pass", "patches.exp_range:make_pass", "--numguard-corpus", "patches/exp_range",
        "--numguard-corpus", "tiny/mlp", "--numguard-budget", "50", *xdist)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FastExpCutoff#0*"])
    if xdist:
        return
    # the failure's replay line starts with the numguard of the test's environment, and runs as printed
    (line,) = {m.group(1) for m in re.finditer(r"; replay: (.+)$", result.stdout.str(), re.M)}
    assert line.startswith(f"{script_not_on_path} regress --pass patches.exp_range:make_pass "), line
    again = run_printed(line, pytester.path, importable=[ROOT])
    assert again.returncode == 1 and "FastExpCutoff#0" in again.stdout, again.stderr[-2000:]


OLD_NAME_TEST_FILE = """
def test_old_name(numguard_check, numguard_assert_safe):
    assert numguard_check is numguard_assert_safe
"""


def test_the_fixtures_old_name_still_works_and_says_it_is_deprecated(pytester):
    pytester.makepyfile(test_old=OLD_NAME_TEST_FILE)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-W", "always::DeprecationWarning")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*numguard_check is deprecated: use numguard_assert_safe*"])


RANDOM_TEST_FILE = """
def test_random(numguard_assert_safe, numguard_random_model):
    row = numguard_assert_safe("FastMathTransform", numguard_random_model)
    assert row.model == numguard_random_model.name
"""


@pytest.mark.slow  # a pytester run over generated models; the fast tier keeps the plain plugin run
def test_the_plugin_parametrizes_generated_models(pytester):
    pytester.makepyfile(test_random=RANDOM_TEST_FILE)
    result = pytester.runpytest_subprocess("--numguard-random", "3", "--numguard-seed", "4", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_random?random/4-2?*PASSED*"])


def test_a_generated_graph_is_checked_at_the_ranges_it_was_made_for():
    from tvm_numguard.testing.generate import GeneratorConfig, generate

    graph = generate(0, 1, GeneratorConfig(target="FoldConstant"))
    row = assert_pass_numerically_safe("FoldConstant", graph, require_changed=True)
    assert row.verdict == "clean" and row.changed
    assert "--range x0=" in row.replay  # the graph's own ranges, not [0, 1]


@pytest.mark.parametrize("level", ["relax", "tir"])
def test_a_pass_spec_that_does_not_import_fails_and_is_not_skipped(level):
    # it was an untestable row, hence pytest.skip: a typo in --numguard-pass left CI green
    from tvm_numguard.base.errors import UsageError

    try:
        with pytest.raises(UsageError, match="cannot import no_such_module"):
            assert_pass_numerically_safe("no_such_module:make_pass", "tiny/mlp", level=level)
    except pytest.skip.Exception as skipped:
        pytest.fail(f"skipped instead of failing: {skipped}")


def test_a_corpus_item_that_names_nothing_is_one_line_of_usage_error(pytester):
    pytester.makepyfile(test_corpus="def test_pass(numguard_corpus):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--numguard-corpus", "no_such_corpus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["ERROR: --numguard-corpus: no_such_corpus: no such file or directory*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_the_old_name_of_require_changed_still_asks_for_a_change():
    """``require_fired`` was the keyword's name before the glossary's one word ("changed") for it."""
    with pytest.raises(AssertionError, match="did not change"):
        assert_pass_numerically_safe("FoldConstant", "tiny/mlp", -1.0, 1.0, require_fired=True)
