"""The layers of the package (docs/architecture.md): which package may import which, and no import circles.

Every import of every module of ``mybinlog`` counts, whatever its kind: module-level imports, imports under
``if TYPE_CHECKING:``, imports inside functions, ``importlib.import_module("...")`` with a literal name, and the
string tables of :func:`mybinlog._lazy.lazy_names` (the keys of ``lazy_names(__name__, {".module": (...)})`` are
modules relative to the package that calls it: the package's ``__init__`` imports them on first use). A circle that
only type checkers or a function call close is still a circle: the modules cannot be read, tested or moved one
without the other.

The rules, at two levels:

- Between packages (the layers): a package imports only the packages ``ALLOWED`` lists for it; ``ALLOWED`` itself
  is an order (no package reaches itself through it), so an import against the data path of any kind fails.
- Between modules: the modules and their imports form no cycle. A package's ``__init__`` imports the modules it
  re-exports (eagerly or lazily: both are edges from the ``__init__`` to the module), so a module that imports a name
  through its own package's ``__init__`` (``from . import Name``, ``from mybinlog.replication import Replicator``
  inside ``mybinlog.replication``) closes a circle and fails: it imports the sibling module that defines the name.
  The parent packages Python imports implicitly before a module (``mybinlog.x`` before ``mybinlog.x._y``) are not
  edges: they are imported first and import the module only on first use.

When two modules need each other, the shared type moves down into the lower one (or the lower one declares a small
``Protocol`` of what it uses, or is passed the values it needs); a function-level or type-checking import is not a
way out, and no circle is excused.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import mybinlog

ROOT = Path(mybinlog.__file__).parent

# layer -> the layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "errors": set(),  # the lowest layer: a position in an error is a small Protocol there, not protocol's class
    "_failpoints": set(),
    "_lazy": set(),  # the packages' names imported on first use (PEP 562), importing nothing itself
    "_text": set(),  # small text forms (durations) shared by several layers
    "protocol": {"errors", "_lazy"},
    # a replica's checkpoint, every sink's record (its JSON form, leader epochs): below clickhouse/ and replication/
    "_checkpoint": {"protocol", "errors"},
    "source": {"protocol", "errors", "_lazy"},
    "sharing": {"source", "protocol", "errors"},
    "ddl": {"source", "errors"},  # the MySQL DDL model; MySQL identifier quoting from source/_sql.py
    "clickhouse": {"_checkpoint", "ddl", "source", "protocol", "errors", "_lazy"},  # source: its SQL text helpers only
    # Debezium messages, the transactional producer, and the sink on the replication layer (docs/kafka.md)
    "kafka": {"replication", "_checkpoint", "ddl", "protocol", "errors", "_failpoints"},
    "verification": {"clickhouse", "ddl", "source", "protocol", "errors"},
    "replication": {
        "clickhouse",
        "_checkpoint",
        "ddl",
        "sharing",
        "source",
        "protocol",
        "errors",
        "_failpoints",
        "_lazy",
        "_text",
    },
    # an observer above the replicators: imports their states (mybinlog.replication.ReplicaState), never the reverse
    "status": {"replication", "sharing", "source", "protocol", "errors"},
    "snapshot": {"replication", "clickhouse", "kafka", "ddl", "sharing", "source", "protocol", "errors", "_text"},
    "cli": {
        "__init__",  # the package's version
        "snapshot",
        "replication",
        "verification",
        "kafka",
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


# how an import happens: when its module is imported, only under `if TYPE_CHECKING:`, when a function runs, or by
# name (importlib.import_module, the lazy_names tables)
KINDS = ("module", "type-checking", "function", "by name")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str, package: str) -> str:
    """``name`` (``.x``/``..x.y`` relative to ``package``, or absolute) as an absolute module name."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    parts = package.split(".")
    base = parts[: len(parts) - level + 1]
    rest = name[level:]
    return ".".join(base + ([rest] if rest else []))


