"""The catalog of required passes (tvm_numguard/ir/instrument/catalog.py) is true.

(a) every pass in REQUIRED_PASSES is needed: skipping all its occurrences
    fails the build or the run (``default`` Relax pipeline; ``zero`` is slow);
(b) no other top-level pass is: skipping any optional event alone still builds
    and runs with finite outputs of the same shapes;
(c) the reference build (every optional event skipped) builds and runs.

Skipping a pass can crash TVM outright (skipping ``tirx.LowerTVMBuiltin``
segfaults the run of a model with a large intermediate buffer), so every build
runs in a worker process (this file run as a script); a worker that dies is
reported as ``crash`` for the skip set it was on and restarted after it.
Builds are never memoized: each skip set is a fresh compilation. The first test
of this file starts, in parallel (one worker per CPU), the workers that every
selected test of the file needs; the tests then read their results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import pytest  # noqa: E402

from tvm_numguard.ir.instrument import REQUIRED_PASSES  # noqa: E402

# The model on which a required pass shows that it is required, where the small
# CNN does not show it (on the CNN, skipping these alone builds and runs).
EVIDENCE = {
    # symbolic shapes are lowered by it; the CNN's shapes are all static
    "VMShapeLower": "symbolic",
    # without Filter#1 host code is rebuilt as a "device" module, which fails on symbolic shapes
    "tirx.Filter": "symbolic",
    # without it a ~4 MB intermediate buffer is a stack alloca: the run segfaults
    "tirx.LowerTVMBuiltin": "bigconv",
    # without them a bfloat16 input reaches LLVM codegen as a bfloat16 buffer (segfault),
    # or bfloat16 arithmetic is left to codegen (the build fails)
    "tirx.BF16StorageLegalize": "bf16",
    "tirx.BF16ComputeLegalize": "bf16",
    # cumsum and topk have no legalization: only these passes make kernels of them
    "DispatchSortScan": "sortscan",
    # multinomial sampling likewise
    "DispatchSampling": "sampling",
}

FAILED = ("build_fail", "run_fail", "shape", "nonfinite", "crash")


# ---------------------------------------------------------------------------
# models (built inside the worker)


def _onnx_model(tmpdir: str, name: str, nodes, inputs, outputs, weights):
    import onnx
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        nodes, name, inputs, outputs, initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(tmpdir, f"{name}.onnx")
    onnx.save(model, path)
    return path


def _load(key: str, tmpdir: str):
    """(module, input names, inputs) of test model ``key``."""
    import numpy as np
    from onnx import TensorProto, helper

    from tvm_numguard.ir.model import load_model
    from tvm_numguard.testing import light_model_path, tiny_cnn_onnx

    rng = np.random.default_rng(0)
    if key == "symbolic":
        # x: (N, 8) with N symbolic; load_model wants static shapes, so import directly
        import onnx
        from tvm.relax.frontend.onnx import from_onnx

        nodes = [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Relu", ["m"], ["r"]),
            helper.make_node("Softmax", ["r"], ["y"], axis=-1),
        ]
        path = _onnx_model(
            tmpdir,
            "symbolic",
            nodes,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
            {"w": rng.normal(0.0, 0.5, (8, 4)).astype(np.float32)},
        )
        mod = from_onnx(onnx.load(path), keep_params_in_input=False)
        return mod, ["x"], {"x": rng.uniform(0.0, 1.0, (3, 8)).astype(np.float32)}
    if key == "bf16":
        # a bfloat16 input, computed on in bfloat16 and in float32
        import ml_dtypes
        from tvm.script import ir as I
        from tvm.script import relax as R

        @I.ir_module
        class BF16:
            @R.function
            def main(x: R.Tensor((4, 8), "bfloat16")):
                with R.dataflow():
                    h = R.multiply(R.add(x, x), x)
                    y = R.add(R.astype(h, "float32"), R.astype(x, "float32"))
                    R.output(y)
                return y

        return BF16, ["x"], {"x": rng.uniform(0.0, 1.0, (4, 8)).astype(ml_dtypes.bfloat16)}
    if key == "sampling":
        from tvm.script import ir as I
        from tvm.script import relax as R

        @I.ir_module
        class Sampling:
            @R.function
            def main(p: R.Tensor((2, 4), "float32"), u: R.Tensor((2, 1), "float32"), i: R.Tensor((2, 1), "int64")):
                with R.dataflow():
                    y = R.multinomial_from_uniform(p, u, i, dtype="int64")
                    R.output(y)
                return y

        return Sampling, ["p", "u", "i"], {"p": np.full((2, 4), 0.25, np.float32),
                                           "u": rng.uniform(0.0, 1.0, (2, 1)).astype(np.float32),
                                           "i": np.array([[0], [1]], np.int64)}
    if key == "sortscan":
        nodes = [helper.make_node("CumSum", ["x", "axis"], ["c"]),
                 helper.make_node("TopK", ["c", "k"], ["y", "i"], axis=1)]
        path = _onnx_model(tmpdir, "sortscan", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                           {"axis": np.array(1, np.int64), "k": np.array([3], np.int64)})
    elif key == "cnn":
        path = tiny_cnn_onnx(os.path.join(tmpdir, "cnn.onnx"), seed=0)
    elif key == "squeezenet":
        path = light_model_path("squeezenet")  # ConstantOfShape weights: enough for build checks
    elif key == "bigconv":
        # one kernel whose padded input (16 x 258 x 258 float32, 4.3 MB) is an intermediate buffer
        nodes = [
            helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ]
        path = _onnx_model(
            tmpdir,
            "bigconv",
            nodes,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 256, 256])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 256, 256])],
            {"w": rng.normal(0.0, 0.1, (16, 16, 3, 3)).astype(np.float32)},
        )
    else:
        raise ValueError(key)
    model = load_model(path)
    inputs = {s.name: rng.uniform(0.0, 1.0, s.shape).astype(s.dtype) for s in model.inputs}
    return model.mod, model.input_names(), inputs


# ---------------------------------------------------------------------------
# worker: python tests/test_catalog.py SPEC.json OUT.jsonl START


def _expand(jobs: Sequence[list], events) -> List[Tuple[str, str, List[str]]]:
    """(kind, label, skip ids) for each job, given the baseline build's events.

    Jobs: ["name", N] skips every top-level occurrence of pass N; ["ids", [...]]
    skips those ids; ["each_optional"] is one job per optional event;
    ["reference"] skips every optional event at once. Ids are stable, so a
    restarted worker expands the same list.
    """
    from tvm_numguard.build.compile import optional_events

    top = [e for e in events if e.ran and not e.wrapper and "/" not in e.id]
    out: List[Tuple[str, str, List[str]]] = []
    for job in jobs:
        kind = job[0]
        if kind == "name":
            out.append((kind, job[1], [e.id for e in top if e.name == job[1]]))
        elif kind == "ids":
            out.append((kind, ",".join(job[1]), list(job[1])))
        elif kind == "each_optional":
            out.extend((kind, e.id, [e.id]) for e in optional_events(events))
        elif kind == "reference":
            out.append((kind, "reference", [e.id for e in optional_events(events)]))
        else:
            raise ValueError(job)
    return out


def _worker(spec_path: str, out_path: str, start: int) -> None:
    import faulthandler

    import numpy as np

    from tvm_numguard.ir.pipeline import CompileConfig
    from tvm_numguard.build.compile import BuildRequest, compile_model, run_build

    faulthandler.enable()
    with open(spec_path) as f:
        spec = json.load(f)
    shard, shards = spec["shard"]
    mod, names, inputs = _load(spec["model"], spec["dir"])
    config = CompileConfig(pipeline=spec["pipeline"])
    base = compile_model(mod, config)
    with open(out_path, "a") as out:

        def emit(row):
            out.write(json.dumps(row) + "\n")
            out.flush()

        if not base.ok:
            emit({"fatal": f"baseline build failed: {base.error}"})
            return
        reference = run_build(base, names, inputs)
        jobs = _expand(spec["jobs"], base.events)
        for index in range(start, len(jobs)):
            if index % shards != shard:
                continue
            kind, label, skip = jobs[index]
            emit({"start": index, "kind": kind, "label": label, "skip": skip})
            row = {"index": index, "kind": kind, "label": label, "skip": skip}
            if not skip:
                row["status"] = "absent"
                emit(row)
                continue
            build = compile_model(mod, config, BuildRequest(skip=frozenset(skip)))
            if not build.ok:
                row.update(status="build_fail", error=build.error)
                emit(row)
                continue
            try:
                outputs = run_build(build, names, inputs)
            except Exception as err:  # noqa: BLE001 - any error means "does not run"
                lines = [ln for ln in str(err).splitlines() if ln.strip()]
                row.update(status="run_fail", error=(lines[-1] if lines else type(err).__name__)[:300])
                emit(row)
                continue
            if [o.shape for o in outputs] != [r.shape for r in reference]:
                row["status"] = "shape"
            elif not all(np.isfinite(o).all() for o in outputs):
                row["status"] = "nonfinite"
            else:
                row["status"] = "ok"
                row["max_abs_diff"] = max(
                    float(np.max(np.abs(o.astype(np.float64) - r.astype(np.float64)))) if o.size else 0.0
                    for o, r in zip(outputs, reference)
                )
            emit(row)
        emit({"done": True})


def _no_core_dumps():
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _fatal_line(stderr: str) -> str:
    """The interesting line of a dead worker's stderr (faulthandler writes a traceback)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith("Fatal Python error")]
    return (fatal[0] if fatal else (lines[-1] if lines else ""))[:300]


