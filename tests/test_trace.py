"""numguard trace: the per-pass table, the origin, the propagation graph, the HTML (issue 4)."""

import importlib
import json
import math
import os
import re

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_numguard as ng
from tvm_numguard.locate.bisect import prefix_bisect
from tvm_numguard.ir.model import from_irmodule
from tvm_numguard.report import validate
from tvm_numguard.base.tolerance import Tolerance
from tvm_numguard.ir.values.value_graph import value_graph
from tvm_numguard.api.trace.origin import localize_relax
from tvm_numguard.ir.values.value_match import match_values

from html import escape as html_escape

from clirun import run_cli, run_printed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
MANIFEST = json.load(open(os.path.join(ROOT, "patches", "manifest.json")))


def _number(value):
    return math.inf if value in ("inf", "nan") else float(value)


def _patch_trace(spec):
    module_name, _, attr = spec["model"].partition(":")
    model = from_irmodule(getattr(importlib.import_module(module_name), attr)(), spec["model"], spec["name"])
    config = ng.CompileConfig(pipeline=spec["pipeline"], tir_pipeline=spec["tir_pipeline"])
    return ng.trace(model, config, ng.Options(low=spec["low"], high=spec["high"], budget="100"))


# a trace per planted bug: two in the fast tier (a Relax and an in-place pass), the rest in the slow one
FAST_TRACES = ("fold_fp16", "inplace_softmax")


@pytest.mark.parametrize("spec", [s if s["name"] in FAST_TRACES else pytest.param(s, marks=pytest.mark.slow)
                                  for s in MANIFEST], ids=[s["name"] for s in MANIFEST])
def test_origin_is_the_planted_operator_and_reaches_a_violating_output(spec):
    report = _patch_trace(spec)
    validate(report.to_json())
    traced = report.data["trace"]
    assert traced["culprit"] == spec["culprit"]
    origin = traced["origin"]
    assert origin is not None, traced["reason"]
    assert spec["origin"] == origin["op"] or spec["origin"] in (origin["kernel"] or ""), origin
    assert _number(origin["score"]) > 1.0
    nodes = {n["id"]: n for n in traced["graph"]["nodes"]}
    assert nodes[origin["value"]]["origin"] and nodes[origin["value"]]["on_path"]
    # a path of on-path edges from the origin to a violating output
    edges = {}
    for e in traced["graph"]["edges"]:
        if e["on_path"]:
            edges.setdefault(e["src"], []).append(e["dst"])
    reached, stack = set(), [origin["value"]]
    while stack:
        name = stack.pop()
        if name not in reached:
            reached.add(name)
            stack.extend(edges.get(name, []))
    assert any(nodes[n]["output"] and nodes[n]["violating"] for n in reached), traced["graph"]
    if spec["level"] == "tir":
        assert origin["tir_before"] and origin["tir_after"] and origin["tir_before"] != origin["tir_after"]
    else:
        assert origin["binding_before"] != origin["binding_after"]


def test_unchanged_events_cost_no_build():
    spec = next(s for s in MANIFEST if s["name"] == "fold_fp16")
    report = _patch_trace(spec)
    traced = report.data["trace"]
    relax_rows = [r for r in traced["passes"] if r["level"] == "relax"]
    changed = [e for e in report.data["events"] if e["level"] == "relax" and e["changed"] and "/" not in e["id"]
               and not e["wrapper"]]
    assert [r["id"] for r in relax_rows] == [e["id"] for e in changed]
    assert traced["snapshot_builds"] == len(relax_rows) + 1  # the input module, then one per changed event
    culprit_row = next(r for r in traced["passes"] if r["id"] == spec["culprit"])
    assert _number(culprit_row["local"]["score"]) > 1.0
    others = [r for r in relax_rows if r["id"] != spec["culprit"]]
    assert others and all(_number(r["local"]["score"]) <= 1.0 for r in others)


