"""Sweep `numguard bisect` over the real models that ship inside the onnx wheel.

    python benchmarks/corpus_sweep.py [--pipelines default,FastMathTransform,default;...] [--sample N --seed S]
                                      [--jobs 2] [--budget 20] [--json sweep.json]

Cases: onnx/backend/test/data/{pytorch-converted,pytorch-operator,simple}/*/model.onnx
(each with test_data_set_0: inputs and expected outputs) and light/light_*.onnx
(expected output only; placeholder weights, so the outputs do not depend on the
input). Each (case, pipeline) runs the real CLI, in a worker process (a case
that kills its worker is a crash, and the sweep goes on), with the inputs'
shapes from the test data and each input's range its test input's [min, max]
([0, 1] for the light models). For the `default` pipeline the reference build
is also run on the test inputs and compared with the expected outputs
(rtol 1e-3, atol 1e-5): a difference there is baseline error (frontend or
lowering), not a pass's.

Prints one table per pipeline: imported / not importable (one line naming the
operator or reason) / clean / violation / other outcome / tool error
(traceback, unexpected exit code, crash, timeout). Exit 1 if any tool error.

``--framework`` sweeps the import question instead (pipeline ``default``): the
node tests, the light models with random weights (``light:NAME``; their
placeholder weights make every output the same) and the zoo's torch and
transformers blocks (``zoo/NAME``, exported to ``.pt2``), each run with ONNX
Runtime or PyTorch eager beside TVM, and prints the framework table: imported,
framework ran, agree, import differs (and which side the float64 truth backs),
and each difference with the node it starts at.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUITES = ("pytorch-converted", "pytorch-operator", "simple", "light")
PIPELINES = ("default", "FastMathTransform,default", "ToMixedPrecision,default")
BASELINE_TOL = (1e-3, 1e-5)  # rtol, atol: what ONNX backend tests allow


def framework_cases() -> list:
    """The node tests, the light models with random weights, the zoo's blocks."""
    from tvm_numguard.testing.zoo import blocks
    from tvm_numguard.testing.zoo.models import LIGHT_MODELS

    cases = [c for c in onnx_cases() if not c["name"].startswith("light/")]
    cases += [{"name": f"light:{name}", "light": name, "data": {}} for name in LIGHT_MODELS]
    cases += [{"name": f"zoo/{e.name}", "zoo": e.name, "ranges": [list(r) for r in e.ranges], "data": {}}
              for e in blocks.ENTRIES.values()]
    return cases


def materialize(case: dict, directory: str) -> dict:
    """``case`` with its model file: a light model with random weights, a zoo block exported."""
    if "light" in case:
        from tvm_numguard.testing import light_model

        return {**case, "model": light_model(case["light"], seed=0, directory=directory)}
    if "zoo" in case:
        from tvm_numguard.testing.zoo.blocks import export

        return {**case, "model": export(case["zoo"], directory)}
    return case


def onnx_cases() -> list:
    """[{"name", "model", "data"}]: every case of the onnx wheel's test data, sorted."""
    import onnx

    base = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    cases = []
    for suite in SUITES:
        folder = os.path.join(base, suite)
        for entry in sorted(os.listdir(folder)):
            path = os.path.join(folder, entry)
            if suite == "light":
                if entry.endswith(".onnx"):
                    stem = entry[: -len(".onnx")]
                    cases.append({"name": f"light/{stem}", "model": path,
                                  "data": {"outputs": [os.path.join(folder, f"{stem}_output_0.pb")]}})
            elif os.path.isfile(os.path.join(path, "model.onnx")):
                data = os.path.join(path, "test_data_set_0")
                files = sorted(os.listdir(data)) if os.path.isdir(data) else []
                cases.append({"name": f"{suite}/{entry}", "model": os.path.join(path, "model.onnx"),
                              "data": {kind: [os.path.join(data, f) for f in files if f.startswith(kind[:-1] + "_")]
                                       for kind in ("inputs", "outputs")}})
    return cases


# ---------------------------------------------------------------------------
# one case, inside a worker