def _imports(path: Path) -> list[tuple[str, str]]:
    """(absolute module imported, its kind in KINDS) for every import of ``path``. ``from x import y`` names the
    module ``x.y`` when there is one, else ``x``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    modules = _modules()
    out: list[tuple[str, str]] = []

    def add(name: str, kind: str) -> None:
        out.append((name, kind))

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            kind = "function" if kind == "module" else kind
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "type-checking")
            for child in node.orelse:
                visit(child, kind)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, kind)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve("." * node.level + (node.module or ""), package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules or sub in _extensions() else base, kind)
        elif isinstance(node, ast.Call):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if fname == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                rel = node.args[1] if len(node.args) > 1 else None
                anchor = module if isinstance(rel, ast.Name) and rel.id == "__name__" else package
                if isinstance(rel, ast.Constant) and isinstance(rel.value, str):
                    anchor = rel.value
                add(_resolve(str(node.args[0].value), anchor), "by name")
            elif fname.endswith("lazy_names") and len(node.args) > 1 and isinstance(node.args[1], ast.Dict):
                for key in node.args[1].keys:
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        add(_resolve(key.value, module), "by name")
        for child in ast.iter_child_nodes(node):
            visit(child, kind)

    visit(ast.parse(path.read_text()), "module")
    return out


@functools.cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


@functools.cache
def _extensions() -> frozenset[str]:
    """The compiled modules (``mybinlog.protocol._speedups``...), from their C sources (built or not): leaves of the
    import graph, not their package (``from . import _speedups`` imports the extension, not ``protocol/__init__``)."""
    names = set()
    for path in ROOT.rglob("*.c"):
        for line in path.read_text().splitlines():
            if "PyInit_" in line and "(" in line:
                init = line.split("PyInit_", 1)[1].split("(", 1)[0]
                names.add(_module_name(path.parent / "__init__.py") + "." + init)
    return frozenset(names)


def _edges() -> dict[tuple[str, str], set[str]]:
    """(importing module, imported module of mybinlog) -> the kinds of import between them."""
    modules = _modules()
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for module, path in modules.items():
        for name, kind in _imports(path):
            if name in _extensions():
                continue
            while name not in modules and "." in name:  # `import pkg.mod.Name`-like names -> the module
                name = name.rsplit(".", 1)[0]
            if name in modules and name != module and (name == "mybinlog" or name.startswith("mybinlog.")):
                edges[module, name].add(kind)
    return edges


def test_every_import_respects_the_layers() -> None:
    problems = []
    for module in sorted(_modules()):
        mine = ENTRY_SCRIPTS.get(module, _layer(module))
        assert mine in ALLOWED, f"{module}: package {mine!r} has no layer rule in this test (and docs/architecture.md)"
    for (module, name), kinds in sorted(_edges().items()):
        mine = ENTRY_SCRIPTS.get(module, _layer(module))
        theirs = _layer(name)
        if theirs != mine and theirs not in ALLOWED[mine]:
            problems.append(f"{module} imports {name} ({', '.join(sorted(kinds))}): {mine} may not import {theirs}")
    assert not problems, "\n".join(problems)


def test_the_layers_are_an_order() -> None:
    """No package reaches itself through ``ALLOWED``: every arrow between two packages points one way."""
    cycles = _cycles({layer: set(allowed) for layer, allowed in ALLOWED.items()})
    assert not cycles, f"packages that may import each other: {cycles}"


# Every package is used from outside through the names its ``__init__`` exports (``from ..protocol import
# RowsEvent``, never ``from ..protocol._events import RowsEvent``). The imports of another package's private module
# left, each with why; an entry that no longer exists fails.
KNOWN_PRIVATE_IMPORTS: dict[tuple[str, str], str] = {
    ("mybinlog.snapshot.job", "mybinlog.cli._snapshot"): "the spark-submit script is the snapshot command's own "
    "entry point; exporting it from mybinlog.cli would import the snapshot command at every `mybinlog dump`",
}


def _private_package(name: str) -> str | None:
    """The package whose private module ``name`` is (``mybinlog.x._y...`` -> ``x``), else None."""
    parts = name.split(".")
    if len(parts) > 2 and any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
        return parts[1]
    return None


def test_no_package_imports_another_packages_private_module() -> None:
    """A package is used from outside through its public names (its ``__init__``, one lazy-import table), never
    ``from ..clickhouse._checkpoint import ...``: what a package's modules are and where a name lives inside it
    stay its own business. Every kind of import counts, as in the layer rules."""
    edges = _edges()
    for arrow, why in KNOWN_PRIVATE_IMPORTS.items():
        assert arrow in edges, f"{arrow} ({why}) no longer exists: remove it from KNOWN_PRIVATE_IMPORTS"
    problems = []
    for (module, name), kinds in sorted(edges.items()):
        owner = _private_package(name)
        if owner is None or owner == _layer(module) or (module, name) in KNOWN_PRIVATE_IMPORTS:
            continue
        problems.append(
            f"{module} imports {name} ({', '.join(sorted(kinds))}): import its names from mybinlog.{owner} "
            f"(export them in mybinlog/{owner}/__init__.py)"
        )
    assert not problems, "imports of another package's private module:\n" + "\n".join(problems)


def test_no_import_circles() -> None:
    edges = _edges()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, name in edges:
        graph[module].add(name)
    problems = []
    for component in _cycles(graph):
        inside = set(component)
        arrows = [
            f"  {a} -> {b} ({', '.join(sorted(kinds))})"
            for (a, b), kinds in sorted(edges.items())
            if a in inside and b in inside
        ]
        problems.append(f"circle of {len(component)} modules:\n" + "\n".join(arrows))
    assert not problems, "import circles (every kind of import counts; see the module docstring):\n" + "\n".join(
        problems
    )


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
