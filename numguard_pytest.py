"""The numguard pytest plugin (entry point ``pytest11``: pytest loads it in
every run where tvm_numguard is installed, so it is a module of its own and
imports tvm_numguard, hence TVM, only when a test asks for a fixture).

Options::

    --numguard-pass SPEC     a pass under test (repeat); the ``numguard_pass`` fixture
    --numguard-corpus ITEM   models: files, folders, built-in corpora (default: tiny)
    --numguard-random N      generated models for numguard_random_model (default 10)
    --numguard-seed N        the search's seed and the generated models' stream (default 0)
    --numguard-budget B      the search budget per model (default: regress's)

Fixtures:

``numguard_corpus``
    receives: nothing; the test is parametrized over the corpus models
    (ids: their names). returns: a ``regress.CorpusModel`` (name, source, range).
``numguard_random_model``
    receives: nothing; the test is parametrized over ``--numguard-random``
    generated models of stream ``--numguard-seed`` (ids: ``random/SEED-INDEX``).
    returns: a ``regress.CorpusModel`` at the ranges the model is valid in.
``numguard_pass``
    the test is parametrized over the ``--numguard-pass`` specs (none given:
    no test). returns: the spec string.
``numguard_assert_safe``
    returns: ``assert_pass_numerically_safe`` with the options' seed and
    budget, witnesses kept under the session's temporary directory. A
    failure's replay line starts with the ``numguard`` installed beside the
    test's Python (``.venv/bin/numguard`` where PATH does not find it).
``numguard_check``
    deprecated: ``numguard_assert_safe``'s name before 0.2 ("check" is the
    range check only); the same function, with a DeprecationWarning.
"""

from __future__ import annotations

import functools
import warnings

import pytest

DEFAULT_CORPUS = "tiny"
DEFAULT_RANDOM = 10


def pytest_addoption(parser):
    group = parser.getgroup("numguard", "numerical regression tests of TVM passes")
    group.addoption("--numguard-pass", action="append", default=[], metavar="SPEC",
                    help="A pass under test (module:callable, file.py:callable, or a relax.transform name).")
    group.addoption("--numguard-corpus", action="append", default=[], metavar="ITEM",
                    help=f"Models for numguard_corpus: files, folders, built-in corpora (default: {DEFAULT_CORPUS}).")
    group.addoption("--numguard-random", type=int, default=DEFAULT_RANDOM, metavar="N",
                    help=f"Generated models for numguard_random_model (default: {DEFAULT_RANDOM}).")
    group.addoption("--numguard-seed", type=int, default=0,
                    help="Seed of numguard's input search and of the generated models.")
    group.addoption("--numguard-budget", default=None, help="numguard's search budget per model (default: regress's).")


def pytest_configure(config):
    """A corpus item that names nothing is the run's usage error: one line, before any
    test is collected (raised while parametrizing, it was a collection error with a traceback)."""
    items = config.getoption("numguard_corpus", default=None)
    if not items:
        return
    from tvm_numguard.base.errors import UsageError
    from tvm_numguard.testing.regress.corpus import collect

    try:
        collect(items)
    except UsageError as err:
        raise pytest.UsageError(f"--numguard-corpus: {err}") from None


def pytest_generate_tests(metafunc):
    if "numguard_corpus" in metafunc.fixturenames:
        from tvm_numguard.testing.regress.corpus import collect

        models = collect(metafunc.config.getoption("numguard_corpus") or [DEFAULT_CORPUS])
        metafunc.parametrize("numguard_corpus", models, ids=[m.name for m in models])
    if "numguard_random_model" in metafunc.fixturenames:
        from tvm_numguard.testing.regress.corpus import random_models

        config = metafunc.config
        models = random_models(config.getoption("numguard_random"), config.getoption("numguard_seed"))
        metafunc.parametrize("numguard_random_model", models, ids=[m.name for m in models])
    if "numguard_pass" in metafunc.fixturenames:
        specs = metafunc.config.getoption("numguard_pass")
        metafunc.parametrize("numguard_pass", specs, ids=specs)


@pytest.fixture(scope="session")
def numguard_assert_safe(request, tmp_path_factory):
    from tvm_numguard.testing.assertions import assert_pass_numerically_safe

    config = request.config
    return functools.partial(assert_pass_numerically_safe, budget=config.getoption("numguard_budget"),
                             seed=config.getoption("numguard_seed"),
                             witness_dir=str(tmp_path_factory.mktemp("numguard-witnesses")))


@pytest.fixture
def numguard_check(numguard_assert_safe):
    warnings.warn("the fixture numguard_check is deprecated: use numguard_assert_safe (the same function)",
                  DeprecationWarning, stacklevel=2)
    return numguard_assert_safe