def test_matching_looks_through_casts_and_renamed_values():
    model = ng.load_model(DEMO)
    before = relax.transform.LegalizeOps()(model.mod)
    mixed = relax.transform.ToMixedPrecision()(model.mod)
    after = relax.transform.LegalizeOps()(mixed)
    g_before, g_after = value_graph(before, model.mod), value_graph(after, mixed)
    matching = match_values(g_before, g_after)
    assert matching.share == 1.0
    for a_name, b_name in matching.pairs.items():
        a, b = g_after.nodes[a_name], g_before.nodes[b_name]
        assert a.shape == b.shape and (a.op == b.op or a.kind == "param"), (a, b)
    # names alone would pair values of different operators: ToMixedPrecision renumbers them
    renamed = [n for n in g_after.order if n in g_before.nodes and g_after.nodes[n].op != g_before.nodes[n].op]
    assert renamed


def test_localize_relax_names_the_first_mixed_precision_kernel():
    model = ng.load_model(DEMO)
    mixed = relax.transform.ToMixedPrecision()(model.mod)
    x = {"x": np.random.default_rng(0).uniform(0, 1, (1, 32)).astype("float32")}
    loc = localize_relax(model.mod, mixed, ["x"], x, tvm.target.Target("llvm"), Tolerance())
    first_kernel_op = next(n for n in value_graph(model.mod).order if n != "x")
    assert loc.origin["value_before"] == first_kernel_op
    assert loc.origin["op"] == "relax.matmul"


@pytest.mark.parametrize("bad_from, untestable, expected", [
    (1, set(), 1), (5, set(), 5), (8, set(), 8), (6, {4}, 6), (6, {2}, 6),
    (4, {4}, None), (6, {5}, None), (3, {1, 2}, None),  # the boundary touches an untestable snapshot
])
def test_snapshot_chain_bisection(bad_from, untestable, expected):
    calls = []

    def is_bad(i):
        calls.append(i)
        return None if i in untestable else i >= bad_from

    result = prefix_bisect(8, is_bad)  # the guard's chain search is the pipeline's prefix search
    found = result.bad if result.exact else None
    assert found == expected  # None: ambiguous, and said so rather than guessed
    assert len(calls) <= 3 + len(untestable) and sorted(result.untestable) == sorted(set(calls) & untestable)


@pytest.mark.slow  # the page, the graph and the plot end to end; the fast tier keeps trace's origin tests
def test_cli_trace_writes_html_dot_and_plot(tmp_path, capsys, script_not_on_path):
    html, dot, plot, report = (str(tmp_path / n) for n in ("t.html", "t.dot", "t.png", "t.json"))
    code, out, err = run_cli(capsys, "trace", DEMO, "--low", "0", "--high", "1", "--pipeline",
                             "ToMixedPrecision,default", "--budget", "30", "--html", html, "--dot", dot,
                             "--plot", plot, "--json", report)
    assert code == 1, err
    assert "origin    lv2 (relax.matmul" in out and "ToMixedPrecision#0" in out
    page = open(html).read()
    assert "ToMixedPrecision#0" in page and "id='origin'" in page and "relax.matmul" in page
    assert re.search(r"src='data:image/png;base64,[A-Za-z0-9+/]{100}", page)
    assert "<svg" in page
    assert open(dot).read().startswith("digraph propagation")
    assert open(plot, "rb").read()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.load(open(report))
    validate(data)
    assert data["command"] == "trace" and data["trace"]["origin"]["op"] == "relax.matmul"
    # the graph speaks the model's own tensor names (the demo's ONNX outputs h, t, l, y) beside TVM's
    names = {n["model_name"] for n in data["trace"]["graph"]["nodes"]} - {None}
    assert names and names <= {"h", "t", "l", "y"}, names
    assert any(f'label="{name}\\n' in open(dot).read() for name in names)
    assert "white-space: pre-wrap" in page  # long command lines fold, no sideways scrolling
    # the verify and replay lines run as printed from a shell where numguard is not on PATH, and do what they say
    printed = {ln.split()[0]: ln.split(None, 1)[1] for ln in out.splitlines()
               if ln.startswith(("  verify ", "  replay "))}
    assert printed["replay"].startswith(script_not_on_path + " bisect ") and html_escape(printed["replay"]) in page
    verify = run_printed(printed["verify"].split("   (expect: clean)")[0], tmp_path)
    assert verify.returncode == 0 and "numguard bisect: clean" in verify.stdout, verify.stderr[-2000:]
    replay = run_printed(printed["replay"], tmp_path)
    assert replay.returncode == 1 and "ToMixedPrecision#0" in replay.stdout, replay.stderr[-2000:]


