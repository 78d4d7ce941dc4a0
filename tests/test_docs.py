"""The docs stand on their own and the report field reference is complete."""

import json
import os
import re
import warnings

import pytest
import tvm

import tvm_numguard as ng
from tvm_numguard.report import load_schema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
KEYED = ("configuration.ranges", "witness.inputs", "trace.matching.by_rule")  # maps keyed by name


def documented() -> set:
    text = open(os.path.join(ROOT, "docs", "report-fields.md")).read()
    return {path for line in text.splitlines() if line.startswith("- `")
            for path in re.findall(r"`([a-z0-9_*\[\].-]+)`", line.split(":", 1)[0])}


def schema_paths(node, path, defs, out) -> set:
    if isinstance(node, dict):
        if "$ref" in node:
            return schema_paths(defs[node["$ref"].split("/")[-1]], path, defs, out)
        for key in ("oneOf", "anyOf", "allOf"):
            for sub in node.get(key, []):
                schema_paths(sub, path, defs, out)
        names = dict(node.get("properties", {}))
        names.update({name: {} for name in node.get("required", []) if name not in names})
        for name, sub in names.items():
            out.add(f"{path}.{name}" if path else name)
            schema_paths(sub, f"{path}.{name}" if path else name, defs, out)
        if "items" in node:
            schema_paths(node["items"], path + "[]", defs, out)
        if isinstance(node.get("additionalProperties"), dict):
            schema_paths(node["additionalProperties"], path + ".*", defs, out)
    return out


def document_paths(node, path, out) -> set:
    if isinstance(node, dict):
        for key, value in node.items():
            sub = f"{path}.{'*' if path in KEYED else key}" if path else key
            out.add(sub)
            document_paths(value, sub, out)
    elif isinstance(node, list):
        for value in node:
            document_paths(value, path + "[]", out)
    return out


def test_every_schema_field_is_documented():
    schema = load_schema()
    missing = schema_paths(schema, "", schema.get("$defs", {}), set()) - documented()
    assert not missing, sorted(missing)
@pytest.mark.slow  # end to end; the fast tier keeps unit tests of the same logic
def test_every_field_of_real_reports_is_documented():
    config = ng.CompileConfig(pipeline="ToMixedPrecision,default")
    options = ng.Options(low=0.0, high=1.0, budget="12")
    reports = [ng.bisect(DEMO, config, options), ng.trace(DEMO, config, options),
               ng.search(DEMO, config, options.replace(search="random,evolve"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ng.guard(0.0, 1.0, budget="12", time_limit=None) as g:
            tvm.compile(tvm.relax.transform.ToMixedPrecision()(ng.load_model(DEMO).mod), "llvm")
    reports.append(g.report[0])
    seen = set()
    for report in reports:
        document_paths(json.loads(json.dumps(report.to_json())), "", seen)
    missing = seen - documented()
    assert not missing, sorted(missing)


def test_docs_and_readme_point_nowhere_outside_the_repository():
    for name in ["README.md"] + [os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))]:
        text = open(os.path.join(ROOT, name)).read()
        assert "../shared" not in text and "DESIGN.md" not in text, name
        for link in re.findall(r"\]\(([^)#]+)", text):
            if not link.startswith("http"):
                assert os.path.exists(os.path.join(ROOT, os.path.dirname(name), link)), (name, link)


@pytest.mark.pool  # the demo as a user runs it: with numguard's default workers
def test_the_demo_page_numbers_are_what_the_demo_prints():
    """examples/mlp/README.md quotes a run of its command; a change that moves
    the numbers must move the page too (issue 25: they were stale)."""
    page = open(os.path.join(ROOT, "examples", "mlp", "README.md")).read()
    report = ng.bisect(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"), ng.Options(low=0.0, high=1.0))
    data = report.data
    (metrics,) = data["metrics"]
    assert report.culprit == "ToMixedPrecision#0" and report.exit_code == 1
    assert f"{data['bisection']['builds']} builds over {data['bisection']['optional_events']} optional" in page
    assert f"up to\n{metrics['max_abs']:.3g} (max abs)" in page or f"up to {metrics['max_abs']:.3g} (max abs)" in page
    assert f"{metrics['score']:.2g} times the tolerance" in page
    assert f"within {data['oracle']['outputs'][0]['max_err_ref']:.3g} of the truth" in page


# file names that are no file of the project: a placeholder, and a file `numguard reduce` writes
NOT_PROJECT_FILES = {"file.py", "test_repro.py"}


def test_every_python_file_the_architecture_and_the_sources_name_exists():
    """After the package was reorganised into areas, docstrings and the
    architecture page named modules that no longer exist (graph.py, localize.py, api.py)."""
    names = {name for _, _, files in os.walk(ROOT) for name in files if name.endswith(".py")}
    texts = {os.path.join("docs", "architecture.md"): open(os.path.join(ROOT, "docs", "architecture.md")).read()}
    for folder, _, files in os.walk(os.path.join(ROOT, "tvm_numguard")):
        for name in files:
            if name.endswith(".py"):
                texts[os.path.relpath(os.path.join(folder, name), ROOT)] = open(os.path.join(folder, name)).read()
    missing = sorted((where, name) for where, text in texts.items()
                     for name in set(re.findall(r"(?<![\w/.])(\w+\.py)\b", text))
                     if name not in names and name not in NOT_PROJECT_FILES)
    assert not missing, missing


def test_the_trace_page_quotes_what_the_trace_prints():
    """examples/trace/README.md quotes the lines trace adds to the summary; they
    were stale (score 86.6 and an origin line without the model's node)."""
    page = open(os.path.join(ROOT, "examples", "trace", "README.md")).read()
    report = ng.trace(DEMO, ng.CompileConfig(pipeline="ToMixedPrecision,default"), ng.Options(low=0.0, high=1.0))
    from tvm_numguard.report.text import trace_lines

    quoted = [line for line in trace_lines(report.finding.trace.to_json()).splitlines()
              if line.startswith(("  passes ", "  origin ", "  spread "))]
    assert len(quoted) == 3 and all(line in page for line in quoted), quoted
