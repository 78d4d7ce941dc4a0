"""Sweep TVM's ONNX import over the onnx wheel's operator tests: does TVM compute what ONNX defines?

    python benchmarks/node_sweep.py [--jobs 2] [--only PATTERN] [--timeout 300] [--json rows.json] [--failures]
    python benchmarks/node_sweep.py --tables rows.json [--failures]

The onnx wheel (1.23) ships no ``data/node`` folder, but it ships the
generator of its operator tests: ``onnx.backend.test.case.node.collect_testcases``
gives every test as a model and data sets (inputs, expected outputs), the
expected outputs computed by ONNX's own numpy code: a truth that needs no
framework. Each case, in a forked child (TVM can segfault or hang: a crash and a
timeout are categories of their own), is imported with
``from_onnx(model, keep_params_in_input=False)`` (again with the concrete input
shapes as ``shape_dict`` where that fails), built with ``tvm.compile(mod,
"llvm")``, run on every data set (``main`` takes the inputs in graph-input
order; sequence, optional and map inputs are counted, not run) and judged by
``judge_case``: numguard's import rule with the expected outputs as the
framework and, in float64, as the truth, its tolerance following the floats
the model computes in (``model_history``).

Prints the counts (imported / not imported: OpNotImplemented or another error;
built / build fails; ran / run fails; agree; differ; unjudged; crash /
timeout) and one line per differing or unjudged case (name, op, score, the
elements with no finite expected value that differ, max abs, worst element TVM
vs expected); ``--failures`` adds one line per case that did not get as far as a
judgement. All cases take 3-7 minutes on 2 cores: run it with nice, in the
background.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import multiprocessing
import os
import re
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

def collect(only: str | None) -> list:
    """The operator tests (onnx's TestCase objects), those whose name matches ``only``."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():  # the generators divide by zero on purpose (ReduceMax of nothing, ...)
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    return [c for c in cases if not only or re.search(only, c.name)]


def case_op(case, ops_by_name: dict) -> str:
    """The operator a case tests: its one node's; an ``_expanded`` case's (the
    function body of an operator) is the operator's; else the nodes' types."""
    base = case.name[: -len("_expanded")] if case.name.endswith("_expanded") else None
    if base in ops_by_name:
        return ops_by_name[base]
    kinds = list(dict.fromkeys(n.op_type for n in case.model.graph.node))
    return kinds[0] if len(kinds) == 1 else "+".join(kinds)[:60]


def graph_input_kinds(model) -> list:
    """(name, ``tensor``/``sequence``/``optional``/``map``) per graph input that is no initializer."""
    initializers = {i.name for i in model.graph.initializer}
    return [(i.name, (i.type.WhichOneof("value") or "none").replace("_type", ""))
            for i in model.graph.input if i.name not in initializers]


def as_arrays(values):
    """``values`` with every TensorProto (some generators store those) made an array, lists kept lists."""
    from onnx import TensorProto, numpy_helper

    if isinstance(values, TensorProto):
        return numpy_helper.to_array(values)
    if isinstance(values, (list, tuple)):
        return [as_arrays(v) for v in values]
    return values


def flat_values(values) -> list:
    """Arrays of ``values``, sequences (lists, tuples, TVM arrays) flattened in order."""
    import tvm

    out: list = []

    def visit(value):
        if value is None:  # an empty optional
            return
        if isinstance(value, tvm.runtime.Tensor):
            out.append(value.numpy())
        elif isinstance(value, tvm.runtime.ShapeTuple):  # a Shape output: one int64 tensor, not a tuple of ints
            out.append(np.array(list(value), dtype=np.int64))
        elif isinstance(value, (np.ndarray, np.generic, bool, int, float)):
            out.append(np.asarray(value))
        else:
            for item in value:
                visit(item)

    visit(values)
    return out


def error_line(err: BaseException, printed: str = "") -> str:
    """One line of an exception: its type, the first line of its message that
    says something, and the operator the importer ``printed`` it was converting."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip() and not ln.strip().startswith(("File ", "^"))]
    text = next((ln for ln in lines if "Check failed" in ln), lines[0] if lines else "")
    converting = re.findall(r"Error converting operator (\w+)", printed)  # printed, not raised, by the importer
    where = f" [converting {converting[-1]}]" if converting else ""
    return f"{type(err).__name__}: {text}{where}"[:240]


class ImportFailed(Exception):
    """Neither import worked: the first one's error and what the importer printed."""

    def __init__(self, error: BaseException, printed: str):
        super().__init__(error_line(error, printed))
        self.error = error


def import_model(model, shapes: dict):
    """(module, how): ``symbolic`` where the model imports as it is, ``shapes``
    where it needs the concrete input shapes; raises ImportFailed with the first
    import's error where neither imports (an OpNotImplemented is not retried)."""
    import tvm
    from tvm.relax.frontend.onnx import from_onnx

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            return from_onnx(model, keep_params_in_input=False), "symbolic"
        except Exception as first:  # noqa: BLE001 - any importer error is a finding to count
            if isinstance(first, tvm.error.OpNotImplemented) or not shapes:
                raise ImportFailed(first, printed.getvalue()) from None
            try:
                return from_onnx(model, shape_dict=shapes, keep_params_in_input=False), "shapes"
            except Exception:  # noqa: BLE001
                raise ImportFailed(first, printed.getvalue()) from None


def value_dtypes(model, inputs: list, expected: list) -> dict:
    """{tensor name: numpy dtype name}: initializers, ONNX's shape inference, and
    the data set's inputs and expected outputs (which win: they are what runs)."""
    import onnx
    from onnx import helper, numpy_helper

    dtypes = {t.name: numpy_helper.to_array(t).dtype.name for t in model.graph.initializer}
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - a model inference refuses keeps the dtypes its data gives
        inferred = model.graph
    for info in list(inferred.value_info) + list(inferred.input) + list(inferred.output):
        if info.type.WhichOneof("value") == "tensor_type" and info.type.tensor_type.elem_type:
            dtypes[info.name] = helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type).name
    names = [name for name, _ in graph_input_kinds(model)]
    for name, value in [*zip(names, inputs), *zip((o.name for o in model.graph.output), expected)]:
        if isinstance(value, np.ndarray):
            dtypes[name] = value.dtype.name
    return dtypes


