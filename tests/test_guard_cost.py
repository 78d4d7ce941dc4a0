"""What a guarded compile leaves out of every compile (issue 54, item 4): its
verdict's report is validated against the schema here, in the tests, not by
each first compile (jsonschema's validator: about 0.3 plain compiles of
SqueezeNet)."""

import glob
import json
import os

import pytest
import tvm

import tvm_numguard as ng
from tvm_numguard.report import validate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")


def _guarded_compiles(cache: str, pipeline) -> list:
    mod = ng.load_model(MLP).mod
    with pytest.warns(ng.NumericalRiskWarning) if pipeline is not None else _nothing():
        with ng.guard(0.0, 1.0, cache=cache, jobs=0, budget="3", time_limit=None, action="report") as guarded:
            tvm.compile(mod, "llvm", relax_pipeline=pipeline) if pipeline is not None else tvm.compile(mod, "llvm")
    return guarded.report


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _mixed_precision():
    from tvm import relax

    return tvm.transform.Sequential([relax.transform.ToMixedPrecision(), relax.get_pipeline("default")])


@pytest.mark.parametrize("verdict", ["clean", "violation"])
def test_a_guarded_compile_validates_no_document(tmp_path, monkeypatch, verdict):
    from tvm_numguard.report import document

    def refused(*args, **kwargs):
        raise AssertionError("a guarded compile validated a report document")

    monkeypatch.setattr(document, "validate", refused)
    report = _guarded_compiles(str(tmp_path), _mixed_precision() if verdict == "violation" else None)
    assert report[0].verdict == verdict and glob.glob(str(tmp_path / "*" / "*.json"))


@pytest.mark.parametrize("verdict", ["clean", "violation"])
def test_the_verdict_a_guard_keeps_is_a_valid_report(tmp_path, verdict):
    _guarded_compiles(str(tmp_path), _mixed_precision() if verdict == "violation" else None)
    (path,) = glob.glob(str(tmp_path / "*" / "*.json"))
    with open(path, encoding="utf-8") as f:
        entry = json.load(f)
    assert entry["verdict"] == verdict
    validate(entry["report"])


def test_a_cached_verdict_is_read_into_one_report_without_walking_it(tmp_path, monkeypatch):
    """The kept document is made a Report once, and not walked again (each
    walk converts every number: about 2% of a SqueezeNet compile): it was
    read back from JSON, plain already."""
    from tvm_numguard.report import document

    _guarded_compiles(str(tmp_path), None)
    walked, read = [], []
    real_plain, real_read = document.plain, document.Report.read_back
    monkeypatch.setattr(document, "plain", lambda data: walked.append(1) or real_plain(data))
    monkeypatch.setattr(document.Report, "read_back", classmethod(lambda cls, data: read.append(1) or real_read(data)))
    report = _guarded_compiles(str(tmp_path), None)
    assert report[0].data["guard"]["cached"] and len(read) == 1 and not walked
