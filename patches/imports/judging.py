"""Judging one cell of the judge table with numguard's public API, and
running cells in forked processes (``benchmarks/judge_table.py`` prints the table).

A defect cell is ``caught`` when the import verdict is "import" and its
origin names the planted node (its key: ONNX output tensor, FX node);
anything else is ``missed``, with the verdict and why in a few words. A clean
model's row keeps its verdict; "import" or "unjudged" there is a false alarm.
numguard's own errors (``NumguardError``) are rows too (``error``), as are
a cell past its time (``timeout``) and a process that died (``error``).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import shutil
import sys
import tempfile
import time
import traceback

from . import load
from .clean import CleanModel, options_range
from .clean import load as load_clean
from .contexts import build, planted_in

PIPELINE = "zero"  # a reference and an optimized build that compute the same: the import question alone
UNBUILT = "not importable"  # a clean model TVM 0.27 does not import or build: no row to judge, not counted


def _judgement(model, options_kw: dict, budget: str):
    """numguard's ImportJudgement of ``model`` (a Model) on the range ``options_kw``."""
    import tvm_numguard as ng
    from tvm_numguard.locate.options import Options
    from tvm_numguard.ir.pipeline import CompileConfig
    from tvm_numguard.build.workers import Workers

    options = Options(budget=budget, seed=0, **options_kw)
    report = ng.bisect(model, CompileConfig(pipeline=PIPELINE), options, workers=Workers(jobs=0))
    return report.finding.imports


def judge_defect(name: str, context: str, budget: str) -> dict:
    """Plant defect ``name``, build its model in ``context``, judge it: the cell's row."""
    from tvm_numguard.ir.model import load_model

    row = {"kind": "defect", "defect": name, "context": context}
    with tempfile.TemporaryDirectory() as directory:
        cell = build(name, context, directory)
        with planted_in(name, context):  # active while numguard imports the model, and after
            model = load_model(cell.path)
            judgement = _judgement(model, {"low": cell.low, "high": cell.high}, budget)
    module = load(name)
    row.update(defect_outcome(judgement, cell.key, getattr(module, "COMPONENT", "conversion"),
                              getattr(module, "SUBJECT", "")))
    return row


def defect_outcome(judgement, key: str, component: str = "conversion", subject: str = "") -> dict:
    """{"outcome": caught / missed, "verdict", "why"} of a defect cell whose planted node is ``key``,
    planted in the part of TVM ``component`` (its verdict's subject naming ``subject``)."""
    if judgement is None:
        return {"outcome": "missed", "verdict": None, "why": "no import judgement (no framework ran)"}
    verdict, origin = judgement.verdict, judgement.origin
    if verdict == "import" and origin is not None and origin.key == key:
        blamed = placed_at_fault(judgement)
        if blamed is None:
            return {"outcome": "missed", "verdict": verdict, "why": f"{verdict}, no part of TVM named at "
                                                                    f"{origin.node}: {_unplaced(judgement)}"}
        if blamed.component.value != component or subject not in blamed.subject:
            return {"outcome": "missed", "verdict": verdict, "why": f"{verdict}, wrong part: {blamed.component.value} "
                                                                    f"({blamed.subject}) at {origin.node}"}
        return {"outcome": "caught", "verdict": verdict, "why": f"{blamed.component.value}: {blamed.subject}"}
    if verdict == "import":
        why = (f"wrong node: names {origin.node}" if origin is not None
               else f"no node named: {judgement.origin_note or judgement.reason or '?'}")
    else:
        why = _why(judgement)
    return {"outcome": "missed", "verdict": verdict, "why": f"{verdict}, {why}"}


def placed_at_fault(judgement):
    """The first component verdict at fault in ``judgement``'s placement (None: none)."""
    placement = getattr(judgement, "placement", None)
    at_fault = placement.at_fault if placement is not None else ()
    return at_fault[0] if at_fault else None


def _unplaced(judgement) -> str:
    placement = getattr(judgement, "placement", None)
    if placement is None:
        return "no placement"
    return "; ".join(f"{v.component.value} {v.outcome.value}" + (f" ({v.reason[:80]})" if v.outcome.value == "unjudged"
                                                                 else "") for v in placement.verdicts)


def _why(judgement) -> str:
    """A verdict's reason in a line, with the truth it was judged against."""
    parts = [judgement.reason or ""]
    if judgement.truth:
        parts.append(f"truth: {judgement.truth}")
    if judgement.verdict == "agree":
        worst = max((o.score for o in judgement.outputs), default=0.0)
        parts.append(f"on the witness TVM and the framework agree (score {worst:.3g})")
    return "; ".join(p for p in parts if p)[:300]


