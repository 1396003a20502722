"""The packages of the replication layer: the DDL model and parser import nothing of the rest of replication, the
model does not import the parser, and the modules these packages replaced are deprecated aliases of the same names."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import mybinlog.replication

ROOT = Path(mybinlog.replication.__file__).parent
PARSER = {"_parser", "_parse_column", "_parse_create", "_parse_alter", "_parse_statement"}


def _imports(path: Path) -> set[str]:
    """The absolute names of every module ``path`` imports (module level or not, type checking included)."""
    package = "mybinlog.replication." + path.parent.name
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
    for path in sorted((ROOT / "ddl").glob("*.py")):
        for name in _imports(path):
            if name.startswith("mybinlog"):
                assert name.startswith("mybinlog.replication.ddl") or name == "mybinlog.errors", (
                    f"ddl/{path.name} imports {name}"
                )


def test_the_model_does_not_import_the_parser() -> None:
    for module in ("_model", "_lexer", "_ops"):
        names = _imports(ROOT / "ddl" / f"{module}.py")
        assert not {n.rsplit(".", 1)[-1] for n in names} & PARSER, f"ddl/{module}.py imports the parser"


ALIASES = [("_ddl", "ddl"), ("_types", "types"), ("_target", "target"), ("_verify", "verification")]


@pytest.mark.parametrize(("old", "new"), ALIASES)
def test_the_old_modules_are_deprecated_aliases(old: str, new: str) -> None:
    sys.modules.pop(f"mybinlog.replication.{old}", None)
    with pytest.warns(DeprecationWarning, match=f"mybinlog.replication.{old} is deprecated"):
        alias = importlib.import_module(f"mybinlog.replication.{old}")
    package = importlib.import_module(f"mybinlog.replication.{new}")
    assert alias.__all__ == package.__all__
    for name in package.__all__:
        assert getattr(alias, name) is getattr(package, name), name


def test_verify_is_the_function_and_its_package_is_reachable() -> None:
    """``mybinlog.replication.verify`` stays the function; its package is ``mybinlog.replication.verification``."""
    import mybinlog.replication.verification._compare as compare
    from mybinlog.replication import verify
    from mybinlog.replication.verification import _verifier

    assert callable(verify)
    assert verify is _verifier.verify
    assert compare.TableComparer is not None


def test_the_flat_module_paths_of_0_1_still_import_with_a_warning() -> None:
    code = (
        "import warnings, sys\n"
        "warnings.simplefilter('error')\n"
        "import mybinlog\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    import mybinlog._sharing as s, mybinlog._protocol._events as e, mybinlog._stream as st\n"
        "import mybinlog.sharing, mybinlog.protocol._events, mybinlog.source._stream\n"
        "assert s is mybinlog.sharing and e is mybinlog.protocol._events and st is mybinlog.source._stream\n"
        "assert s.get_binlog_client is mybinlog.get_binlog_client\n"
        "assert [str(w.message).split()[0] for w in seen] == "
        "['mybinlog._sharing', 'mybinlog._protocol', 'mybinlog._protocol._events', 'mybinlog._stream'], seen\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
