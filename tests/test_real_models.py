"""Real models from the onnx wheel (weights randomized): no false alarms on
TVM's own optimizing pipelines, and a planted culprit found in a real model."""

import math

import pytest

import tvm_numguard as ng
from tvm_numguard.testing import light_model

# the fast tier keeps one real model; the others (builds of minutes on 2 cores) are -m slow
FAST = ["squeezenet"]  # shufflenet moved to SLOW: 30 s of the fast tier, the same question as squeezenet
SLOW = ["shufflenet", "inception_v1", "bvlc_alexnet", "resnet50", "densenet121"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("light")
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = ng.load_model(light_model(name, seed=0, directory=str(directory)))
        return cache[name]

    return get


def assert_clean(model, pipeline):
    report = ng.bisect(model, ng.CompileConfig(pipeline=pipeline),
                       ng.Options(low=0.0, high=1.0, search="random", budget="2"))
    assert not report.violation, report.summary()
    # randomized weights give realistic, non-degenerate outputs
    out = report.data["metrics"][0]
    assert out["nan_ref"] == 0 and out["inf_ref"] == 0
    return report


@pytest.mark.slow  # SqueezeNet twice; the patches' models cover false alarms in the fast tier
@pytest.mark.parametrize("pipeline", ["zero", "default"])
@pytest.mark.parametrize("name", FAST)
def test_no_false_alarm_on_tvm_pipelines(models, name, pipeline):
    assert_clean(models(name), pipeline)


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", ["zero", "default"])
@pytest.mark.parametrize("name", SLOW)
def test_no_false_alarm_on_large_models(models, name, pipeline):
    assert_clean(models(name), pipeline)


@pytest.mark.slow  # about 10 builds of SqueezeNet: the patches' own models cover the culprit in the fast tier
def test_planted_tir_culprit_in_a_real_model(models):
    model = models("squeezenet")
    config = ng.CompileConfig(pipeline="default", tir_pipeline="default,patches.tir_tf32:make_pass")
    report = ng.bisect(model, config, ng.Options(low=0.0, high=1.0, search="random", budget="2"))
    assert report.culprit == "TF32ReductionProducts#0"
    n = report.data["bisection"]["optional_events"]
    assert report.data["builds"]["builds"] <= math.log2(n) + 4
