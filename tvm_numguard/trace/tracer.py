"""``numguard trace``: bisect, then explain: the per-pass table and the origin.

Runs what ``numguard bisect`` runs (search, oracle, bisection), then on the
witness: the per-pass shadow table (passes.py) and, for the culprit, the
origin and propagation graph (localize.py). The report is the bisect report
with ``command: "trace"`` and a ``trace`` section.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import tvm

from ..api import Options, _as_model, check_session, finish_report
from ..instrument.snapshot import EventSnapshot
from ..pipeline import CompileConfig
from ..report import Report
from ..search import make_strategy, parse_budget, resolve_ranges
from ..shadow.build import compile_model
from ..shadow.session import ShadowSession
from .capture import capture_values
from .graph import value_graph
from .localize import Localization, localize_kernels, localize_relax
from .passes import relax_rows, tir_rows

Progress = Optional[Callable[[str], None]]


def trace(model, config: CompileConfig = CompileConfig(), options: Options = Options(), progress: Progress = None,
          on_build: Optional[Callable] = None, on_witness: Optional[Callable[[dict], None]] = None) -> Report:
    """Bisect, then measure every pass and localize the culprit's error.
    ``on_witness`` as in ``api.bisect``: called with a violation's witness before the long work."""
    started = time.perf_counter()
    progress = progress or (lambda message: None)
    model = _as_model(model)
    ranges = resolve_ranges(model.inputs, options.low, options.high, options.ranges)
    strategy = make_strategy(options.search, budget=parse_budget(options.budget))
    session = ShadowSession(model, config, options.tolerance, progress, on_build)
    session.prepare()
    data, witness = check_session(session, options, ranges, strategy, "trace", progress, on_witness)
    data["search"]["budget"] = options.budget
    data["trace"] = None
    if witness is not None and data["verdict"] != "clean":
        data["trace"] = explain(session, data, witness, options, progress)
    return finish_report(data, session, witness, started)


def explain(session: ShadowSession, data: dict, witness, options: Options, progress) -> dict:
    tol = options.tolerance
    progress("measuring every pass that changed the module on the witness (per-pass table)")
    before_builds = session.build_count
    rows, runner = relax_rows(session, witness, tol)
    rows += tir_rows(session, witness, tol)
    culprit = _culprit(data)
    localization = Localization(None, None, {"nodes": [], "edges": []}, "no culprit to localize")
    if culprit is not None:
        progress(f"localizing the error of {culprit}")
        event = next(e for e in session.events if e.id == culprit)
        if event.level == "relax":
            before = _snapshot_before(session, event)
            localization = localize_relax(before, session.optimized.snapshots[culprit], session.model.input_names(),
                                          witness, session.config.make_target(), tol)
        else:
            localization = _localize_tir(session, culprit, witness, tol)
    return {
        "passes": [r.to_json() for r in rows],
        "snapshot_builds": runner.builds,
        "gated_builds": session.build_count - before_builds,
        "culprit": culprit,
        **localization.to_json(),
    }


def _culprit(data: dict) -> Optional[str]:
    bis = data.get("bisection") or {}
    if bis.get("culprit"):
        return bis["culprit"]["id"]
    minimal = bis.get("minimal_set") or []
    return minimal[-1]["id"] if minimal else None


def _snapshot_before(session: ShadowSession, event) -> tvm.IRModule:
    snapshots = session.optimized.snapshots
    before = session.model.mod
    for e in session.events:
        if e.index >= event.index:
            break
        if e.id in snapshots:
            before = snapshots[e.id]
    return before


def _localize_tir(session: ShadowSession, culprit: str, witness, tol) -> Localization:
    """Both builds share the Relax structure of the last snapshot with kernels."""
    config = session.config
    snap = EventSnapshot(culprit)
    full = compile_model(session.model.mod, config, frozenset(), instruments=[snap])
    without = session.build(session.close([culprit]))
    if not full.ok or not without.ok:
        return Localization(None, None, {"nodes": [], "edges": []}, "the builds around the culprit fail")
    names = session.model.input_names()
    for event in reversed(session.events):
        mod = session.optimized.snapshots.get(event.id)
        if mod is None or "main" not in [g.name_hint for g in mod.get_global_vars()]:
            continue
        try:
            graph = value_graph(mod)
        except Exception:  # a late snapshot whose main no longer has plain bindings
            continue
        if not graph.kernels():
            continue
        try:
            after = capture_values(full.executable, full.device, graph, names, witness)
            before = capture_values(without.executable, without.device, graph, names, witness)
        except Exception:  # kernel names changed after this snapshot (or it no longer runs): try an earlier one
            continue
        return localize_kernels(graph, before, after, tol, snap.before, snap.after)
    return Localization(None, None, {"nodes": [], "edges": []},
                        "no Relax snapshot's kernels line up with the executable's kernel calls")