def _read_tensors(paths) -> list:
    import onnx
    from onnx import numpy_helper

    out = []
    for path in sorted(paths, key=lambda p: int(os.path.basename(p).rsplit("_", 1)[1].split(".")[0])):
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        out.append(numpy_helper.to_array(tensor))
    return out


def _graph_inputs(model_path) -> list:
    """(name, has dynamic dims) of the graph inputs that are not initializers."""
    import onnx

    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    out = []
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        dims = inp.type.tensor_type.shape.dim if inp.type.HasField("tensor_type") else []
        dynamic = any(not (d.HasField("dim_value") and d.dim_value > 0) for d in dims)
        out.append((inp.name, dynamic))
    return out


def case_arguments(case: dict) -> tuple:
    """(CLI arguments for shapes and ranges, the test inputs by name or None)."""
    import numpy as np

    if "ranges" in case:  # a zoo block: its own ranges
        return [w for name, low, high in case["ranges"] for w in ("--range", f"{name}={low!r}:{high!r}")], None
    if "light" in case:
        return ["--low", "0", "--high", "1"], None
    names = _graph_inputs(case["model"])
    given = _read_tensors(case["data"].get("inputs", []))
    if not given or any(v.dtype.kind not in "biuf" for v in given):  # strings: numguard says what it thinks
        return ["--low", "0", "--high", "1"], None
    args, inputs = [], {}
    for (name, dynamic), value in zip(names, given):
        inputs[name] = value
        if dynamic and value.ndim:
            args += ["--shape", f"{name}=" + ",".join(str(d) for d in value.shape)]
        v = value.astype(np.float64) if value.size else np.zeros(1)
        args += ["--range", f"{name}={float(v.min())!r}:{float(v.max())!r}"]
    return args, inputs


