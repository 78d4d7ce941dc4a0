"""The fault-injection patches do what patches/manifest.json says.

For every entry: the planted bug gives a violation on seeded inputs in
[low, high]; the expected culprit is an optional event of the full build, at
the manifest's level; the culprit *introduces* the violation (the prefix of
optional events before it is clean, the prefix through it is not); skipping
the events named in ``skip_alone`` gives the verdict the manifest says; and a
``clean_range`` shows no violation. Independent of any bisection code.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os

import numpy as np
import pytest
import tvm

from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.build.compile import BuildRequest, compile_model, optional_events, run_build
from tvm_numguard.base.compare import compare_outputs
from tvm_numguard.base.tolerance import Tolerance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST_PATH = os.path.join(ROOT, "patches", "manifest.json")
with open(MANIFEST_PATH) as f:
    MANIFEST = json.load(f)
ENTRIES = {entry["name"]: entry for entry in MANIFEST}
SAMPLES = 4
SEED = 0


def _resolve(spec: str):
    module_name, _, attr = spec.rpartition(":")
    return getattr(importlib.import_module(module_name), attr)


def _input_specs(mod: tvm.IRModule) -> list:
    specs = []
    for param in mod["main"].params:
        ty = param.ty
        specs.append((param.name, tuple(int(d) for d in ty.shape.values), str(ty.dtype)))
    return specs


def _inputs(specs, low: float, high: float, samples: int = SAMPLES, seed: int = SEED) -> list:
    """Seeded uniform samples in [low, high], then every input at each bound."""
    rng = np.random.default_rng(seed)
    out = [{n: rng.uniform(low, high, s).astype(d) for n, s, d in specs} for _ in range(samples)]
    out.append({n: np.full(s, high, dtype=d) for n, s, d in specs})
    out.append({n: np.full(s, low, dtype=d) for n, s, d in specs})
    return out


class Case:
    """One manifest entry's model, full build and reference build."""

    def __init__(self, entry: dict):
        self.entry = entry
        self.mod = _resolve(entry["model"])()
        self.config = CompileConfig(pipeline=entry["pipeline"], tir_pipeline=entry["tir_pipeline"])
        self.full = compile_model(self.mod, self.config, BuildRequest(record=True))
        assert self.full.ok, f"{entry['name']}: full build failed: {self.full.error}"
        self.optional = optional_events(self.full.events)
        self.optional_ids = [e.id for e in self.optional]
        self.ref = self.build(frozenset(self.optional_ids))
        self.specs = _input_specs(self.mod)
        self.names = [n for n, _, _ in self.specs]

    def build(self, skip: frozenset):
        build = compile_model(self.mod, self.config, BuildRequest(skip=skip))
        assert build.ok, f"{self.entry['name']}: build skipping {sorted(skip)} failed: {build.error}"
        return build

    def scores(self, build, low: float, high: float) -> list:
        result = []
        for inputs in _inputs(self.specs, low, high):
            ref = run_build(self.ref, self.names, inputs)
            assert all(np.all(np.isfinite(r)) for r in ref), "reference is not finite on the patch's range"
            result.append(compare_outputs(ref, run_build(build, self.names, inputs), Tolerance()).score)
        return result

    def range_scores(self, build) -> list:
        scores = self.scores(build, self.entry["low"], self.entry["high"])
        if self.entry.get("witness"):
            witness = _resolve(self.entry["witness"])()
            ref = run_build(self.ref, self.names, witness)
            scores.append(compare_outputs(ref, run_build(build, self.names, witness), Tolerance()).score)
        return scores


@functools.lru_cache(maxsize=None)
def case(name: str) -> Case:
    return Case(ENTRIES[name])


NAMES = sorted(ENTRIES)


def test_manifest_is_well_formed():
    required = {"name", "module", "description", "pipeline", "tir_pipeline", "model", "low", "high",
                "clean_range", "culprit", "level", "minimal_set"}
    assert len(MANIFEST) >= 4
    assert len(NAMES) == len(MANIFEST), "patch names must be unique"
    for entry in MANIFEST:
        assert required <= set(entry), f"{entry.get('name')}: missing {sorted(required - set(entry))}"
        assert entry["level"] in ("relax", "tir")
        assert entry["low"] < entry["high"]
        assert entry["minimal_set"] and isinstance(entry["minimal_set"], list)
        assert entry["pipeline"].split(",")[-1].strip() in ("zero", "default")
        module = importlib.import_module(entry["module"])
        assert module.__doc__ and len(module.__doc__.strip()) > 100, f"{entry['module']} needs a docstring"
        assert entry["model"].startswith(entry["module"] + ":")
        factory = getattr(module, "make_pass")
        takes_target = len(inspect.signature(factory).parameters) >= 1
        made = factory(tvm.target.Target("llvm")) if takes_target else factory()
        assert isinstance(made, tvm.transform.Pass)


