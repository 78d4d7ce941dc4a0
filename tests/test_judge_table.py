"""The judge table's instrument (patches/imports, benchmarks/judge_table.py).

Fast: every planted defect really changes what TVM's import computes on its
float32 model (both imports built and run, compared with numpy: no numguard),
and every patch puts the converter back, also when the block raises; the
premises of the contexts hold (ONNX Runtime has no float64 Erf; a mixed-dtype
torch model's ``.double()`` is no float64 model); a cell's outcome follows
the verdict and the named node; the forked runner survives a cell that
hangs, dies or raises. Slow: the table's quick subset meets the targets
(>= 95% caught, no false alarm) -- which the import judge of today does not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from patches import imports
from patches.imports import _random_onnx, clean, contexts
from patches.imports._graph import PLANTED
from patches.imports.judging import defect_outcome, fork_all

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOAT32_TOL = 1e-5  # float32's default rtol: a defect must move TVM's result far beyond it


def _tvm_outputs(path: str, x: np.ndarray, planted=None) -> list:
    """TVM's import of ``path`` built and run on ``x``, with ``planted`` active while it imports
    and builds (a converter acts at import, a legalization or an intrinsic's lowering at build)."""
    import tvm
    from tvm import relax

    with planted() if planted else contextlib.nullcontext():
        mod = _import(path)
        executable = tvm.compile(mod, "llvm")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    out = vm["main"](tvm.runtime.tensor(x))
    return [o.numpy() for o in ([out] if hasattr(out, "numpy") else list(out))]


def _import(path: str):
    if path.endswith(".onnx"):
        import onnx
        from tvm.relax.frontend.onnx import from_onnx

        return from_onnx(onnx.load(path))
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    return from_exported_program(torch.export.load(path))


def _largest_relative_change(ours: list, theirs: list) -> float:
    """The largest relative change; a value that became NaN or infinite is an infinite one."""
    worst = 0.0
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        with np.errstate(invalid="ignore"):
            change = np.abs(a - b) / (np.abs(b) + 1e-3)
        change = np.where(np.isfinite(a) == np.isfinite(b), np.nan_to_num(change, nan=0.0), np.inf)
        worst = max(worst, float(np.max(change)))
    return worst


def test_the_manifest_lists_every_defect_module_with_what_it_declares():
    here = os.path.join(ROOT, "patches", "imports")
    modules = sorted(f[:-3] for f in os.listdir(here)
                     if f.startswith(("onnx_", "torch_", "legal_", "intrin_")) and f.endswith(".py"))
    assert sorted(imports.DEFECTS) == modules
    entries = imports.manifest()
    assert len(entries) >= 20 and sum(e["frontend"] == "torch" for e in entries) >= 8
    components = [e["component"] for e in entries]
    assert components.count("legalization") >= 10 and components.count("codegen") >= 10  # issue 51's measure
    for entry in entries:
        assert (entry["component"] == "conversion") == (entry["attribute"] is None) and entry["subject"] is not None
    kinds = {e["kind"] for e in entries}
    assert {"ignored attribute", "wrong default", "wrong axis", "approximate formula", "negative index",
            "narrowed dtype"} <= kinds
    for entry in entries:
        assert entry["low"] < entry["high"] and entry["plants"] and entry["converter"]
        assert set(entry["unfair"]) | set(entry["unbuildable"]) <= set(contexts.contexts_for(entry["name"]))


def test_the_readme_lists_every_defect():
    with open(os.path.join(ROOT, "patches", "imports", "README.md")) as f:
        rows = [line for line in f if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == list(imports.DEFECTS)


@pytest.mark.parametrize("name", imports.DEFECTS)
def test_the_defect_changes_tvms_import_and_the_stock_converter_is_back_after(name, tmp_path):
    module = imports.load(name)
    cell = contexts.build(name, "a", str(tmp_path))
    rng = np.random.default_rng(0)
    showing = getattr(module, "showing_input", None)  # a defect of exact ties shows on ties only
    x = (showing(module.SHAPE, rng) if showing else rng.uniform(cell.low, cell.high, module.SHAPE)).astype(np.float32)
    stock = _tvm_outputs(cell.path, x)
    planted = _tvm_outputs(cell.path, x, module.planted)
    assert _largest_relative_change(planted, stock) > 20 * FLOAT32_TOL
    assert _largest_relative_change(_tvm_outputs(cell.path, x), stock) == 0.0  # the stock converter is back


def _converters() -> dict:
    """Every ONNX converter's ``_impl_vNN`` objects and the torch importer's table maker, as they are now."""
    from tvm.relax.frontend.onnx import onnx_frontend
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    import tvm

    state = {"torch": ExportedProgramImporter.__dict__["create_convert_map"]}
    for name, cls in vars(onnx_frontend).items():
        if isinstance(cls, type) and issubclass(cls, onnx_frontend.OnnxOpConverter):
            state.update({(name, k): v for k, v in vars(cls).items() if k.startswith("_impl_v")})
    for name in imports.DEFECTS:  # the operator attributes the plants below the frontend replace
        attribute = getattr(imports.load(name), "ATTRIBUTE", None)
        if attribute is not None:
            state[attribute] = tvm.ir.Op.get(attribute[0]).get_attr(attribute[1])
    return state


@pytest.mark.parametrize("name", imports.DEFECTS)
def test_planting_changes_the_converter_and_restores_it_when_the_block_raises(name):
    before = _converters()
    with pytest.raises(RuntimeError, match="inside"):
        with imports.load(name).planted():
            assert _converters() != before
            raise RuntimeError("inside the block")
    after = _converters()
    assert after.keys() == before.keys() and all(_same(after[k], before[k]) for k in before)


def _same(a, b) -> bool:
    """The same converter, or the same TVM operator attribute (a packed function compares by handle)."""
    return a is b or (a is not None and b is not None and getattr(a, "same_as", None) is not None and a.same_as(b))


def test_onnxruntime_has_no_float64_kernel_for_the_operator_of_context_e():
    import onnxruntime
    from onnx import TensorProto, helper

    def session(elem):
        graph = helper.make_graph([helper.make_node(contexts.NO_FLOAT64_OP, ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", elem, [2])],
                                  [helper.make_tensor_value_info("y", elem, [2])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 10
        return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])

    assert session(TensorProto.FLOAT).run(None, {"x": np.zeros(2, np.float32)})[0].tolist() == [0.0, 0.0]
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        session(TensorProto.DOUBLE)


def test_every_context_names_its_planted_node_and_the_torch_mixed_one_is_no_float64_model(tmp_path):
    import onnx
    import torch

    for context in contexts.contexts_for("onnx_clip_max"):
        cell = contexts.build("onnx_clip_max", context, str(tmp_path))
        assert cell.key == PLANTED and PLANTED in [n.name for n in onnx.load(cell.path).graph.node]
    for context in contexts.contexts_for("torch_softmax_dim"):
        cell = contexts.build("torch_softmax_dim", context, str(tmp_path))
        assert cell.key == "_softmax"
    cell = contexts.build("torch_softmax_dim", "f", str(tmp_path))
    doubled = torch.export.load(cell.path).module().double()  # context f: a float16 branch inside
    try:
        outputs = doubled(torch.rand(4, 8, dtype=torch.float64))
    except RuntimeError:  # torch 2.13: the exported .to(float16) asserts its input is float32
        outputs = None
    assert outputs is None or any(o.dtype != torch.float64 for o in outputs)
    with pytest.raises(ValueError, match="not one of"):
        contexts.build("torch_softmax_dim", "e", str(tmp_path))


def _judgement(verdict, key=None, node="ONNX Clip node 'planted' (output 'planted')", component="conversion",
               subject="TVM's ONNX frontend: its Clip converter"):
    from tvm_numguard.judge.components.verdict import Component, ComponentVerdict, NodePlacement, Outcome

    origin = types.SimpleNamespace(key=key, node=node) if key else None
    placement = NodePlacement(node, key or "", (ComponentVerdict(Component(component), Outcome.AT_FAULT, subject,
                                                                 "why"),)) if component else None
    return types.SimpleNamespace(verdict=verdict, origin=origin, origin_note=None, reason="why", truth=None,
                                 outputs=[], placement=placement)


def test_a_cell_is_caught_only_by_an_import_verdict_naming_the_planted_node_and_component():
    assert defect_outcome(_judgement("import", PLANTED), PLANTED)["outcome"] == "caught"
    kernel = _judgement("import", PLANTED, component="legalization", subject="relax.round legalized by LegalizeOps")
    assert defect_outcome(kernel, PLANTED, "legalization", "relax.round")["outcome"] == "caught"
    assert defect_outcome(kernel, PLANTED, "legalization", "relax.floor")["outcome"] == "missed"
    blamed_frontend = defect_outcome(_judgement("import", PLANTED), PLANTED, "codegen", "tirx.tanh")
    assert blamed_frontend["outcome"] == "missed" and "wrong part: conversion" in blamed_frontend["why"]
    unplaced = defect_outcome(_judgement("import", PLANTED, component=None), PLANTED)
    assert unplaced["outcome"] == "missed" and "no part of TVM named" in unplaced["why"]
    wrong = defect_outcome(_judgement("import", "mul_2", node="ONNX Mul node 'mul_2'"), PLANTED)
    assert wrong["outcome"] == "missed" and "wrong node" in wrong["why"] and "mul_2" in wrong["why"]
    assert defect_outcome(_judgement("import"), PLANTED)["why"].startswith("import, no node named")
    for verdict in ("agrees", "benign", "precision", "unjudged", "unanswered"):
        row = defect_outcome(_judgement(verdict, PLANTED), PLANTED)
        assert row["outcome"] == "missed" and row["why"].startswith(verdict)
    assert defect_outcome(None, PLANTED)["outcome"] == "missed"


@dataclasses.dataclass(frozen=True)
class _FakeJob:
    label: str
    action: str
    model: object = None
    defect: str = "onnx_clip_max"
    context: str = "a"

    def run(self, budget):
        from tvm_numguard.base.errors import ModelError

        if self.action == "hang":
            time.sleep(60)
        if self.action == "die":
            os._exit(3)
        if self.action == "raise":
            raise ModelError("a bad model")
        if self.action == "crash":
            raise KeyError("deep inside")
        return {"kind": "defect", "defect": self.defect, "context": self.context, "outcome": "caught",
                "verdict": "import", "why": budget}


def test_the_runner_survives_a_cell_that_hangs_dies_or_raises(tmp_path, monkeypatch):
    jobs = [_FakeJob(a, a) for a in ("hang", "die", "raise", "crash", "ok")]
    heard = []
    started = time.monotonic()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    rows = {r["why"].split(":")[0] if r["outcome"] != "caught" else "ok": r
            for r in fork_all(jobs, 3, timeout=3.0, budget="7", progress=heard.append)}
    assert not [f for f in os.listdir(tmp_path) if f.startswith("numguard-")]  # the cells' logs go with the table
    assert time.monotonic() - started < 30
    assert len(rows) == 5 and len(heard) == 5
    assert rows["ok"]["why"] == "7"
    outcomes = sorted(r["outcome"] for r in rows.values())
    assert outcomes == ["caught", "error", "error", "error", "timeout"]
    assert any("died (exit 3)" in r["why"] for r in rows.values())
    assert any(r["why"].startswith("ModelError: a bad model") for r in rows.values())
    assert any(r["why"].startswith("traceback KeyError") for r in rows.values())


def test_the_clean_generator_is_seeded_and_its_graphs_run_in_onnxruntime():
    import onnxruntime

    for seed in range(6):
        for dtype in (np.float32, np.float16):
            model, low, high = _random_onnx.random_graph(seed, dtype)
            assert model.SerializeToString() == _random_onnx.random_graph(seed, dtype)[0].SerializeToString()
            assert len(model.graph.node) >= 3
            session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            x = np.random.default_rng(seed).uniform(low, high, _random_onnx.SHAPE).astype(dtype)
            for out in session.run(None, {"x": x}):
                assert out.dtype.kind != "f" or np.isfinite(out).all()
    for name in clean.SPECIALS:
        assert clean.special_model(name).graph.node


@pytest.mark.slow  # about 1.5 to 2 minutes on 2 cores; EXPECTED to fail on the import judge of d9445a4
def test_the_quick_table_meets_the_targets(tmp_path):
    out = tmp_path / "table.json"
    run = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "judge_table.py"), "--quick",
                          "--jobs", "2", "--json", str(out)], capture_output=True, text=True, timeout=900,
                         env={**os.environ, "PYTHONPATH": ROOT})
    summary = json.loads(out.read_text())["summary"]
    assert run.returncode == (0 if summary["met"] else 1), run.stderr[-2000:]
    assert summary["false_alarms"] == 0, run.stdout[-4000:]
    assert summary["share"] >= 0.95, run.stdout[-4000:]