def model_history(model, inputs: list, expected: list) -> tuple:
    """Per expected output array (``flat_values``' order), the narrowest float the
    model computes it in: ``onnx_history``, as numguard's import judge reads it."""
    from tvm_numguard.judge.framework.history import onnx_history

    history = onnx_history(model, value_dtypes(model, inputs, expected))
    return tuple(history.get(output.name) for output, value in zip(model.graph.output, expected)
                 for _ in flat_values([value]))


def judge_case(expected: list, computed: list, history) -> dict:
    """numguard's judgement of TVM's outputs against ONNX's expected ones (the
    expected outputs are the framework and, in float64, the truth): a case
    differs where an output's ``tvm_at_fault`` holds (another shape counts) or
    the number of outputs differs; ``unjudged`` counts the differing elements
    whose expected value is not finite. The one place the rule is called."""
    from tvm_numguard.judge.import_stage.agreement import compare_outputs_with_framework
    from tvm_numguard.base.tolerance import Tolerance
    from tvm_numguard.base.numbers import plain

    if len(expected) != len(computed):
        return {"differs": True, "unjudged": 0, "why": f"{len(computed)} outputs, {len(expected)} expected"}
    tol = Tolerance().through(history)
    truth = [np.asarray(e).astype(np.float64) for e in expected]
    outputs = compare_outputs_with_framework(expected, computed, tol, truth=truth)
    unjudged = sum(o.unjudged for o in outputs if o.not_judged)
    worst = max(outputs, key=lambda o: (o.tvm_at_fault, o.not_judged, o.score), default=None)  # reported
    if worst is None:
        return {"differs": False, "unjudged": 0}
    dtypes = [f"{e.dtype}->{c.dtype}" for e, c in zip(expected, computed) if e.dtype != c.dtype]
    return {"differs": any(o.tvm_at_fault for o in outputs), "unjudged": unjudged, "output": worst.index,
            "score": worst.score, "max_abs": worst.max_abs, "worst": plain(worst.worst),
            "shapes": plain([worst.shape_tvm, worst.shape_framework]), "dtypes": dtypes}


