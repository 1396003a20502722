"""The layers of the package (docs/architecture.md): which package may import which, and no import circles.

Every import in every module of ``mybinlog`` (module level and inside functions, type-checking imports included) is
resolved to the package it names and checked against the rules below; module-level imports must form no cycle
(a cycle through function-level imports is allowed: they run after both modules are loaded).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import mybinlog

ROOT = Path(mybinlog.__file__).parent

# layer -> the layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "errors": {"protocol"},  # names BinlogPosition for type checking only
    "_failpoints": set(),
    "_lazy": set(),  # the packages' names imported on first use (PEP 562), importing nothing itself
    "protocol": {"errors"},
    "source": {"protocol", "errors"},
    "sharing": {"source", "protocol", "errors"},
    "status": {"sharing", "source", "protocol", "errors"},
    "ddl": {"source", "errors"},  # the MySQL DDL model; MySQL identifier quoting from source/_sql.py
    "clickhouse": {"ddl", "source", "protocol", "errors", "_lazy"},  # source: its SQL text helpers only
    "kafka": {"protocol", "errors"},  # Debezium messages and the transactional producer (docs/kafka.md)
    "verification": {"clickhouse", "ddl", "source", "protocol", "errors"},
    "replication": {"clickhouse", "ddl", "sharing", "status", "source", "protocol", "errors", "_failpoints", "_lazy"},
    "snapshot": {"replication", "clickhouse", "ddl", "sharing", "source", "protocol", "errors"},
    "cli": {
        "snapshot",
        "replication",
        "verification",
        "clickhouse",
        "ddl",
        "status",
        "sharing",
        "source",
        "protocol",
        "errors",
        "testing",
        "_failpoints",
    },
    "testing": set(),
    "__init__": {"errors", "protocol", "source", "sharing", "status", "_lazy"},
    "__main__": {"cli"},
}
# the spark-submit entry script lives in the snapshot package (its path is what users pass to spark-submit) but is
# a command line: it only hands over to mybinlog.cli
ENTRY_SCRIPTS = {"mybinlog.snapshot.job": "cli"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(absolute module imported, when the module is imported?) for every import of ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    # run when the module is imported: the module-level statements (`if TYPE_CHECKING:` blocks never run)
    top = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, id(node) in top) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name == "mybinlog" or (node.level and not node.module):
                # `from . import x`: the submodules named
                out.extend((f"{name}.{alias.name}", id(node) in top) for alias in node.names)
            else:
                out.append((name, id(node) in top))
    return out


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def test_every_import_respects_the_layers() -> None:
    problems = []
    for module, path in sorted(_modules().items()):
        mine = ENTRY_SCRIPTS.get(module, _layer(module))
        assert mine in ALLOWED, f"{module}: package {mine!r} has no layer rule in this test (and docs/architecture.md)"
        for name, _ in _imports(path):
            if name != "mybinlog" and not name.startswith("mybinlog."):
                continue
            theirs = _layer(name)
            if theirs == "__init__" or theirs == mine:
                continue
            if theirs not in ALLOWED[mine]:
                problems.append(f"{module} imports {name}: {mine} may not import {theirs}")
    assert not problems, "\n".join(problems)


def test_no_import_circles() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        for name, top in _imports(path):
            if not top:
                continue
            while name not in modules and "." in name:  # `from pkg.mod import Name` -> pkg.mod
                name = name.rsplit(".", 1)[0]
            if name in modules and name != module:
                graph[module].add(name)
    cycles = _cycles(graph)
    assert not cycles, f"import circles: {cycles}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_is_too_long_to_follow() -> None:
    """A reader should not lose the thread: no module over 1,200 lines (the generated-code and value tables of the
    decoder are the densest and stay under it)."""
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text().splitlines())) > 1200}
    assert not long, f"modules too long to follow: {long}"


def test_no_c_file_is_too_long_to_follow() -> None:
    """The same rule for the compiled core's C files and headers: one role a file (docs/compiled-core.md, "Where new
    code goes"), none over 1,200 lines."""
    sources = [p for p in ROOT.rglob("*") if p.suffix in (".c", ".h")]
    assert any(p.name == "_speedups.c" for p in sources), "the compiled core's sources are not in the package"
    long = {str(p.relative_to(ROOT)): n for p in sources if (n := len(p.read_text().splitlines())) > 1200}
    assert not long, f"C files too long to follow (split them by role, as _speedups.c is): {long}"
