"""``assert_pass_numerically_safe``: a pass author's one-line numerical test.

It asks what ``numguard regress`` asks for one model: does the pipeline with
the pass compute something else than the same pipeline without it, on inputs
searched in the range? It runs in the test's own process (pytest-xdist
spreads the models over processes), and raises AssertionError naming the
culprit event, the error, the witness file and the command that replays it.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import NoReturn, Optional, Union

from ..base.errors import from_keywords


class UntestableModel(Exception):
    """The model cannot be judged (does not import or build, or its reference
    is never finite in the range): no verdict on the pass either way."""


@dataclasses.dataclass(frozen=True)
class _GivenModel:
    """A model given as an object (IRModule or Model) rather than a file, for ``judge_model``."""

    name: str
    value: object
    low: Optional[float] = None
    high: Optional[float] = None
    ranges: tuple = ()
    has_range: bool = False
    source: str = "<IRModule>"

    @property
    def selector(self) -> str:
        """An object has no --models word: the replay line names it as given."""
        return os.path.abspath(self.source) if os.path.exists(self.source) else self.source

    def load(self, workdir: str):
        from ..ir.model import Model, load_model

        return self.value if isinstance(self.value, Model) else load_model(self.value)


def _subject(pass_, level: Optional[str]) -> tuple:
    """(label in the pipeline text, {label: Pass} for an object, its level)."""
    import tvm

    if isinstance(pass_, str):
        return pass_, {}, level or "relax"
    if not isinstance(pass_, tvm.transform.Pass):
        raise TypeError(f"pass_ must be a tvm.transform.Pass or a spec string, got {type(pass_).__name__}")
    if level is None:
        level = "tir" if isinstance(pass_, tvm.tirx.transform.PrimFuncPass) else "relax"
    label = f"<{pass_.info.name}>"
    return label, {label: pass_}, level


def _as_model(model):
    from .regress.corpus import CorpusModel

    if isinstance(model, CorpusModel):
        return model
    if isinstance(model, (str, os.PathLike)):
        from .regress.corpus import collect

        found = collect([os.fspath(model)])
        if len(found) != 1:
            raise ValueError(f"{model} names {len(found)} models; give one (or loop over them)")
        return found[0]
    from .generate import Graph

    if isinstance(model, Graph):  # e.g. drawn by tvm_numguard.testing.generate.strategy.relax_graphs
        ranges = tuple((n, lo, hi) for n, (lo, hi) in model.ranges().items())
        return _GivenModel("<generated>", model.to_irmodule(), ranges=ranges, has_range=True)
    return _GivenModel(getattr(model, "source", "<IRModule>"), model)


@dataclasses.dataclass(frozen=True)
class JudgeSettings:
    """The keywords of ``judge_pass`` and ``assert_pass_numerically_safe``
    besides the range: ``ranges`` ({input: (lo, hi)}), ``rtol``, ``atol``,
    ``level`` (``"tir"`` for a TIR spec), ``pipeline``/``tir_pipeline``
    (around the pass: ``zero``/``default``), ``budget`` (default: regress's),
    ``seed``, ``witness_dir`` (default: numguard-witnesses in the temp folder)."""

    ranges: Optional[dict] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    level: Optional[str] = None
    pipeline: str = "zero"
    tir_pipeline: str = "default"
    budget: Optional[str] = None
    seed: int = 0
    witness_dir: Optional[str] = None


def judge_pass(pass_, model, low: Optional[float] = None, high: Optional[float] = None, **settings):
    """The RegressRow of ``pass_`` on ``model`` (see assert_pass_numerically_safe),
    nothing raised for a verdict; ``settings``: the keywords of JudgeSettings."""
    from ..locate.options import Options
    from .regress.row import RowRequest, judge_model, pass_config
    from ..locate.budget import REGRESS_BUDGET

    given = from_keywords(JudgeSettings, settings, "judge_pass()")
    label, objects, level = _subject(pass_, given.level)
    config, words = pass_config(label, level, given.pipeline, given.tir_pipeline, passes=objects)
    config.validate()  # a spec that does not resolve is the caller's mistake, not an untestable model
    ranged = low is not None or high is not None or bool(given.ranges)
    options = Options(low=low if ranged else 0.0, high=high if ranged else 1.0, ranges=dict(given.ranges or {}),
                      rtol=given.rtol, atol=given.atol, budget=given.budget or REGRESS_BUDGET, seed=given.seed)
    entry = _as_model(model)
    out = given.witness_dir or os.path.join(tempfile.gettempdir(), "numguard-witnesses")
    with tempfile.TemporaryDirectory(prefix="numguard_judge_") as workdir:
        return judge_model(RowRequest(config, options, os.path.abspath(out), not ranged, words), entry, workdir)


def assert_pass_numerically_safe(pass_: Union[str, object], model, low: Optional[float] = None,
                                 high: Optional[float] = None, *, require_changed: bool = False,
                                 **kwargs):
    """Raise AssertionError if ``pass_`` changes what ``model`` computes.

    Args:
        pass_: a ``tvm.transform.Pass`` (a ``PrimFuncPass`` is a TIR pass) or a
            spec (``module:callable``, ``file.py:callable``, a relax.transform
            name; ``level="tir"`` for a TIR spec).
        model: a file path, a built-in corpus member (``tiny/mlp``,
            ``random/0-3``), a ``CorpusModel``, an IRModule, a Model or a
            generated ``Graph`` (at the ranges it was generated for).
        low, high: the input range (or ``ranges={input: (lo, hi)}``); left out,
            the model's own (corpus manifest, test data), else [0, 1].
        require_changed: fail when the pass did not change the model (it proved nothing).
        **kwargs: the other keywords of ``JudgeSettings`` (``rtol``,
            ``atol``, ``budget``, ``seed``, ``pipeline``/``tir_pipeline``
            around the pass, ``witness_dir``).

    Returns:
        The RegressRow of the judgement.

    Raises:
        AssertionError: a violation (naming the culprit event, the error, the
            witness file and the command that replays it), or numguard could not judge.
        UntestableModel: the model cannot be judged (``pytest.skip`` under pytest).
    """
    require_changed = require_changed or bool(kwargs.pop("require_fired", False))  # its old name
    row = judge_pass(pass_, model, low, high, **kwargs)
    if row.verdict == "violation":
        raise AssertionError(
            f"{row.pass_spec} changes what {row.model} computes: violation score {row.score:.3g} "
            f"(> 1 fails; max error {row.max_ulp:.0f} ulp) made by pass event {', '.join(row.culprit) or '?'}; "
            f"witness inputs saved to {row.witness}; {replay_text(row.replay)}")
    if row.verdict == "error":
        raise AssertionError(f"numguard could not judge {row.pass_spec} on {row.model}: {row.reason}")
    if row.verdict in ("untestable", "broken"):
        _untestable(f"{row.model} cannot be judged ({row.verdict}): {row.reason}")
    if require_changed and not row.changed:
        raise AssertionError(f"{row.pass_spec} did not change {row.model} (require_changed=True): the test proves "
                             "nothing about its numerics")
    return row


def replay_text(replay: str) -> str:
    """The replay line of a failure, starting with the numguard installed beside
    this Python (a test runs in pytest, not in numguard); where the pass or the
    model was given as an object, which a command line cannot name, says so."""
    import shlex

    from ..base.flags import as_invoked, installed_program

    # an object's label, <FastExpCutoff> (a Pass) or <IRModule>, is no word a command line takes
    if any(w.startswith("<") and w.endswith(">") for w in shlex.split(replay)):
        return ("no replay line: the pass or the model was given as an object, which a command line cannot name "
                "(a module:callable spec and a model file can be)")
    return f"replay: {as_invoked(replay, installed_program())}"


def _untestable(message: str) -> NoReturn:
    try:
        import pytest
    except ImportError:
        raise UntestableModel(message) from None
    pytest.skip(message)


def assert_same_on_witness(model, witness, *, pipeline: str, tir_pipeline: str = "default", target: str = "llvm",
                           rtol: Optional[float] = None, atol: Optional[float] = None):
    """Raise AssertionError if the configuration's pass under test (the bracketed
    part of ``pipeline``/``tir_pipeline``) changes what ``model`` computes on the
    inputs saved in ``witness`` (.npz), against the same pipeline without it.
    What ``numguard reduce`` writes into a repro's test file."""
    from ..ir.model import load_model
    from ..ir.pipeline import CompileConfig
    from .reduce.reducer import PassQuestion
    from ..report.files import read_witness
    from ..base.tolerance import Tolerance

    config = CompileConfig(pipeline=pipeline, tir_pipeline=tir_pipeline, target=target)
    inputs = read_witness(os.fspath(witness))
    result = PassQuestion(config, Tolerance(rtol, atol))(load_model(model).mod, inputs)
    if result is None:
        _untestable(f"{model} does not build or run with {pipeline!r} / {tir_pipeline!r}")
    if result.violated:
        raise AssertionError(f"{config.under_test} changes what {model} computes on {witness}: violation score "
                             f"{result.score:.3g} (> 1 fails)")
    return result