def test_graph_boxes_show_the_models_name_first_and_tvms_beside_it():
    from tvm_numguard.report.propagation_svg import propagation_dot

    nodes = [{"id": "lv2", "op": "relax.matmul", "matched": "lv", "score": 58.0, "model_name": "h",
              "origin": True, "output": False},
             {"id": "lv7", "op": "relax.add", "matched": "lv5", "score": 3.0, "model_name": None,
              "origin": False, "output": True}]
    dot = propagation_dot({"nodes": nodes, "edges": [{"src": "lv2", "dst": "lv7", "on_path": True}]})
    assert 'label="h\\nrelax.matmul (lv2)\\nscore 58"' in dot  # the user's name, then TVM's
    assert 'label="lv7\\nrelax.add\\nscore 3"' in dot  # a value a pass made: TVM's name only


def test_clean_pipeline_has_nothing_to_trace_and_its_page_says_so(capsys, tmp_path):
    page = str(tmp_path / "t.html")
    code, out, err = run_cli(capsys, "trace", DEMO, "--low", "0", "--high", "1", "--pipeline", "default",
                             "--budget", "10", "--html", page)
    assert code == 0, err
    assert "nothing to trace" in out and page in out
    text = open(page).read()
    assert "nothing to trace" in text and "at fault: <span class='good'>nothing</span>" in text


@pytest.mark.slow
def test_real_model_trace_html_and_pass_errors_add_up(tmp_path, capsys):
    from tvm_numguard.testing import light_model

    path = light_model("squeezenet", seed=0, directory=str(tmp_path))
    html, report = str(tmp_path / "sq.html"), str(tmp_path / "sq.json")
    code, out, err = run_cli(capsys, "trace", path, "--shape", "data_0=1,3,64,64", "--fix-shapes",
                             "--low", "0", "--high", "1", "--pipeline", "ToMixedPrecision,default",
                             "--budget", "20", "--html", html, "--json", report)
    assert code == 1, err
    page = open(html).read()
    data = json.load(open(report))
    traced = data["trace"]
    assert traced["culprit"] == "ToMixedPrecision#0" and traced["origin"]["op"] == "relax.nn.conv2d"
    assert "ToMixedPrecision#0" in page and "id='origin'" in page and "data:image/png;base64," in page
    assert traced["matching"]["share"] > 0.9
    rows = [r for r in traced["passes"] if r["level"] == "relax" and r["local"]]
    local_sum = sum(r["local"]["max_abs"] for r in rows)
    cumulative = rows[-1]["cumulative"]["max_abs"]
    # the max-abs error of a chain is at most the sum of its steps; here they barely cancel
    assert cumulative <= local_sum * (1 + 1e-9) and local_sum <= 1.5 * cumulative


def test_matching_across_fusion_pairs_values_that_agree(tmp_path):
    """The default CPU pipeline fuses conv+add+relu groups and is clean: nearly every
    fused value finds its partner, and every pair agrees (a wrong pair would not)."""
    from tvm_numguard.build.compile import BuildRequest, compile_model
    from tvm_numguard.testing import tiny_cnn_onnx
    from tvm_numguard.build.capture.kernels import capture_values
    from tvm_numguard.api.trace.origin import value_errors

    model = ng.load_model(tiny_cnn_onnx(str(tmp_path / "cnn.onnx"), seed=0))
    fused = compile_model(model.mod, ng.CompileConfig(pipeline="default"),
                          BuildRequest(record=True)).snapshots["FuseTIR#0"]
    legal = relax.transform.LegalizeOps()(model.mod)
    before, after = value_graph(legal, model.mod), value_graph(fused)
    assert any(k.kernel.startswith("fused_") for k in after.kernels())
    matching = match_values(before, after)
    assert matching.share >= 0.9, matching.to_json()
    names = model.input_names()
    rng = np.random.default_rng(0)
    x = {s.name: rng.uniform(0, 1, s.shape).astype(s.dtype) for s in model.inputs}
    errors = value_errors(before, after, matching,
                          capture_values(tvm.compile(legal, "llvm"), tvm.cpu(), before, names, x),
                          capture_values(tvm.compile(fused, "llvm"), tvm.cpu(), after, names, x), Tolerance())
    assert len(errors) >= 3 and all(score <= 1.0 for score, _ in errors.values())


