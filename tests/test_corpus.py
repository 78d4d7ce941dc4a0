"""A seeded sample of the onnx wheel's real models through `numguard bisect`
(issue 10.3; the whole corpus: benchmarks/corpus_sweep.py).

No tool error (traceback, crash, an exit code other than 0/1/2, an exit 2 that
is not one clean line) and no violation on TVM's default CPU pipeline, which
changed no number on any model tried so far.
"""

import random

import pytest

from benchmarks.corpus_sweep import onnx_cases, sweep

SAMPLE, SEED = 32, 0


@pytest.mark.slow
def test_a_seeded_sample_of_real_models_gives_no_tool_error_and_no_false_alarm():
    cases = sorted(random.Random(SEED).sample(onnx_cases(), SAMPLE), key=lambda c: c["name"])
    rows = sweep(cases, ["default"], jobs=2, budget="10,20s", timeout=600)
    assert len(rows) == SAMPLE
    errors = [f"{r['case']}: {r.get('detail')}" for r in rows if r["outcome"] == "tool error"]
    assert not errors, "\n".join(errors)
    alarms = [f"{r['case']}: culprit {r.get('culprit')}, score {r.get('score')}" for r in rows
              if r["outcome"] == "violation"]
    assert not alarms, "\n".join(alarms)
    checked = [r for r in rows if r["outcome"] in ("clean", "benign")]
    assert len(checked) >= SAMPLE * 2 // 3, [(r["case"], r["outcome"]) for r in rows]
    # the reference build was compared with the cases' expected outputs
    assert sum(1 for r in checked if r.get("baseline", {}).get("ok")) >= len(checked) - 3