def judge_clean(model: CleanModel, budget: str) -> dict:
    """Judge clean model ``model`` (no defect planted): its row."""
    from tvm_numguard.base.errors import ImportFailure, ModelError, PipelineBreaksError, UnsupportedModel

    row = {"kind": "clean", "name": model.name, "group": model.group}
    with tempfile.TemporaryDirectory() as directory:
        try:
            judgement = _judgement(load_clean(model, directory), options_range(model), budget)
        except (ModelError, ImportFailure, PipelineBreaksError, UnsupportedModel) as err:
            # TVM 0.27 cannot import it, or build it with every optional pass skipped: nothing to judge
            row.update(outcome=UNBUILT, verdict=None, why=str(err).splitlines()[0][:200])
            return row
    verdict = judgement.verdict if judgement is not None else None
    why = "" if verdict in (None, "agree") else _why(judgement)
    if verdict == "import" and judgement.origin is not None:
        why = f"{judgement.origin.node}; {why}"
    row.update(outcome="judged", verdict=verdict, why=why)
    return row


def run_job(job, budget: str) -> dict:
    """``job.run(budget)``, numguard's errors and other exceptions made an ``error`` row."""
    from tvm_numguard.base.errors import NumguardError

    started = time.perf_counter()
    try:
        row = job.run(budget)
    except NumguardError as err:
        row = _error_row(job, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    except Exception as err:  # noqa: BLE001 - a traceback from inside the tool is a row, not the end of the table
        where = traceback.extract_tb(err.__traceback__)[-1]
        row = _error_row(job, f"traceback {type(err).__name__}: {str(err)[:150]} "
                              f"({os.path.basename(where.filename)}:{where.lineno})")
    row["seconds"] = round(time.perf_counter() - started, 2)
    return row


def _error_row(job, why: str) -> dict:
    if job.model is not None:
        return {"kind": "clean", "name": job.model.name, "group": job.model.group, "outcome": "error",
                "verdict": None, "why": why}
    return {"kind": "defect", "defect": job.defect, "context": job.context, "outcome": "error", "verdict": None,
            "why": why}


def _child(job, budget: str, connection, log_path: str) -> None:
    """A forked cell: its output to ``log_path`` (TVM warns on stderr), its row through ``connection``."""
    os.environ["TVM_NUM_THREADS"] = "1"  # a tiny model's kernels gain nothing from threads beside other cells
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    connection.send(run_job(job, budget))
    connection.close()
    sys.stdout.flush()
    os._exit(0)  # no atexit handlers of the parent's libraries in a forked child


def warm() -> None:
    """Import what every cell needs, once, so that each forked cell starts with
    it (imports only: nothing may run here that starts a thread pool a fork cannot copy)."""
    import importlib

    for name in ("onnx", "onnxruntime", "torch", "torch.export._trace", "torch._dynamo", "tvm",
                 "tvm.relax.frontend.onnx.onnx_frontend",
                 "tvm.relax.frontend.torch.exported_program_translator", "tvm_numguard.api.public",
                 "tvm_numguard.engine.engine"):
        try:
            importlib.import_module(name)
        except ImportError:  # an extra not installed: its cells say so themselves
            pass


def fork_all(jobs: list, parallel: int, timeout: float, budget: str, progress=None) -> list:
    """Run every job in a process forked for it alone, ``parallel`` at a time,
    each killed after ``timeout`` seconds; the rows in the order they finished.
    ``progress(line)`` (default: stderr) hears of each."""
    progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    warm()
    context = multiprocessing.get_context("fork")
    pending, running, rows = list(jobs), {}, []
    logs = tempfile.mkdtemp(prefix="numguard-judge-table-")  # each child's output, read for a dead child's row
    try:
        while pending or running:
            while pending and len(running) < max(1, parallel):
                job = pending.pop(0)
                receive, send = context.Pipe(duplex=False)
                log_path = os.path.join(logs, f"{len(rows) + len(running)}.log")
                process = context.Process(target=_child, args=(job, budget, send, log_path), daemon=True)
                process.start()
                send.close()
                running[process.sentinel] = (job, process, receive, time.monotonic(), log_path)
            deadline = min(started + timeout for _, _, _, started, _ in running.values())
            ready = multiprocessing.connection.wait(list(running), timeout=max(0.0, deadline - time.monotonic()))
            for sentinel in list(running):
                job, process, receive, started, log_path = running[sentinel]
                if sentinel in ready:
                    process.join()
                    row = _received(receive) or _error_row(job, f"the process died (exit {process.exitcode}): "
                                                                f"{_last_line(log_path)}")
                elif time.monotonic() - started >= timeout:
                    process.kill()
                    row = _error_row(job, f"past {timeout:.0f} s")
                    row["outcome"] = "timeout"
                else:
                    continue
                process.join()
                receive.close()
                del running[sentinel]
                rows.append(row)
                progress(f"[{len(rows)}/{len(jobs)}] {job.label}: {row['outcome']}"
                         f"{' (' + str(row.get('verdict')) + ')' if row.get('verdict') else ''} "
                         f"{row.get('seconds', '')}")
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    return rows


def _received(connection):
    """The row a cell sent, or None where it died first (the pipe is closed and empty)."""
    try:
        return connection.recv() if connection.poll() else None
    except EOFError:
        return None


def _last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "no output"
    return lines[-1][:200] if lines else "no output"