@pytest.mark.parametrize("name", [n for n in NAMES if ENTRIES[n].get("uniform_clean")])
def test_uniform_clean_patches_need_a_search(name):
    """A patch marked uniform_clean is within tolerance on uniform samples of its
    range (so random sampling misses it) and violates on its witness."""
    c, entry = case(name), ENTRIES[name]
    rng = np.random.default_rng(SEED)
    for _ in range(20):
        inputs = {n: rng.uniform(entry["low"], entry["high"], s).astype(d) for n, s, d in c.specs}
        ref = run_build(c.ref, c.names, inputs)
        assert compare_outputs(ref, run_build(c.full, c.names, inputs), Tolerance()).score <= 1.0
    assert c.range_scores(c.full)[-1] > 1.0


@pytest.mark.parametrize("name", NAMES)
def test_violation_in_range(name):
    scores = case(name).range_scores(case(name).full)
    assert max(scores) > 1.0, f"{name}: no violation in [{ENTRIES[name]['low']}, {ENTRIES[name]['high']}]: {scores}"


@pytest.mark.parametrize("name", NAMES)
def test_culprit_is_an_optional_event(name):
    c, entry = case(name), ENTRIES[name]
    assert entry["culprit"] in c.optional_ids, f"{name}: {entry['culprit']} not in {c.optional_ids}"
    for event_id in entry["minimal_set"] + list(entry.get("skip_alone", {})):
        assert event_id in c.optional_ids, f"{name}: {event_id} is not an optional event"
    event = next(e for e in c.optional if e.id == entry["culprit"])
    assert event.level == entry["level"]
    assert event.changed is True, f"{name}: the planted pass did not change the module"


@pytest.mark.parametrize("name", NAMES)
def test_culprit_introduces_the_violation(name):
    """What prefix bisection sees: clean before the culprit, bad through it."""
    c, entry = case(name), ENTRIES[name]
    k = c.optional_ids.index(entry["culprit"])
    before = c.build(frozenset(c.optional_ids[k:]))
    through = c.build(frozenset(c.optional_ids[k + 1:]))
    assert max(c.range_scores(before)) <= 1.0, f"{name}: already violates before {entry['culprit']}"
    assert max(c.range_scores(through)) > 1.0, f"{name}: no violation with events through {entry['culprit']}"


@pytest.mark.parametrize("name", NAMES)
def test_minimal_set_clears(name):
    c, entry = case(name), ENTRIES[name]
    cleared = c.build(frozenset(entry["minimal_set"]))
    assert max(c.range_scores(cleared)) <= 1.0, f"{name}: skipping {entry['minimal_set']} does not clear it"


@pytest.mark.parametrize(
    "name,event_id",
    [(n, e) for n in NAMES for e in ENTRIES[n].get("skip_alone", {}) if [e] != ENTRIES[n]["minimal_set"]],
)
def test_skip_alone(name, event_id):
    """Skipping one event alone from the full pipeline gives the stated verdict."""
    c = case(name)
    expected = ENTRIES[name]["skip_alone"][event_id]
    assert expected in ("clean", "violation")
    violated = max(c.range_scores(c.build(frozenset([event_id])))) > 1.0
    assert violated == (expected == "violation"), f"{name}: skipping {event_id} alone should be {expected}"


@pytest.mark.parametrize("name", [n for n in NAMES if ENTRIES[n].get("clean_range")])
def test_no_violation_in_clean_range(name):
    c = case(name)
    low, high = ENTRIES[name]["clean_range"]
    scores = c.scores(c.full, low, high)
    assert max(scores) <= 1.0, f"{name}: violation in clean range [{low}, {high}]: {scores}"


def test_pair_each_pass_alone_is_harmless():
    """The pair patch needs both passes: each one alone stays within tolerance."""
    for name in NAMES:
        entry = ENTRIES[name]
        if not entry.get("exposed_by"):
            continue
        c = case(name)
        others = [e for e in c.optional_ids if e not in (entry["exposed_by"], entry["culprit"])]
        for alone in (entry["exposed_by"], entry["culprit"]):
            partner = entry["culprit"] if alone == entry["exposed_by"] else entry["exposed_by"]
            build = c.build(frozenset(others + [partner]))
            assert max(c.range_scores(build)) <= 1.0, f"{name}: {alone} alone violates"