def run_case(case, report_stage=lambda stage: None) -> dict:
    """Import, build, run and judge one case in this process (a forked child)."""
    import tvm
    from tvm import relax

    kinds = graph_input_kinds(case.model)
    data_sets = [(as_arrays(list(inputs)), as_arrays(list(expected))) for inputs, expected in case.data_sets]
    first_inputs = data_sets[0][0]
    shapes = {name: list(np.shape(v)) for (name, kind), v in zip(kinds, first_inputs) if kind == "tensor"}
    report_stage("import")
    try:
        mod, how = import_model(case.model, shapes)
    except ImportFailed as failed:
        kind = "OpNotImplemented" if isinstance(failed.error, tvm.error.OpNotImplemented) else "import error"
        return {"outcome": kind, "detail": str(failed)}
    row = {"imported": how}
    report_stage("build")
    try:
        executable = tvm.compile(mod, "llvm")
    except Exception as err:  # noqa: BLE001
        return {**row, "outcome": "build fails", "detail": error_line(err)}
    others = [f"{name} ({kind})" for name, kind in kinds if kind != "tensor"]
    if others:
        return {**row, "outcome": "input not a tensor", "detail": ", ".join(others)}
    judged = []
    for inputs, expected in data_sets:
        report_stage("run")
        try:
            vm = relax.VirtualMachine(executable, tvm.cpu())
            args = [tvm.runtime.tensor(np.require(np.asarray(v), requirements="C")) for v in inputs]
            computed = flat_values(vm["main"](*args))
        except Exception as err:  # noqa: BLE001
            return {**row, "outcome": "run fails", "detail": error_line(err)}
        report_stage("judge")
        judged.append(judge_case(flat_values(expected), computed, model_history(case.model, inputs, expected)))
    worst = max(judged, key=lambda j: (j["differs"], j["unjudged"] > 0, j.get("score", float("inf"))))
    outcome = "differ" if worst["differs"] else "unjudged" if worst["unjudged"] else "agree"
    return {**row, "outcome": outcome, **worst}


# ---------------------------------------------------------------------------
# one child per case


def _child(case, conn) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # TVM's own warnings and logs are not the sweep's output
    os.dup2(devnull, 2)
    warnings.simplefilter("ignore")
    try:
        row = run_case(case, lambda stage: conn.send(("stage", stage)))
    except Exception as err:  # noqa: BLE001 - the judgement itself failed: say so in the row
        row = {"outcome": "run fails", "detail": f"while judging: {error_line(err)}"}
    conn.send(("row", json.loads(json.dumps(row, default=str))))
    conn.close()


class Running:
    """A child working on one case: its process, pipe, start and last stage."""

    def __init__(self, context, index: int, case):
        self.index, self.case, self.stage, self.started = index, case, "start", time.perf_counter()
        self.conn, child_conn = context.Pipe(duplex=False)
        self.process = context.Process(target=_child, args=(case, child_conn), daemon=True)
        self.process.start()
        child_conn.close()

    def poll(self, timeout: float):
        """The row once the child is done (a crash or a timeout is a row too), else None."""
        while self.conn.poll():
            try:
                kind, value = self.conn.recv()
            except EOFError:
                break
            if kind == "row":
                self.process.join()
                return value
            self.stage = value
        if not self.process.is_alive():
            self.process.join()
            code = self.process.exitcode
            why = f"signal {-code}" if code and code < 0 else f"exit {code}"
            return {"outcome": "crash", "stage": self.stage, "detail": f"{why} during {self.stage}"}
        if time.perf_counter() - self.started > timeout:
            self.process.kill()
            self.process.join()
            return {"outcome": "timeout", "stage": self.stage, "detail": f"over {timeout:g} s during {self.stage}"}
        return None


def sweep(cases: list, jobs: int, timeout: float, progress=None) -> list:
    """One row per case, each computed in a forked child, ``jobs`` at a time."""
    import tvm  # noqa: F401 - imported once here, not in every child
    import tvm.relax.frontend.onnx  # noqa: F401

    import tvm_numguard.judge.framework.history  # noqa: F401
    import tvm_numguard.judge.import_stage.agreement  # noqa: F401

    context = multiprocessing.get_context("fork")
    ops_by_name = {c.name: case_op(c, {}) for c in cases}
    waiting, running, rows = collections.deque(enumerate(cases)), [], {}
    while waiting or running:
        while waiting and len(running) < jobs:
            running.append(Running(context, *waiting.popleft()))
        multiprocessing.connection.wait([r.conn for r in running] + [r.process.sentinel for r in running], 0.5)
        for child in list(running):
            row = child.poll(timeout)
            if row is not None:
                running.remove(child)
                rows[child.index] = {"case": child.case.name, "op": case_op(child.case, ops_by_name),
                                     "seconds": round(time.perf_counter() - child.started, 2), **row}
                if progress:
                    progress(len(rows), len(cases), rows[child.index])
    return [rows[i] for i in sorted(rows)]