def _run_jobs(model: str, pipeline: str, jobs: Sequence[list], workdir: str, shard=(0, 1)) -> Dict[str, dict]:
    """Run ``jobs`` (their ``shard``) on ``model`` in worker processes; results by label."""
    os.makedirs(workdir, exist_ok=True)
    spec_path = os.path.join(workdir, "spec.json")
    out_path = os.path.join(workdir, "out.jsonl")
    with open(spec_path, "w") as f:
        json.dump({"model": model, "pipeline": pipeline, "jobs": list(jobs), "dir": workdir, "shard": list(shard)}, f)
    if os.path.exists(out_path):
        os.remove(out_path)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    results: Dict[str, dict] = {}
    start = 0
    for _attempt in range(200):
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), spec_path, out_path, str(start)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            preexec_fn=_no_core_dumps,
        )
        rows = [json.loads(line) for line in open(out_path)] if os.path.exists(out_path) else []
        for row in rows:
            if "fatal" in row:
                raise AssertionError(f"{model}/{pipeline}: {row['fatal']}")
            if "status" in row:
                results[row["label"]] = row
        if any(row.get("done") for row in rows):
            return results
        started = [row for row in rows if "start" in row]
        if not started or started[-1]["label"] in results:
            tail = (proc.stderr or proc.stdout)[-2000:]
            raise AssertionError(f"{model}/{pipeline}: worker died outside a job (rc {proc.returncode}):\n{tail}")
        last = started[-1]
        results[last["label"]] = {
            "index": last["start"],
            "kind": last["kind"],
            "label": last["label"],
            "skip": last["skip"],
            "status": "crash",
            "error": f"worker died, rc {proc.returncode}: {_fatal_line(proc.stderr or '')}",
        }
        with open(out_path, "a") as f:
            f.write(json.dumps(results[last["label"]]) + "\n")
        start = last["start"] + 1
    raise AssertionError(f"{model}/{pipeline}: too many worker crashes")


