"""Limits that keep the package readable: modules under 700 lines (a module is one idea, however long:
never split by size), functions under 60, signatures of at most 8 parameters (``self``/``cls`` not counted),
and a report's document read (``report.data[...]``) only inside ``report/``,
where documents are written: every other layer decides on typed objects."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_PARAMETERS = 700, 60, 8


def sources(root: pathlib.Path = ROOT / "tvm_numguard"):
    return sorted(root.rglob("*.py"))


def parameter_count(node) -> int:
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args]
    count = len(names) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (1 if names and names[0] in ("self", "cls") else 0)


def oversize(path: pathlib.Path) -> list:
    """What in ``path`` breaks a limit, one line each."""
    text = path.read_text()
    found = []
    if len(text.splitlines()) > MAX_MODULE_LINES:
        found.append(f"{path}: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.lineno} {node.name}: {length} lines")
            if parameter_count(node) > MAX_PARAMETERS:
                found.append(f"{path}:{node.lineno} {node.name}: {parameter_count(node)} parameters")
    return found


def document_reads(path: pathlib.Path) -> list:
    return [f"{path}:{k}" for k, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"\breport\.data\[", line)]


def test_no_module_function_or_signature_is_oversize():
    assert [line for path in sources() for line in oversize(path)] == []


def test_report_documents_are_read_only_inside_report():
    outside = [p for p in sources() if "report" not in p.relative_to(ROOT / "tvm_numguard").parts[:1]]
    assert [line for path in outside for line in document_reads(path)] == []


def test_the_limits_catch_what_they_name(tmp_path):
    body = "\n".join(f"    x{k} = {k}" for k in range(MAX_FUNCTION_LINES))
    (tmp_path / "big.py").write_text(f"def long():\n{body}\n\n\ndef wide(self, a, b, c, d, e, f, g, h, i):\n"
                                     "    return report.data['verdict']\n")
    found = oversize(tmp_path / "big.py")
    assert any("long: 61 lines" in line for line in found)
    assert any("wide: 9 parameters" in line for line in found)
    assert document_reads(tmp_path / "big.py") == [f"{tmp_path / 'big.py'}:65"]


def test_gitignore_leaves_every_package_file_to_git():
    """``.gitignore`` matches the repository's own build output only: a pattern
    such as ``build/`` also matched ``tvm_numguard/build/``, and a new module
    there was silently left out of a commit."""
    import subprocess

    probes = [str(p.relative_to(ROOT)) for p in sources()] + ["tvm_numguard/build/a_new_module.py"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *probes], cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == []
