"""Dependencies of the testbed package point one way and never in a circle.

The import graph is built with `ast` from every module under testbed/, counting
module-level imports, imports under `if TYPE_CHECKING:` and imports inside functions alike
(a local import hides a dependency from the interpreter, not from the design). An import
of `testbed.a.b` is an edge to the deepest module it names (`from testbed.a import b`
names `testbed.a.b` when that is a module).

Checked:

- no cycle among modules, and none among units (a unit is the package under testbed/ a
  module sits in, e.g. `hypervisor`; a top-level module is its own unit, e.g. `errors`);
- no unit imports a unit of a higher layer (`LAYERS`). Units of one layer may import each
  other (without cycles). The command line (`testbed/cli/`, every Typer app) is the unit
  `cli` at the top, which no other unit imports; so is `testing`, the public test support,
  which no product module imports;
- only `testbed/cli/` imports Typer: a domain package holds no command-line code.

`ALLOWED` lists known violations in files other people are changing right now, each with
its owner; remove an entry when its fix lands (the test fails on entries that no longer
occur, so the list cannot go stale).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "testbed"

LAYERS: dict[str, int] = {
    # foundation: imported by anything, imports nothing above it
    "testbed": 0,  # the package's own __init__
    "errors": 0,
    "config": 0,
    "aio": 0,
    "model": 0,
    # the run database
    "db": 1,
    # how things look: formatters, palette, SVG, terminal-safe text (imports only itself)
    "render": 1,
    # the domain: machines, guests, probes, analysis, agents, and what they share
    "hypervisor": 2,
    "guest": 2,
    "probes": 2,
    "analysis": 2,
    "agents": 2,
    "images": 2,
    "egress": 2,  # the guests' controlled way out: proxy, relay, access log
    "runtime": 2,  # wiring of settings, catalog, accelerator and libvirt for the layers above
    "doctor": 2,  # host checks behind `testbed doctor`
    "client": 2,  # clients of the environment API (trainers' side; reuses the LLM agent's tool and text)
    "export": 2,  # readers of the run database: Parquet export and reports
    "report": 2,
    # one run's lifecycle
    "runner": 3,
    "importers": 3,  # other harnesses' published runs stored as runs, then analysed
    # many runs on many hosts
    "scheduler": 4,
    # long-running services
    "server": 5,
    # entry points
    "cli": 6,
    "testing": 6,
}

ALLOWED: set[tuple[str, str]] = {
    # owner: the helper on testbed/export/* (card and dataset import each other; dataset's
    # import of card is function-local)
    ("testbed.export.dataset", "testbed.export.card"),
}
"""(importer, imported) edges exempt from the checks until their owners fix them."""


def _modules(package_dir: Path) -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for path in package_dir.rglob("*.py"):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _deepest(name: str, mods: dict[str, Path]) -> str | None:
    """The longest prefix of dotted *name* that is a testbed module."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.AST, package: str, mods: dict[str, Path]) -> Iterator[str]:
    """The testbed modules an import statement names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        names = [f"{base}.{alias.name}" for alias in node.names]
    else:
        return
    for name in names:
        target = _deepest(name, mods) if name.startswith("testbed") else None
        if target is not None:
            yield target


def import_graph(package_dir: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` for every module of the package."""
    mods = _modules(package_dir)
    graph: dict[str, dict[str, int]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            for target in _targets(node, package, mods):
                if target != mod:
                    edges.setdefault(target, getattr(node, "lineno", 0))
        graph[mod] = edges
    return graph


def unit_of(module: str) -> str:
    """The unit a module belongs to (see the module docstring)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "testbed"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    return import_graph()


def _checked_edges(graph: dict[str, dict[str, int]]) -> Iterator[tuple[str, str, int]]:
    for mod, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            if (mod, target) not in ALLOWED:
                yield mod, target, line


def test_every_unit_has_a_layer(graph: dict[str, dict[str, int]]) -> None:
    assert {unit_of(m) for m in graph} <= set(LAYERS), set(map(unit_of, graph)) - set(LAYERS)


def test_no_module_cycles(graph: dict[str, dict[str, int]]) -> None:
    modules: dict[str, set[str]] = defaultdict(set)
    for mod, target, _ in _checked_edges(graph):
        modules[mod].add(target)
    assert _cycles(modules) == []


def test_no_unit_cycles(graph: dict[str, dict[str, int]]) -> None:
    units: dict[str, set[str]] = defaultdict(set)
    for mod, target, _ in _checked_edges(graph):
        if unit_of(mod) != unit_of(target):
            units[unit_of(mod)].add(unit_of(target))
    assert _cycles(units) == []


def test_no_upward_imports(graph: dict[str, dict[str, int]]) -> None:
    upward = [
        f"{mod}:{line} imports {target} ({unit_of(mod)} {LAYERS[unit_of(mod)]} < {unit_of(target)} "
        f"{LAYERS[unit_of(target)]})"
        for mod, target, line in _checked_edges(graph)
        if LAYERS[unit_of(mod)] < LAYERS[unit_of(target)]
    ]
    assert upward == []


def test_product_code_does_not_import_test_support(graph: dict[str, dict[str, int]]) -> None:
    users = {
        mod for mod, target, _ in _checked_edges(graph) if unit_of(target) == "testing" and unit_of(mod) != "testing"
    }
    assert {unit_of(m) for m in users} <= {"cli"}, users


def test_nothing_imports_the_command_line(graph: dict[str, dict[str, int]]) -> None:
    users = [f"{mod} imports {target}" for mod, target, _ in _checked_edges(graph)
             if unit_of(target) == "cli" and unit_of(mod) != "cli"]  # fmt: skip
    assert users == []


def test_only_the_command_line_imports_typer() -> None:
    users = []
    for mod, path in _modules(PACKAGE).items():
        if unit_of(mod) == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            users += [f"{mod}:{node.lineno}" for name in names if name.split(".")[0] == "typer"]
    assert users == []


def test_allowed_violations_still_exist(graph: dict[str, dict[str, int]]) -> None:
    stale = {(mod, target) for mod, target in ALLOWED if target not in graph.get(mod, {})}
    assert stale == set(), "fixed: remove these from ALLOWED"


def test_the_graph_sees_local_type_checking_and_relative_imports(tmp_path: Path) -> None:
    # the checker itself, on a small package: the hidden edges it exists to find are found
    pkg = tmp_path / "testbed"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "low.py": "import os\n",
        "local.py": "def f():\n    from testbed.low import x\n    return x\n",
        "typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from testbed.local import f\n",
        "sub/__init__.py": "from . import mod\n",
        "sub/mod.py": "from ..low import y\nimport testbed.typed\n",
        "sub/user.py": "from testbed.sub import mod, missing\nfrom testbed import sub\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    graph = import_graph(pkg)
    assert graph["testbed.local"] == {"testbed.low": 2}
    assert graph["testbed.typed"] == {"testbed.local": 3}
    assert graph["testbed.sub"] == {"testbed.sub.mod": 1}
    assert graph["testbed.sub.mod"] == {"testbed.low": 1, "testbed.typed": 2}
    assert graph["testbed.sub.user"] == {"testbed.sub.mod": 1, "testbed.sub": 1}
    assert graph["testbed.low"] == {}
    assert [unit_of(m) for m in ("testbed.cli", "testbed.cli.runs", "testbed.db.read", "testbed.errors")] == [
        "cli",
        "cli",
        "db",
        "errors",
    ]
    assert unit_of("testbed") == "testbed" and unit_of("testbed.server.envapi.app") == "server"


def test_cycle_finder() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"], ["c", "d"]]
