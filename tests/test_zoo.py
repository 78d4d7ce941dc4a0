"""The zoo corpus: transformer and vision blocks from torch.export, and the passes that fire on them."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from tvm_numguard.locate.options import Options  # noqa: E402
from tvm_numguard.ir.pipeline import CompileConfig  # noqa: E402
from tvm_numguard.testing.regress import RowRequest, collect, regress  # noqa: E402
from tvm_numguard.build.workers import Workers  # noqa: E402

# (pass, zoo model it must rewrite): over the onnx-node corpus and the tiny models these changed none
FIRES_ON = {
    "FoldBatchnormToConv2D": "zoo/resnet-basic",
    "AdjustMatmulOrder": "zoo/matmul-chain",
    "ExpandMatmulOfSum": "zoo/lora-sum",
    "CombineParallelMatmul": "zoo/qkv-inputs",
}


def _request(spec: str, out_dir: str) -> RowRequest:
    return RowRequest(CompileConfig(pipeline=f"[{spec}],zero"), Options(low=0.0, high=1.0, budget="60"), out_dir)


def test_the_zoo_lists_its_blocks_with_their_ranges():
    models = {m.name: m for m in collect(["zoo"])}
    assert {"zoo/bert-layer", "zoo/vit-layer", "zoo/gpt2-layer", "zoo/llama-layer", *FIRES_ON.values()} <= set(models)
    assert dict((n, (lo, hi)) for n, lo, hi in models["zoo/qkv-inputs"].ranges)["wq"] == (-0.5, 0.5)
@pytest.mark.slow  # end to end; the fast tier keeps unit tests of the same logic
def test_passes_that_fired_on_no_onnx_model_fire_on_the_zoo_and_stay_clean(tmp_path):
    for spec, name in FIRES_ON.items():
        row, = regress([_request(spec, str(tmp_path))], collect([name]), Workers(jobs=0)).rows
        assert row.changed and row.verdict == "clean", (spec, row)


@pytest.mark.slow
def test_gpt2_and_llama_are_reported_as_not_buildable_not_hidden(tmp_path):
    run = regress([_request("FoldConstant", str(tmp_path))],
                  collect(["zoo/gpt2-layer", "zoo/llama-layer", "zoo/bert-layer"]), Workers(jobs=2))
    gpt2, llama, bert = run.rows
    for row in (gpt2, llama):
        assert row.verdict == "untestable" and row.reason.startswith("does not build, with or without the pass")
    assert bert.changed and bert.verdict == "clean"


def test_a_stock_pass_that_segfaults_on_a_zoo_block_is_one_untestable_row(tmp_path):
    # TVM 0.27's AdjustMatmulOrder crashes the process on this attention block (docs/findings.md)
    run = regress([_request("AdjustMatmulOrder", str(tmp_path))], collect(["zoo/qkv-inputs", "zoo/matmul-chain"]),
                  Workers(jobs=2))
    crashed, chain = run.rows
    assert crashed.verdict == "untestable" and "SIGSEGV" in crashed.reason
    assert chain.changed and chain.verdict == "clean"