# ---------------------------------------------------------------------------
# the tables


def _number(value) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else str(value)


def difference_line(row: dict) -> str:
    """One line of a case that differs or is unjudged: the output, its score,
    the elements nothing could judge, the worst element (or the shapes)."""
    if "why" in row:
        return f"  differ  {row['case']} [{row['op']}]: {row['why']}"
    worst = (row.get("worst") or {})
    shapes = row.get("shapes") or [None, None]
    where = (f"shape {shapes[0]} vs expected {shapes[1]}" if shapes[0] != shapes[1] else
             f"worst at {worst.get('index')}: tvm {_number(worst.get('tvm'))} vs expected "
             f"{_number(worst.get('framework'))}")
    dtypes = f", dtype {' '.join(row['dtypes'])}" if row.get("dtypes") else ""
    return (f"  {row['outcome']:<8} {row['case']} [{row['op']}]: output {row.get('output')}, "
            f"score {_number(row.get('score'))}, unjudged {row.get('unjudged', 0)}, "
            f"max abs {_number(row.get('max_abs'))}, {where}{dtypes}")


def print_tables(rows: list, failures: bool) -> None:
    count = collections.Counter(r["outcome"] for r in rows)
    judged = ("agree", "differ", "unjudged")
    not_imported = count["OpNotImplemented"] + count["import error"]
    # a child that crashed or hung got as far as the stage it was in
    imported = sum(1 for r in rows if "imported" in r or r.get("stage") in ("build", "run", "judge"))
    built = sum(1 for r in rows if r["outcome"] in ("input not a tensor", "run fails", *judged)
                or r.get("stage") in ("run", "judge"))
    ran = sum(count[o] for o in judged)
    with_shapes = sum(1 for r in rows if r.get("imported") == "shapes")
    print(f"{len(rows)} cases")
    print(f"  imported {imported} (with the concrete input shapes: {with_shapes}) | not imported {not_imported}: "
          f"OpNotImplemented {count['OpNotImplemented']}, other error {count['import error']}")
    print(f"  built {built} | build fails {count['build fails']}")
    print(f"  ran {ran} | run fails {count['run fails']} | inputs not tensors (sequence/optional/map, not run) "
          f"{count['input not a tensor']}")
    other_dtype = [r["case"] for r in rows if r["outcome"] == "agree" and r.get("dtypes")]
    print(f"  agree {count['agree']} (of which with another dtype, values equal: {len(other_dtype)}"
          + (f": {', '.join(other_dtype)}" if other_dtype else "") + f") | differ {count['differ']} | "
          f"unjudged (differ only where the expected value is not finite) {count['unjudged']}")
    print(f"  crash {count['crash']} | timeout {count['timeout']}")
    for row in rows:
        if row["outcome"] in ("differ", "unjudged"):
            print(difference_line(row))
    for row in rows:
        if row["outcome"] in ("crash", "timeout") or (failures and row["outcome"] not in judged):
            print(f"  {row['outcome']:<18} {row['case']} [{row['op']}]: {row.get('detail', '')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="children at a time")
    parser.add_argument("--only", metavar="PATTERN", help="only the cases whose name matches this regular expression")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one case may take")
    parser.add_argument("--json", dest="json_path", help="write the rows here")
    parser.add_argument("--failures", action="store_true", help="a line for every case that was not judged")
    parser.add_argument("--tables", metavar="ROWS.json", help="print the tables of saved rows, sweep nothing")
    args = parser.parse_args()
    if args.tables:
        print_tables(json.load(open(args.tables)), args.failures)
        return 0
    cases = collect(args.only)
    if not cases:
        print(f"node_sweep: no operator test matches {args.only!r}", file=sys.stderr)
        return 2
    started = time.perf_counter()

    def progress(done, total, row):
        if done % 50 == 0 or done == total:
            print(f"[{done}/{total}] {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    rows = sweep(cases, args.jobs, args.timeout, progress)
    if args.json_path:
        json.dump(rows, open(args.json_path, "w"), indent=1)
    print(f"{len(cases)} operator tests in {time.perf_counter() - started:.0f} s ({args.jobs} jobs)")
    print_tables(rows, args.failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
