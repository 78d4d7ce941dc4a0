"""numguard bisect names the planted culprit of every patch in patches/."""

import importlib
import json
import math
import os

import pytest

import tvm_numguard as ng
from tvm_numguard.ir.model import from_irmodule

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = json.load(open(os.path.join(ROOT, "patches", "manifest.json")))


def make_model(spec):
    module_name, _, attr = spec["model"].partition(":")
    mod = getattr(importlib.import_module(module_name), attr)()
    return from_irmodule(mod, spec["model"], spec["name"])


def run(spec, strategy="bisect", low=None, high=None):
    config = ng.CompileConfig(pipeline=spec["pipeline"], tir_pipeline=spec["tir_pipeline"])
    options = ng.Options(low=spec["low"] if low is None else low, high=spec["high"] if high is None else high,
                         strategy=strategy)
    return ng.bisect(make_model(spec), config, options)


@pytest.mark.parametrize("spec", MANIFEST, ids=[s["name"] for s in MANIFEST])
def test_bisect_blames_the_planted_pass(spec):
    report = run(spec)
    bis = report.data["bisection"]
    assert report.violation
    assert report.culprit == spec["culprit"], bis
    assert bis["culprit"]["level"] == spec["level"]
    assert report.minimal_set == spec["minimal_set"]
    # binary search plus confirmation; the detection builds come on top
    assert bis["builds"] <= math.ceil(math.log2(bis["optional_events"])) + 1
    ng.report.validate(report.to_json())


@pytest.mark.parametrize("spec", [s for s in MANIFEST if s["level"] == "tir"][:1], ids=lambda s: s["name"])
def test_linear_isolation_agrees_on_a_tir_culprit(spec):
    bisected, linear = run(spec), run(spec, strategy="linear")
    assert linear.culprit == bisected.culprit == spec["culprit"]
    assert linear.data["bisection"]["builds"] > bisected.data["bisection"]["builds"]


@pytest.mark.parametrize("spec", [s for s in MANIFEST if s.get("clean_range")], ids=lambda s: s["name"])
def test_range_dependent_bug_is_clean_outside_its_range(spec):
    low, high = spec["clean_range"]
    report = run(spec, low=low, high=high)
    assert not report.violation and report.exit_code == 0