def _mlp_returning(form: str):
    """A two-matmul MLP whose main ends the way importers end it: ``gv = lv2``
    (BERT from ONNX and .pt2), or ``gv = (lv2, lv1)``."""
    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 32), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            w1 = relax.const(rng.uniform(-1, 1, (32, 32)).astype("float32"))
            w2 = relax.const(rng.uniform(-1, 1, (32, 16)).astype("float32"))
            h = bb.emit(relax.op.nn.relu(relax.op.matmul(x, w1)))
            y = bb.emit(relax.op.matmul(h, w2))
            gv = bb.emit_output(relax.Tuple([y, h]) if form == "tuple" else y)
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("form", ["alias", "tuple"])
def test_the_path_reaches_an_output_returned_through_an_alias_or_a_tuple(form):
    mod = _mlp_returning(form)
    assert "gv" in mod["main"].script()
    mixed = relax.transform.ToMixedPrecision()(mod)
    x = {"x": np.random.default_rng(0).uniform(0, 1, (1, 32)).astype("float32")}
    loc = localize_relax(mod, mixed, ["x"], x, tvm.target.Target("llvm"), Tolerance())
    outputs = [n for n in loc.graph["nodes"] if n["output"]]
    assert len(outputs) == (2 if form == "tuple" else 1)
    assert all(n["violating"] and n["on_path"] and n["score"] is not None for n in outputs), loc.graph["nodes"]


def test_a_view_no_kernel_computes_shows_its_arguments_error():
    """A reshape's kernel becomes a view of its argument in the build (TVM's
    RewriteDataflowReshape): no kernel call computes it, yet it holds its
    argument's elements, so the graph shows it with their error, not as 'no value'."""
    weights = np.random.default_rng(0).uniform(-1, 1, (32, 32)).astype("float32")

    def module(w1):  # a "pass" that changes the first matmul's weights by 0.1%
        bb = relax.BlockBuilder()
        x = relax.Var("x", relax.TensorType((1, 32), "float32"))
        with bb.function("main", [x]):
            with bb.dataflow():
                h = bb.emit(relax.op.matmul(x, relax.const(w1)))
                r = bb.emit(relax.op.reshape(h, (4, 8)))
                wide = bb.emit(relax.op.broadcast_to(r, (2, 4, 8)))
                back = bb.emit(relax.op.reshape(relax.op.sum(wide, axis=[0]), (1, 32)))
                gv = bb.emit_output(relax.op.matmul(back, relax.const(weights)))
            bb.emit_func_output(gv)
        return bb.get()

    x = {"x": np.random.default_rng(1).uniform(0, 1, (1, 32)).astype("float32")}
    loc = localize_relax(module(weights), module(weights * 1.001), ["x"], x, tvm.target.Target("llvm"),
                         Tolerance())
    nodes = {n["id"]: n for n in loc.graph["nodes"]}
    views = [n for n in nodes.values() if n["op"] in ("relax.reshape", "relax.broadcast_to")]
    assert len(views) == 3 and all(n["score"] is not None for n in nodes.values()), loc.graph["nodes"]
    for view in views:  # the same elements, rearranged or repeated: the same worst error
        (arg,) = [nodes[e["src"]] for e in loc.graph["edges"] if e["dst"] == view["id"]]
        assert view["score"] == arg["score"], (view, arg)


def test_a_violating_value_is_never_green_and_a_tolerated_one_always_is():
    from tvm_numguard.report.propagation_svg import _colour

    def rgb(score):
        colour = _colour(score)
        return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))

    for score in (0.0, 0.5, 1.0):
        r, g, _ = rgb(score)
        assert g > r, (score, _colour(score))
    for score in (1.01, 1.68, 7.6, 100.0, 1e4, math.inf):  # 7.6: a node the issue found drawn green
        r, g, _ = rgb(score)
        assert r > g, (score, _colour(score))
    assert rgb(None) == (0xcc, 0xcc, 0xcc)


