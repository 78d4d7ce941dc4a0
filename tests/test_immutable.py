"""A Finding, and everything it holds, cannot change once made: a caller, a
report, the guard's cache and another process all hold the same one."""

import dataclasses
import enum
import os

import numpy as np
import pytest

import tvm_numguard as ng
from tvm_numguard.base.frozen import FrozenDict, freeze
from tvm_numguard.api.guard.guard_report import GuardInfo
from tvm_numguard.locate import Budget

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
ATOMS = (str, bytes, int, float, complex, bool, enum.Enum, np.generic, type(None), type)


def mutable_parts(value, path="finding", seen=None) -> list:
    """The paths of every part of ``value`` that could be changed in place."""
    seen = set() if seen is None else seen
    if isinstance(value, ATOMS) or id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return [] if not value.flags.writeable else [f"{path}: a writable array"]
    if isinstance(value, FrozenDict):
        return [p for k, v in value.items() for p in mutable_parts(v, f"{path}[{k!r}]", seen)]
    if isinstance(value, (tuple, frozenset)):
        return [p for k, v in enumerate(value) for p in mutable_parts(v, f"{path}[{k}]", seen)]
    if dataclasses.is_dataclass(value):
        own = [] if value.__dataclass_params__.frozen else [f"{path}: {type(value).__name__} is not frozen"]
        return own + [p for f in dataclasses.fields(value)
                      for p in mutable_parts(getattr(value, f.name), f"{path}.{f.name}", seen)]
    return [f"{path}: a {type(value).__name__}"]


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    """A violation bisected to its culprit (search, range check, oracle, bisection,
    import judgement), and an import difference judged against its float64 truth."""
    bisected = ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                         ng.Options(low=0.0, high=1.0, budget="20"))
    from test_framework import mvn_model

    imported = ng.bisect(mvn_model(tmp_path_factory.mktemp("mvn") / "mvn.onnx"),
                         options=ng.Options(low=900.0, high=1100.0, budget="20"))
    return bisected.finding, imported.finding


def test_a_real_finding_is_immutable_all_the_way_down(findings):
    bisected, imported = findings
    assert bisected.bisection is not None and bisected.range_check is not None and bisected.witness
    assert imported.imports is not None and imported.imports.verdict == "import"
    for finding in findings:
        assert mutable_parts(finding) == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        bisected.bisection.probes = ()
    with pytest.raises(TypeError):
        bisected.witness["x"] = np.zeros(1)
    with pytest.raises(ValueError):
        next(iter(bisected.witness.values()))[...] = 0.0


def test_the_walk_finds_what_can_change():
    # the walk itself must see a mutable part wherever one hides
    @dataclasses.dataclass
    class Loose:
        items: list

    assert mutable_parts(Loose([1])) == ["finding: Loose is not frozen", "finding.items: a list"]
    assert mutable_parts((FrozenDict(a=np.zeros(2)),)) == ["finding[0]['a']: a writable array"]
    assert mutable_parts(freeze({"a": [np.zeros(2)], "b": {"c": [1]}})) == []


def test_a_guard_section_made_with_lists_holds_tuples():
    info = GuardInfo("compile", "disable", Budget(evaluations=4), disabled=["A#0"], prelude=["p"])
    assert info.disabled == ("A#0",) and mutable_parts(info) == []
    assert GuardInfo.from_json(info.to_json()) == info


def test_the_witness_copy_docs_cli_md_gives_can_be_changed_and_checked(findings):
    # docs/cli.md "From Python": the witness is read-only; a copy is the user's to change and pass back
    bisected, _ = findings
    original = {name: np.array(a) for name, a in bisected.witness.items()}
    inputs = {name: np.array(a) for name, a in bisected.witness.items()}
    inputs["x"][0, 0] = 0.5
    again = ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"), ng.Options(low=0.0, high=1.0),
                      inputs=inputs)
    assert again.culprit == "ToMixedPrecision#0" and again.finding.witness["x"][0, 0] == np.float32(0.5)
    assert all(np.array_equal(original[name], a) for name, a in bisected.witness.items())
    assert again.finding.witness["x"] is not inputs["x"] and not again.finding.witness["x"].flags.writeable