def run_case(case: dict, pipeline: str, budget: str) -> dict:
    """Run `numguard bisect` on one case in this process; classify the outcome."""
    from tvm_numguard.cli import main

    row = {"case": case["name"], "pipeline": pipeline}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            case = materialize(case, tmp)
            extra, inputs = case_arguments(case)
        except Exception as err:  # the test data itself is unreadable: not the tool's fault
            row.update(outcome="no test data", detail=f"{type(err).__name__}: {err}"[:200])
            return row
        report_path = os.path.join(tmp, "r.json")
        args = ["bisect", case["model"], "--pipeline", pipeline, "--budget", budget, "--json", report_path,
                "--save-inputs", os.path.join(tmp, "w.npz"), "-q", *extra]  # -q: the progress lines are not the error
        out, err = io.StringIO(), io.StringIO()
        code = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(args)
            except SystemExit as exit_:
                code = exit_.code
            except BaseException as exc:  # noqa: BLE001 - a traceback is what we count
                import traceback

                code = "traceback"
                err.write(traceback.format_exc())
                row["exception"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        report = json.load(open(report_path)) if os.path.exists(report_path) else None
        row.update(code=code, seconds=round(time.perf_counter() - started, 2))
        message = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        row.update(_classify(code, message, report))
        if report is not None and report.get("framework"):
            row["framework"] = framework_row(report)
        if pipeline == "default" and row["outcome"] in ("clean", "violation", "benign") and case["data"]:
            row["baseline"] = baseline_error(case, inputs)
    return row


def framework_row(report: dict) -> dict:
    """What the framework said: which, its verdict, the truth, where TVM's import first differs."""
    section = report["framework"]
    origin = section.get("origin") or {}
    worst = max(section.get("outputs") or [{}], key=lambda o: float(o.get("score", 0) or 0))
    return {"name": section["framework"], "verdict": section["verdict"], "reason": section.get("reason"),
            "truth": section.get("truth"), "node": origin.get("node"), "score": worst.get("score"),
            "err_tvm": worst.get("max_err_tvm"), "err_framework": worst.get("max_err_framework"),
            "shapes": [worst.get("shape_tvm"), worst.get("shape_framework")]}


def _classify(code, message, report) -> dict:
    """What the run did. A tool error is a traceback, a crash, an exit code that
    is not 0/1/2/5, a verdict without its report, or an exit 2 whose output is not
    one clear line; an exit 2 with one clear line is a refusal, named by its reason;
    an exit 5 (an operator TVM's frontend has no converter for) is not importable."""
    # the pass that breaks it is named
    if code == 1 and report is not None and report.get("verdict") == "build_failure":
        failure = report["build_failure"]
        return {"outcome": "does not build", "culprit": failure["culprit"], "detail": failure["error"][:240]}
    if code in (0, 1) and report is not None:
        bis = report.get("bisection") or {}
        culprit = (bis.get("culprit") or {}).get("id")
        return {"outcome": report["verdict"], "score": report["search"]["best_score"], "culprit": culprit,
                "outputs_constant": report["search"].get("outputs_constant"),
                "real": (report.get("oracle") or {}).get("real_violation")}
    if code == 1 and message and message[0].startswith("numguard: IMPORT: "):  # a valid model TVM cannot import
        return {"outcome": "import failure", "detail": message[0][len("numguard: IMPORT: "):][:240]}
    if code == 5 and len(message) == 1 and message[0].startswith("numguard: TVM cannot import the model: "):
        return {"outcome": "not importable",
                "detail": message[0][len("numguard: TVM cannot import the model: "):][:240]}
    if code == 2 and len(message) == 1 and message[0].startswith("numguard: error: "):
        text = message[0][len("numguard: error: "):]
        return {"outcome": _refusal(text), "detail": text[:240]}
    return {"outcome": "tool error", "detail": f"exit {code!r}: {' | '.join(message)[-300:]}"}


REFUSALS = (("not supported", "not importable"), ("cannot import", "not importable"), ("malformed", "not importable"),
            ("not a readable ONNX", "not importable"), ("unsupported element type", "not importable"),
            ("NaN/Inf on every", "reference not finite"), ("does not build", "does not build"),
            ("reference build", "does not build"))


def _refusal(text: str) -> str:
    return next((outcome for fragment, outcome in REFUSALS if fragment in text), "refused")


def baseline_error(case: dict, inputs) -> dict:
    """The reference build on the test inputs against the expected outputs."""
    import numpy as np

    from tvm_numguard.ir.model import load_model
    from tvm_numguard.ir.pipeline import CompileConfig
    from tvm_numguard.base.compare import compare_outputs
    from tvm_numguard.base.tolerance import Tolerance
    from tvm_numguard.build.session import RunContext
    from tvm_numguard.build.session import BuildSession

    expected = _read_tensors(case["data"]["outputs"])
    shapes = {n: list(v.shape) for n, v in (inputs or {}).items() if v.ndim}
    model = load_model(case["model"], shapes)
    if inputs is None:  # light models: any input (the outputs do not depend on it)
        inputs = {s.name: np.full(s.shape, 0.5, s.dtype) for s in model.inputs}
    inputs = {s.name: s.coerce(inputs[s.name]) for s in model.inputs}
    session = BuildSession(model, CompileConfig(), context=RunContext().in_process())
    session.prepare(record=False)
    got = session.runs.reference_outputs(inputs)
    if len(got) != len(expected):
        return {"ok": False, "detail": f"{len(got)} outputs, {len(expected)} expected"}
    comparison = compare_outputs(expected, got, Tolerance(*BASELINE_TOL))
    worst = max(comparison.outputs, key=lambda m: m.score)
    return {"ok": not comparison.violated, "max_abs": worst.max_abs, "max_rel": worst.max_rel,
            "finding": worst.finding}


def _worker(tasks_path: str, out_path: str, start: int, budget: str) -> None:
    tasks = json.load(open(tasks_path))
    with open(out_path, "a") as out:
        for index in range(start, len(tasks)):
            case, pipeline = tasks[index]
            out.write(json.dumps({"start": index}) + "\n")
            out.flush()
            row = run_case(case, pipeline, budget)
            out.write(json.dumps({"index": index, **row}, default=str) + "\n")
            out.flush()


# ---------------------------------------------------------------------------
# the driver


def run_shard(tasks: list, workdir: str, budget: str, timeout: float) -> list:
    """Run ``tasks`` in a worker process, restarting it after a crash or a timeout."""
    tasks_path, out_path = os.path.join(workdir, "tasks.json"), os.path.join(workdir, "out.jsonl")
    json.dump(tasks, open(tasks_path, "w"))
    rows, start = {}, 0
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    while start < len(tasks):
        proc = subprocess.Popen([sys.executable, __file__, "--worker", tasks_path, out_path, str(start), budget],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=workdir)
        last_seen, last_count = time.time(), 0
        while proc.poll() is None:
            time.sleep(1.0)
            count = sum(1 for _ in open(out_path)) if os.path.exists(out_path) else 0
            if count != last_count:
                last_seen, last_count = time.time(), count
            elif time.time() - last_seen > timeout:
                proc.kill()
        stderr = proc.stderr.read() if proc.stderr else ""
        lines = [json.loads(ln) for ln in open(out_path)] if os.path.exists(out_path) else []
        for line in lines:
            if "outcome" in line:
                rows[line["index"]] = line
        started = [ln["start"] for ln in lines if "start" in ln]
        if started and started[-1] not in rows:  # the worker died (or hung) inside this task
            index = started[-1]
            case, pipeline = tasks[index]
            why = "timeout" if proc.returncode == -9 else f"worker died, rc {proc.returncode}"
            rows[index] = {"index": index, "case": case["name"], "pipeline": pipeline, "outcome": "tool error",
                           "detail": f"{why}: {(stderr.strip().splitlines() or [''])[-1][:160]}"}
            with open(out_path, "a") as f:
                f.write(json.dumps(rows[index]) + "\n")
        start = max(rows) + 1 if rows else len(tasks)
    return [rows[i] for i in sorted(rows)]


def sweep(cases: list, pipelines, jobs: int, budget: str, timeout: float = 600.0) -> list:
    tasks = [(case, pipeline) for pipeline in pipelines for case in cases]
    shards = [tasks[k::jobs] for k in range(jobs)]
    results: list = [None] * jobs
    with tempfile.TemporaryDirectory() as tmp:
        def run(k):
            folder = os.path.join(tmp, f"shard{k}")
            os.makedirs(folder)
            results[k] = run_shard(shards[k], folder, budget, timeout)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return [row for shard in results for row in shard]


def print_tables(rows: list, pipelines) -> None:
    for pipeline in pipelines:
        mine = [r for r in rows if r["pipeline"] == pipeline]
        counts = Counter(r["outcome"] for r in mine)
        imported = sum(counts[k] for k in ("clean", "violation", "benign", "reference not finite", "does not build"))
        print(f"\n== pipeline {pipeline}: {len(mine)} cases")
        print(f"  imported {imported} | not importable {counts['not importable']} | clean {counts['clean']} | "
              f"violation {counts['violation']} | benign {counts['benign']} | reference not finite "
              f"{counts['reference not finite']} | does not build {counts['does not build']} | other refusal "
              f"{counts['refused']} | tool error {counts['tool error']}")
        constant = [r["case"] for r in mine if r.get("outputs_constant")]
        if constant:
            print(f"  outputs independent of the inputs ({len(constant)}): {', '.join(constant)}")
        for r in mine:
            if r["outcome"] == "violation":
                score = r.get("score")
                score = f"{score:.3g}" if isinstance(score, (int, float)) else score  # "inf" stays a word
                print(f"  violation  {r['case']}: culprit {r.get('culprit')}, score {score}, "
                      f"real per float64 oracle: {r.get('real')}")
        for kind in ("not importable", "import failure", "reference not finite", "does not build", "refused",
                     "tool error", "no test data"):
            for r in mine:
                if r["outcome"] == kind:
                    print(f"  {kind:<14} {r['case']}: {r.get('detail', '')}")
        baseline = [r for r in mine if "baseline" in r]
        if baseline:
            bad = [r for r in baseline if not r["baseline"].get("ok")]
            print(f"  baseline (reference vs the expected outputs, rtol {BASELINE_TOL[0]:g} atol {BASELINE_TOL[1]:g}): "
                  f"{len(baseline) - len(bad)}/{len(baseline)} within")
            for r in bad:
                b = r["baseline"]
                print(f"  baseline error {r['case']}: max abs {b.get('max_abs')}, max rel {b.get('max_rel')} "
                      f"{b.get('finding') or b.get('detail') or ''}")


def print_framework_table(rows: list) -> None:
    """imported / framework ran / agree / import differs (truth backs the framework) / framework at fault."""
    imported = [r for r in rows if "framework" in r]
    ran = [r for r in imported if r["framework"]["verdict"] != "unanswered"]
    counts = Counter(r["framework"]["verdict"] for r in ran)
    refused = Counter(r["outcome"] for r in rows if "framework" not in r)
    print(f"\n== the import question: {len(rows)} models")
    other = sum(refused.values()) - refused['not importable'] - refused['does not build'] - refused['tool error']
    print(f"  imported and judged {len(imported)} | framework ran {len(ran)} | agree {counts['agrees']} | "
          f"import differs {counts['import']} | differs, not TVM's fault {counts['benign']} | "
          f"not importable {refused['not importable']} | does not build {refused['does not build']} | "
          f"other refusal {other}"
          f" | tool error {refused['tool error'] + sum(r['outcome'] == 'tool error' for r in imported)}")
    for r in imported:
        f = r["framework"]
        if f["verdict"] == "unanswered":
            print(f"  framework did not run  {r['case']}: {(f.get('reason') or '')[:160]}")
    for r in ran:
        f = r["framework"]
        if f["verdict"] in ("import", "benign"):
            side = "TVM at fault" if f["verdict"] == "import" else "not TVM's fault"
            shapes = f["shapes"] if f["shapes"][0] != f["shapes"][1] else None
            print(f"  {f['verdict']:<9} {r['case']}: {side} (truth: {f.get('truth')}; score {f.get('score')}, "
                  f"error against the truth TVM {f.get('err_tvm')}, framework {f.get('err_framework')}"
                  + (f", shapes {shapes}" if shapes else "") + f"); first at {f.get('node')}")
    for r in rows:
        if r["outcome"] in ("tool error", "not importable", "import failure", "does not build", "refused",
                            "no test data"):
            print(f"  {r['outcome']:<14} {r['case']}: {r.get('detail', '')[:200]}")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", default=";".join(PIPELINES), help="';'-separated pipelines")
    parser.add_argument("--match", help="only the cases whose name contains this (e.g. light/)")
    parser.add_argument("--sample", type=int, help="a seeded sample of this many cases")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one case may run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", default="20")
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--tables", nargs="+", metavar="ROWS.json",
                        help="print the tables of saved rows (merged; a later file's row of a case replaces "
                             "an earlier)")
    parser.add_argument("--framework", action="store_true",
                        help="the import question: node tests, light models with random weights, the zoo")
    args = parser.parse_args()
    if args.tables:
        # a later file's row of the same case and pipeline replaces an earlier one (a rerun)
        merged = {(row["case"], row["pipeline"]): row for path in args.tables for row in json.load(open(path))}
        rows = list(merged.values())
        if args.framework:
            print_framework_table(rows)
        else:
            print_tables(rows, list(dict.fromkeys(r["pipeline"] for r in rows)))
        return 1 if any(r["outcome"] == "tool error" for r in rows) else 0
    if args.framework:
        args.pipelines = "default"
    cases = [c for c in (framework_cases() if args.framework else onnx_cases())
             if not args.match or args.match in c["name"]]
    if args.sample:
        import random

        cases = sorted(random.Random(args.seed).sample(cases, args.sample), key=lambda c: c["name"])
    pipelines = args.pipelines.split(";")
    started = time.perf_counter()
    rows = sweep(cases, pipelines, args.jobs, args.budget, args.timeout)
    if args.json_path:  # first: the rows are what an hour of sweeping bought
        json.dump(rows, open(args.json_path, "w"), indent=1, default=str)
    print(f"{len(cases)} cases x {len(pipelines)} pipelines in {time.perf_counter() - started:.0f} s "
          f"({args.jobs} workers, budget {args.budget})")
    if args.framework:
        print_framework_table(rows)
    else:
        print_tables(rows, pipelines)
    return 1 if any(r["outcome"] == "tool error" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