# ---------------------------------------------------------------------------
# what each test needs, and running it all at once

# relative cost of one build + run, to start the longest workers first
_COST = {"cnn": 1.0, "symbolic": 0.7, "bigconv": 3.0, "squeezenet": 6.0, "bf16": 0.3, "sortscan": 0.3,
         "sampling": 0.3}


def _needs(test: str, params: dict) -> List[Tuple[str, str, list]]:
    """(model, pipeline, job) triples whose results test ``test`` reads."""
    if test == "test_skipping_a_required_pass_fails":
        name = params["name"]
        return [(EVIDENCE.get(name, "cnn"), params["pipeline"], ["name", name])]
    if test == "test_legalize_ops_is_required_by_name_not_by_occurrence":
        jobs = (["name", "LegalizeOps"], ["ids", ["LegalizeOps#0"]], ["ids", ["LegalizeOps#1"]])
        return [("cnn", "zero", job) for job in jobs]
    if test == "test_each_optional_event_can_be_skipped_alone":
        return [(params["model"], params["pipeline"], ["each_optional"])]
    if test == "test_reference_build_builds_and_runs":
        return [(params["model"], params["pipeline"], ["reference"])]
    return []


def _run_all(needs: Sequence[Tuple[str, str, list]], tmp_path_factory) -> Dict[Tuple[str, str], Dict[str, dict]]:
    """Run every needed job, one worker per (model, pipeline, shard), in parallel."""
    groups: Dict[Tuple[str, str], list] = {}
    for model, pipeline, job in needs:
        jobs = groups.setdefault((model, pipeline), [])
        if job not in jobs:
            jobs.append(job)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    tasks = []
    for (model, pipeline), jobs in groups.items():
        size = sum(60 if job == ["each_optional"] else 1 for job in jobs)
        shards = max(1, min(cpus, size // 20))
        for k in range(shards):
            tasks.append((size / shards * _COST.get(model, 1.0), model, pipeline, jobs, (k, shards)))
    tasks.sort(key=lambda t: -t[0])

    def run(task):
        _, model, pipeline, jobs, shard = task
        workdir = str(tmp_path_factory.mktemp(f"catalog_{model}_{pipeline}_{shard[0]}"))
        return (model, pipeline), _run_jobs(model, pipeline, jobs, workdir, shard)

    results: Dict[Tuple[str, str], Dict[str, dict]] = {}
    with ThreadPoolExecutor(max_workers=max(1, cpus)) as pool:
        for key, rows in pool.map(run, tasks):
            results.setdefault(key, {}).update(rows)
    return results


@pytest.fixture(scope="session")
def catalog_results(request, tmp_path_factory):
    """Results of every job the selected tests of this file need, by (model, pipeline).

    Under pytest-xdist every worker collects the same tests, so the first worker
    to need the results builds them (with every core: ``_run_all``) and the
    others read its file (pytest-xdist's recipe for a session fixture made once)."""
    needs = []
    for item in request.session.items:
        if getattr(item, "module", None) is sys.modules[__name__]:
            params = item.callspec.params if hasattr(item, "callspec") else {}
            needs += _needs(item.originalname, params)
    if not hasattr(request.config, "workerinput"):  # no pytest-xdist workers
        return _run_all(needs, tmp_path_factory)
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / "catalog_results.json"
    with FileLock(str(shared) + ".lock"):
        if not shared.is_file():
            results = _run_all(needs, tmp_path_factory)
            shared.write_text(json.dumps([[list(key), rows] for key, rows in results.items()]))
        return {tuple(key): rows for key, rows in json.loads(shared.read_text())}


def _describe(row: dict) -> str:
    return f"{row['label']}: {row['status']} {row.get('error', '')}".strip()


def _slow(*values):
    return pytest.param(*values, marks=pytest.mark.slow)


# ---------------------------------------------------------------------------
# (a) every listed pass is required


# the proofs build the model once per listed pass (and once per optional event below): the slow
# tier's; the fast tier keeps LegalizeOps' proof, the reference builds below and close_skip_set (test_events)
@pytest.mark.slow
@pytest.mark.parametrize("pipeline", ["default", "zero"])
@pytest.mark.parametrize("name", sorted(REQUIRED_PASSES | set(EVIDENCE)))
def test_skipping_a_required_pass_fails(catalog_results, name, pipeline):
    """Every listed pass, and every pass EVIDENCE names (they may not leave the catalog:
    the reference build skips FuseOps, which hides the LowerTVMBuiltin crash)."""
    model = EVIDENCE.get(name, "cnn")
    row = catalog_results[(model, pipeline)][name]
    assert row["status"] != "absent", (
        f"{name} never runs in the {pipeline} pipeline on model '{model}': "
        "remove it from REQUIRED_PASSES or name a model that shows it is required in EVIDENCE"
    )
    assert row["status"] in FAILED, (
        f"skipping every occurrence of {name} ({', '.join(row['skip'])}) still builds and runs "
        f"on '{model}' with the {pipeline} pipeline: it is not required"
    )
    assert name in REQUIRED_PASSES, f"skipping {name} breaks '{model}' ({_describe(row)}): keep it in REQUIRED_PASSES"


@pytest.mark.slow  # a catalog proof (three builds in fresh processes); is_required's rule stays in the fast tier
def test_legalize_ops_is_required_by_name_not_by_occurrence(catalog_results):
    """In ``zero`` either LegalizeOps alone is enough; only skipping both fails."""
    results = catalog_results[("cnn", "zero")]
    assert results["LegalizeOps"]["skip"] == ["LegalizeOps#0", "LegalizeOps#1"]
    assert results["LegalizeOps"]["status"] in FAILED, _describe(results["LegalizeOps"])
    assert results["LegalizeOps#0"]["status"] == "ok", _describe(results["LegalizeOps#0"])
    assert results["LegalizeOps#1"]["status"] == "ok", _describe(results["LegalizeOps#1"])


# ---------------------------------------------------------------------------
# (b) every other top-level pass is optional


@pytest.mark.parametrize(
    "model, pipeline",
    [
        _slow("cnn", "default"),
        _slow("cnn", "zero"),
        _slow("symbolic", "default"),
        _slow("squeezenet", "default"),
    ],
)
def test_each_optional_event_can_be_skipped_alone(catalog_results, model, pipeline):
    results = catalog_results[(model, pipeline)]
    rows = [row for row in results.values() if row["kind"] == "each_optional"]
    assert len(rows) > 30, f"too few optional events on {model}: {sorted(results)}"
    bad = [_describe(row) for row in sorted(rows, key=lambda r: r["index"]) if row["status"] != "ok"]
    assert not bad, (
        f"skipping these optional events alone breaks {model} ({pipeline}); "
        "add their passes to REQUIRED_PASSES:\n  " + "\n  ".join(bad)
    )


# ---------------------------------------------------------------------------
# (c) the reference build works


@pytest.mark.parametrize(
    "model, pipeline",
    [  # catalog proofs, each in fresh processes: every end-to-end test of the fast tier builds a reference too
        _slow("cnn", "default"),
        _slow("cnn", "zero"),
        _slow("squeezenet", "default"),
        _slow("squeezenet", "zero"),
        _slow("symbolic", "default"),
        _slow("symbolic", "zero"),
        _slow("bigconv", "default"),
        _slow("bigconv", "zero"),
        _slow("bf16", "default"),
    ],
)
def test_reference_build_builds_and_runs(catalog_results, model, pipeline):
    """On the evidence models too: a required pass dropped from the catalog fails here."""
    row = catalog_results[(model, pipeline)]["reference"]
    assert len(row["skip"]) > 30, row["skip"]
    assert not any(n.split("#")[0] in REQUIRED_PASSES for n in row["skip"])
    assert row["status"] == "ok", _describe(row)


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2], int(sys.argv[3]))
