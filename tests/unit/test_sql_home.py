"""Every SQL statement mybinlog runs against the MySQL/MariaDB source lives in ``mybinlog/source/`` (the methods of
``SourceConnection``, the control queries of ``BinlogConnection``): the layers above call them and hold no MySQL
SQL of their own.

The test reads the string literals of every module outside ``source/`` (docstrings and comments are prose, not
queries) and fails on text only MySQL/MariaDB understands. ClickHouse SQL (``system.tables``, ``FINAL``...) is not
looked for: it belongs to the replica's layers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import mybinlog

ROOT = Path(mybinlog.__file__).parent

#: text that is MySQL/MariaDB SQL wherever it appears in a string
MYSQL_ONLY = re.compile(
    r"SHOW\s+(BINARY\s+LOGS?|MASTER\s+STATUS|BINARY\s+LOG\s+STATUS|(GLOBAL\s+|SESSION\s+)?(VARIABLES|STATUS)|"
    r"CREATE\s+TABLE\s+(`|$)|FULL\s+TABLES|GRANTS|DATABASES\b(?!,))"
    r"|information_schema\.|performance_schema\.|@@|START\s+TRANSACTION\s+WITH|FLUSH\s+TABLES|UNLOCK\s+TABLES|"
    r"SELECT\s+BINLOG_GTID_POS|^\s*XA\s+RECOVER|LIMIT\s+\d+\s+OFFSET|SELECT\s+1\s+FROM|COMMAND\s+LIKE\s+'Binlog\s+Dump|SELECT\s+COUNT\(\*\)|SET\s+(SESSION|time_zone)",
    re.IGNORECASE,
)

#: modules outside source/ that run SQL against a MySQL/MariaDB server on purpose, and why
EXEMPT = {
    "testing": "the test servers' harness: it sets up and administers the servers the tests run against",
    "cli/_demo.py": "the demo's workload: it plays the application writing to the source, not mybinlog reading it",
}

#: (module, literal) pairs that name a statement in prose, not a query
PROSE = {
    ("status/_metrics.py", "Binlog files on the source (SHOW BINARY LOGS)."),
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (a module's, a class's, a function's)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    # attribute docstrings (a string statement after an assignment) are prose too
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.add(id(node.value))
    return out


def mysql_sql_outside_source(root: Path) -> Iterator[tuple[str, int, str]]:
    """(module relative to ``root``, line, literal) of each string literal outside ``source/`` holding MySQL SQL."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("source/") or any(rel == e or rel.startswith(e + "/") for e in EXEMPT):
            continue
        tree = ast.parse(path.read_text(), str(path))
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in prose
                and MYSQL_ONLY.search(node.value)
                and (rel, node.value) not in PROSE
            ):
                yield rel, node.lineno, node.value


def test_mysql_queries_live_in_source() -> None:
    found = [f"mybinlog/{rel}:{line}: {text[:100]!r}" for rel, line, text in mysql_sql_outside_source(ROOT)]
    assert not found, (
        "MySQL/MariaDB SQL outside mybinlog/source/: make it a method of SourceConnection (mybinlog/source/_session.py)"
        " and call that:\n  " + "\n  ".join(found)
    )


def test_the_rule_sees_a_query() -> None:
    """The scan finds a query in an f-string and in a call, and skips docstrings."""
    sample = (
        '"""Reads SHOW BINARY LOGS (prose)."""\n'
        "async def f(src, t):\n"
        '    """SELECT @@global.gtid_purged, in a docstring."""\n'
        '    await src.query("SHOW BINARY LOGS")\n'
        '    await src.query(f"SELECT COUNT(*) FROM {t}")\n'
    )
    tree = ast.parse(sample)
    prose = _docstrings(tree)
    hits = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose
        if MYSQL_ONLY.search(n.value)
    ]
    assert hits == ["SHOW BINARY LOGS", "SELECT COUNT(*) FROM "]