def test_a_long_chain_is_drawn_in_columns_with_no_margin():
    from tvm_numguard.report.propagation_svg import LAYER_INCHES, LAYERS_PER_COLUMN, layout, propagation_svg

    chain = {"nodes": [{"id": f"v{i}", "op": "relax.add", "matched": f"w{i}", "score": 2.0, "origin": i == 0,
                        "output": i == 41} for i in range(42)],
             "edges": [{"src": f"v{i}", "dst": f"v{i + 1}", "on_path": True} for i in range(41)]}
    pos, span, rows = layout(chain)
    assert rows <= LAYERS_PER_COLUMN and span > 1  # 42 layers: 3 columns of 14
    assert max(y for _, y in pos.values()) == 0 and min(y for _, y in pos.values()) == -(rows - 1)
    height = float(re.search(r'<svg[^>]* height="([0-9.]+)pt"', propagation_svg(chain)).group(1))
    assert height == pytest.approx(rows * LAYER_INCHES * 72, rel=0.01)  # the drawing fills it: no blank gap


def test_the_origin_is_where_the_error_starts_growing_not_the_first_value_past_the_tolerance(tmp_path):
    """A Llama block under a pass that computes rsqrt in float16 (issue 55.2): at rtol 1e-3 the first
    RMSNorm's rsqrt adds a third of the tolerance, and the attention's matmuls, which the pass left as
    they were, carry it past the tolerance. The origin is that rsqrt, where the error starts, not the
    first value past the tolerance; the graph shows every value on the way, the second RMSNorm's rsqrt too."""
    from regress_passes import rsqrt_fp16
    from torch_blocks import llama_block

    model = ng.load_model(llama_block(tmp_path / "llama.pt2"))
    after = rsqrt_fp16(model.mod)
    x = {"x": np.random.default_rng(3).uniform(-2, 2, (1, 4, 16)).astype("float32")}
    loc = localize_relax(model.mod, after, ["x"], x, tvm.target.Target("llvm"), Tolerance(1e-3, 1e-6))
    rsqrts = [n for n in value_graph(model.mod).order if value_graph(model.mod).nodes[n].op == "relax.rsqrt"]
    assert len(rsqrts) == 2
    origin = loc.origin
    assert origin["op"] == "relax.rsqrt" and origin["value_before"] == rsqrts[0], origin
    assert 0.1 <= origin["score"] < 1.0 and origin["arguments_score"] == 0.0 and origin["rule"] == "grows"
    nodes = loc.graph["nodes"]
    first_past = next(n for n in nodes if n["score"] is not None and n["score"] > 1.0)
    assert first_past["op"] == "relax.matmul" and first_past["changed"] is False, first_past  # the old origin
    assert [n["matched"] for n in nodes if n["op"] == "relax.rsqrt"] == rsqrts  # both, on the way
    assert all(n["on_path"] for n in nodes if n["op"] in ("relax.rsqrt", "relax.matmul"))


def test_the_localization_of_the_culprit_is_never_silent(monkeypatch):
    """Issue 55.1: trace's localization builds two snapshots plainly and captures every kernel
    (minutes for a float16 model on a CPU): it runs inside a wait that says what it waits for."""
    from tvm_numguard.api.trace import tracer
    from tvm_numguard.api.trace.origin import Localization
    from tvm_numguard.base import progress

    said = []

    def localized(*args):
        current = getattr(progress._current, "waits", None)
        said.append(current[-1][0] if current else None)
        return Localization(None, None, {"nodes": [], "edges": []}, "not localized in this test")

    monkeypatch.setattr(tracer, "_localize_relax", localized)
    report = ng.trace(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"),
                      ng.Options(low=0.0, high=1.0, budget="5"), progress=lambda message: None)
    assert report.finding.trace.culprit == "ToMixedPrecision#0"
    assert len(said) == 1 and said[0] is not None and said[0].startswith("localizing ToMixedPrecision#0"), said
