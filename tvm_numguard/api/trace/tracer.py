"""``numguard trace``: bisect, then explain: the per-pass table and the origin.

Runs what ``numguard bisect`` runs (search, oracle, bisection), then on the
witness: the per-pass table (passes.py) and, for the event the finding
blames (``Blame.localize``), the origin and propagation graph (origin.py).
The report is the bisect report with ``command: "trace"`` and a ``trace``
section.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import tvm

from ...engine import engine
from ...judge.finding import Finding
from ...ir.instrument.recorder import EventSnapshot
from ...locate.options import Options
from ...ir.provenance import describe as describe_provenance, model_name
from ...ir.pipeline import CompileConfig
from ...base.progress import Progress, waiting
from ...locate.bisect.driver import probe_parts
from ...report import Report
from ...build.session import BuildSession
from ...ir.targets import local_target, target_of
from ...build.session import RunContext
from ...build.workers import Workers
from ...build.capture.kernels import capture_values, with_views
from ...ir.values.value_graph import value_graph
from .origin import Localization, localize_kernels, localize_relax
from .passes import PassTable

# a TIR pass's error is found by capturing every kernel's values, which a GPU
# target's build would give only on the device, in this process
TIR_NOT_LOCALIZED = ("not localized: a TIR pass is localized by capturing kernel values in numguard's own "
                     "process, which never runs on the GPU (the per-pass table still measures it)")


@dataclasses.dataclass
class TraceResult:
    """The ``trace`` section: the per-pass rows (passes.PassRow), the builds they
    took, the event localized and its Localization."""

    passes: list
    snapshot_builds: int
    gated_builds: int
    culprit: Optional[str]
    localization: Localization

    def to_json(self) -> dict:
        return {"passes": [r.to_json() for r in self.passes], "snapshot_builds": self.snapshot_builds,
                "gated_builds": self.gated_builds, "culprit": self.culprit, **self.localization.to_json()}


def trace(model, config: Optional[CompileConfig] = None, options: Optional[Options] = None, progress: Progress = None,
          on_build: Optional[Callable] = None, on_witness: Optional[Callable[[dict], None]] = None,
          workers: Optional[Workers] = None) -> Report:
    """Bisect, then measure every pass and localize the blamed event's error.
    ``on_witness`` and ``workers`` as in ``api.bisect``."""
    context = RunContext.of(progress, on_build, on_witness, workers)
    return Report.from_finding(engine.run(model, config or CompileConfig(), options or Options(), context,
                                          engine.Steps("trace", then=traced)))


def traced(session: BuildSession, finding: Finding) -> Finding:
    """``finding`` with its ``trace`` section, where it has a witness that is not clean (trace's own step)."""
    if finding.witness is None or finding.verdict == "clean":
        return finding
    return dataclasses.replace(finding, trace=explain(session, finding))


def explain(session: BuildSession, finding: Finding) -> TraceResult:
    """Measure every pass on the finding's witness and localize the blamed event's error."""
    progress = session.progress
    tol, witness = session.tol, finding.searched_witness
    progress("measuring every pass that changed the module on the witness (per-pass table)")
    table = PassTable(session, witness, tol)
    table.start()  # on the workers, while this process localizes
    culprit = finding.blame().localize
    localization = Localization(None, None, {"nodes": [], "edges": []}, "no culprit to localize")
    if culprit is not None:
        progress(f"localizing the error of {culprit}")
        event = next(e for e in session.events if e.id == culprit)
        # two plain builds (float16 ones take minutes to make on a CPU), each run with every kernel's value kept
        with waiting(progress, f"localizing {culprit}: the module before and after it built plainly and run with "
                     "every kernel's value kept", 2 * sum(probe_parts(session))):
            if event.level == "relax":
                localization = _localize_relax(session, event, witness, tol)
            elif session.runs.elsewhere is not None:
                localization = Localization(None, None, {"nodes": [], "edges": []}, TIR_NOT_LOCALIZED)
            else:
                localization = _localize_tir(session, culprit, witness, tol)
    if localization.origin is not None:
        origin = localization.origin
        origin["provenance"] = describe_provenance(session.model.provenance, origin["value_before"],
                                                   origin["op_before"])
    for node in localization.graph["nodes"]:  # the graph speaks the user's names where the model has them
        node["model_name"] = model_name(session.model.provenance, node["matched"], node["op_before"])
    rows = table.rows()
    return TraceResult(rows, table.snapshot_builds, table.gated_builds, culprit, localization)


def _localize_relax(session: BuildSession, event, witness, tol) -> Localization:
    """The Relax event's snapshots before and after, each built alone and its
    values captured in this process, for its ``targets.local_target`` (the
    session's target, or plain LLVM for a GPU target) as the oracle is: the
    session builds and counts them where that is its own target."""
    text = local_target(session.config.target)
    own = session.build_module if text == session.config.target else None
    return localize_relax(_snapshot_before(session, event), _snapshots(session)[event.id],
                          session.model.input_names(), witness, target_of(text), tol, own)


def _snapshots(session: BuildSession) -> dict:
    """The optimized build's IR snapshots, by event id (a trace is made after that build)."""
    assert session.optimized is not None, "the optimized build is read before it was made"
    return session.optimized.snapshots


def _snapshot_before(session: BuildSession, event) -> tvm.IRModule:
    snapshots = _snapshots(session)
    before = session.model.mod
    for e in session.events:
        if e.index >= event.index:
            break
        if e.id in snapshots:
            before = snapshots[e.id]
    return before


def _localize_tir(session: BuildSession, culprit: str, witness, tol) -> Localization:
    """Both builds share the Relax structure of the last snapshot with kernels."""
    snap = EventSnapshot(culprit)
    full = session.build(frozenset(), instruments=[snap])
    without = session.build([culprit])
    if not full.ok or not without.ok:
        return Localization(None, None, {"nodes": [], "edges": []}, "the builds around the culprit fail")
    names = session.model.input_names()
    for event in reversed(session.events):
        mod = _snapshots(session).get(event.id)
        if mod is None or "main" not in [g.name_hint for g in mod.get_global_vars()]:
            continue
        try:
            graph = value_graph(mod)
        except Exception:  # a late snapshot whose main no longer has plain bindings
            continue
        if not graph.kernels():
            continue
        try:
            after = with_views(graph, capture_values(full.executable, full.device, graph, names, witness))
            before = with_views(graph, capture_values(without.executable, without.device, graph, names, witness))
        except Exception:  # kernel names changed after this snapshot (or it no longer runs): try an earlier one
            continue
        return localize_kernels(graph, before, after, tol, snap.before, snap.after)
    return Localization(None, None, {"nodes": [], "edges": []},
                       "no Relax snapshot's kernels line up with the executable's kernel calls")
