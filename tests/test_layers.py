"""The layer order of docs/architecture.md, enforced over every import in the
package (those inside functions too): a module imports only from its own
package or from a layer below its own, and no modules import each other in a
circle."""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def declared_layers(text: str) -> list:
    """The ``layers`` block of docs/architecture.md, top layer first: one set of units per line."""
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no ```layers block"
    return [set(line.split()) for line in block.group(1).splitlines() if line.strip()]


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, name: str, is_package: bool, known: set) -> set:
    """The package's modules that module ``name`` imports, anywhere in it (a
    name the package lacks is kept: ``missing_modules`` reports it)."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            subs = {f"{base}.{a.name}" for a in node.names} & known
            found |= subs if subs and len(subs) == len(node.names) else subs | {base}
    return {m for m in found if m != name and (m in known or m.split(".")[0] == "tvm_numguard")}


def import_graph(root: pathlib.Path = ROOT) -> dict:
    """Every module of the package under ``root``, and the package's modules it imports."""
    paths = {module_name(p, root): p for p in (root / "tvm_numguard").rglob("*.py")}
    return {name: imported(ast.parse(p.read_text()), name, p.name == "__init__.py", set(paths))
            for name, p in paths.items()}


def unit(module: str) -> str:
    """The layer unit of a module: its top package under tvm_numguard, or the module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(graph: dict, layers: list) -> list:
    """(importer, imported) pairs that break the order: a same-layer peer or a higher layer."""
    rank = {u: i for i, layer in enumerate(layers) for u in layer}
    wrong = []
    for importer, targets in graph.items():
        for target in targets:
            a, b = unit(importer), unit(target)
            if b == "" or a == b:
                continue  # the package root is the facade (``__version__``); a package imports itself
            if a == "":
                continue
            if rank[b] <= rank[a]:
                wrong.append((importer, target))
    return sorted(wrong)


def circles(graph: dict) -> list:
    """The strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                out.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


LAYERS = declared_layers((ROOT / "docs" / "architecture.md").read_text())


def test_every_unit_of_the_package_has_a_layer():
    units = {unit(m) for m in import_graph()} - {""}
    named = set().union(*LAYERS)
    assert units - named == set(), "add these to the layers block of docs/architecture.md"
    assert named - units == set(), "the layers block names units the package lacks"


def test_every_import_names_a_module_of_the_package():
    graph = import_graph()
    assert sorted((m, t) for m, targets in graph.items() for t in targets if t not in graph) == []


def test_no_import_goes_up_or_sideways():
    assert upward_imports(import_graph(), LAYERS) == []


def test_no_modules_import_each_other_in_a_circle():
    assert circles(import_graph()) == []


def test_the_checks_fail_on_a_circle_and_an_upward_import(tmp_path):
    package = tmp_path / "tvm_numguard"
    (package / "build").mkdir(parents=True)
    (package / "base").mkdir()
    (package / "__init__.py").write_text("")
    (package / "build" / "__init__.py").write_text("")
    (package / "base" / "__init__.py").write_text("")
    (package / "build" / "session.py").write_text("from ..base import pool\n")
    # the circle wave 2 had: a task reaching up into the session, inside a function
    (package / "base" / "pool.py").write_text("def run():\n    from ..build.session import BuildSession\n")
    graph = import_graph(tmp_path)
    assert circles(graph) == [["tvm_numguard.base.pool", "tvm_numguard.build.session"]]
    assert upward_imports(graph, [{"build"}, {"base"}]) == [("tvm_numguard.base.pool", "tvm_numguard.build.session")]


@pytest.mark.parametrize("block", ["```layers\ncli\napi fixes\n```\n"])
def test_the_layers_block_reads_top_layer_first(block):
    assert declared_layers(block) == [{"cli"}, {"api", "fixes"}]


def test_the_package_root_holds_its_areas_and_little_else():
    """A handful of areas a TVM engineer recognises, each a package (issue 46: at most 10 entries
    besides __init__.py; issue 53 adds one, ``engine``, one run told top-down above what it drives);
    every area is a line of the layers block."""
    entries = sorted(p.name for p in (ROOT / "tvm_numguard").iterdir()
                     if p.name not in ("__init__.py", "__pycache__"))
    assert len(entries) <= 11, entries
    assert set(entries) == set().union(*LAYERS) and all((ROOT / "tvm_numguard" / e).is_dir() for e in entries)
