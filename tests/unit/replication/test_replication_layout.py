"""The packages of the replication layer: the DDL model and parser (mybinlog/ddl) import nothing of the rest of
replication, the model imports neither the parser nor the actions that build on it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mybinlog

ROOT = Path(mybinlog.__file__).parent
PARSER = {"_parser", "_parse_column", "_parse_create", "_parse_alter", "_parse_statement"}


def _imports(path: Path) -> set[str]:
    """The absolute names of every module ``path`` imports (module level or not, type checking included)."""
    package = "mybinlog." + path.parent.name
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            if not node.module:  # `from . import x`
                names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_ddl_imports_nothing_of_replication_but_itself() -> None:
    """Beside itself: the errors and the one MySQL identifier quoting (``mybinlog.source.quote_mysql_ident``, from
    mybinlog/source/_sql.py: no IO; the source package imports its modules on first use)."""
    paths = sorted((ROOT / "ddl").glob("*.py"))
    assert len(paths) > 5, f"no DDL package at {ROOT / 'ddl'}"
    for path in paths:
        for name in _imports(path):
            if name.startswith("mybinlog"):
                assert name.startswith("mybinlog.ddl") or name in (
                    "mybinlog.errors",
                    "mybinlog.source",
                ), f"ddl/{path.name} imports {name}"
    code = (
        "import sys; import mybinlog.ddl._lexer, mybinlog.ddl._parser, mybinlog.ddl._render; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('mybinlog.source.') or m == 'asyncio')))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert set(out) <= {"mybinlog.source._dsn", "mybinlog.source._files", "mybinlog.source._sql"}, out


def test_the_model_does_not_import_the_parser() -> None:
    for module in ("_model", "_lexer", "_ops"):
        names = _imports(ROOT / "ddl" / f"{module}.py")
        assert not {n.rsplit(".", 1)[-1] for n in names} & PARSER, f"ddl/{module}.py imports the parser"
    # the actions (_ops) and apply_alter (_apply) build on the model: it imports neither (no TableDef.apply)
    assert not {"mybinlog.ddl._ops", "mybinlog.ddl._apply"} & _imports(ROOT / "ddl" / "_model.py")


def test_verify_is_the_function_and_its_package_is_reachable() -> None:
    """``mybinlog.replication.verify`` stays the function; its package is ``mybinlog.verification``."""
    import mybinlog.verification._compare as compare
    from mybinlog.verification import _verifier, verify

    assert callable(verify)
    assert verify is _verifier.verify
    assert compare.TableComparer is not None
