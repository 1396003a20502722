"""The public surface: __all__ is complete and exact; the decoder is sans-IO; optional extras stay optional."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

import mybinlog


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        n for n in dir(mybinlog) if not n.startswith("_") and not isinstance(getattr(mybinlog, n), types.ModuleType)
    } - {"annotations"}
    assert set(mybinlog.__all__) == public
    assert len(mybinlog.__all__) == len(set(mybinlog.__all__))
    for name in mybinlog.__all__:
        assert getattr(mybinlog, name) is not None


def _modules_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.split())


IO_MODULES = {"asyncio", "socket", "ssl", "selectors", "asyncmy", "pymysql", "aiohttp", "aiochclient", "anyio"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_decoder_is_sans_io() -> None:
    """Every module of the sans-IO layer (the decoder, GTID sets, positions, rendering) imports nothing that performs
    IO: only its own modules, the exception tree and the standard library's pure parts."""
    root = Path(mybinlog.__file__).parent
    files = [*sorted((root / "protocol").glob("*.py")), root / "errors.py"]
    for path in files:
        for name in _imports(path):
            if name.startswith("."):
                # (errors.py names BinlogPosition for type checking only)
                assert name == "." or name.startswith(("._", ".protocol._")) or name in ("..errors", ".._lazy"), (
                    f"{path.name} imports {name}, outside the sans-IO layer"
                )
            else:
                assert name.split(".")[0] not in IO_MODULES, f"{path.name} imports {name}"


def test_core_import_does_not_need_extras() -> None:
    loaded = _modules_after_import("mybinlog")
    for extra in ("pyspark", "chdb", "aiochclient", "pymysql", "pymysqlreplication"):
        assert extra not in loaded, f"`import mybinlog` pulls in {extra}"


def test_core_import_is_light_and_lazy_names_resolve() -> None:
    """`import mybinlog` (and so `mybinlog dump --file`) does not load the asyncio connection layer; the names
    living there are imported on first use, and `from mybinlog import ...` still works for them."""
    loaded = _modules_after_import("mybinlog")
    lazy = (
        "mybinlog.sharing",
        "mybinlog.sharing._consumer",
        "mybinlog.sharing._dispatcher",
        "mybinlog.sharing._client",
        "mybinlog.status",
        "mybinlog.status._server",
        "mybinlog.source._stream",
        "mybinlog.source._connection",
    )
    for heavy in ("asyncio", "asyncmy", "ssl", "anyio", *lazy):
        assert heavy not in loaded, f"`import mybinlog` pulls in {heavy}"
    code = (
        "import sys, mybinlog; from mybinlog import BinlogStream, get_binlog_client, ServerInfo, serve_status; "
        "import mybinlog.source._stream as s, mybinlog.sharing._client as h, mybinlog.source._connection as t; "
        "import mybinlog.sharing._consumer as c, mybinlog.status._server as st; "
        "assert BinlogStream is s.BinlogStream and get_binlog_client is h.get_binlog_client; "
        "assert ServerInfo is t.ServerInfo and mybinlog.Binlog is c.Binlog and serve_status is st.serve_status; "
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "ok"
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        mybinlog.NoSuchName  # noqa: B018


@pytest.mark.parametrize(
    "package", ["mybinlog", "mybinlog.replication", "mybinlog.clickhouse", "mybinlog.source", "mybinlog.protocol"]
)
def test_every_public_name_imports_and_type_checkers_see_the_lazy_ones(package: str) -> None:
    """`from package import X` works for every X of __all__ (the lazy names too), and the lazy names are exactly the
    ones the package imports under `if TYPE_CHECKING:` as `X as X` (what mypy --strict reads as exported)."""
    code = f"from {package} import *; import {package} as p; assert all(n in globals() for n in p.__all__); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "ok"
    module = importlib.import_module(package)
    assert len(module.__all__) == len(set(module.__all__))
    tree = ast.parse(Path(module.__file__ or "").read_text())
    typed = {
        alias.asname
        for node in tree.body
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for imp in node.body
        if isinstance(imp, ast.ImportFrom)
        for alias in imp.names
        if alias.asname == alias.name
    }
    lazy = getattr(module, "_LAZY", module.__all__)  # the packages but mybinlog have lazy names only
    assert typed == set(lazy)


def test_errors_are_exported_from_mybinlog_and_mybinlog_errors_only() -> None:
    """An error class has two import paths: mybinlog.errors and mybinlog. No other module lists one in __all__."""
    import mybinlog.errors

    errors = {n for n, v in vars(mybinlog.errors).items() if isinstance(v, type) and issubclass(v, BaseException)}
    assert errors <= set(mybinlog.__all__)
    root = Path(mybinlog.__file__).parent
    for path in sorted(root.rglob("*.py")):
        if path in (root / "__init__.py", root / "errors.py"):
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                listed = {ast.literal_eval(e) for e in getattr(node.value, "elts", [])}
                assert not listed & errors, f"{path.relative_to(root)} exports {sorted(listed & errors)}"
