"""One statement of a binlog QUERY event -> its operations. :func:`parse_ddl` hands CREATE / ALTER / DROP /
RENAME / TRUNCATE (tables, indexes, databases) to the grammar, turns DML logged as a statement and table DDL it
cannot parse into :class:`~._ops.Unsupported`, and gives ``[]`` for everything else. It never raises."""

from __future__ import annotations

import re

from ..errors import DdlApplyError, DdlParseError
from ._lexer import _render_tokens
from ._model import norm
from ._ops import (
    AddIndex,
    AlterTable,
    CreateDatabase,
    DdlOp,
    DropDatabase,
    DropIndex,
    DropPrimaryKey,
    DropTable,
    RenameTable,
    TruncateTable,
    Unsupported,
)
from ._parse_alter import _alter_table
from ._parse_create import _create_table, _key_parts
from ._parser import _Parser

__all__ = ["parse_ddl"]


# --------------------------------------------------------------------------------------------------------------
# statements


_DML = ("INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD")
_DML_REASON = (
    "a data-changing statement is logged as a statement, not as row events: binlog_format is not ROW "
    "(STATEMENT, or MIXED for this statement), so its row changes cannot be replicated; set binlog_format=ROW"
)


def _dml_target(p: _Parser, default_schema: str) -> tuple[str, str] | None:
    word = p.next().upper
    skip = ("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "QUICK", "IGNORE", "CONCURRENT", "LOCAL")
    if word == "LOAD":
        while not p.at_end() and not p.is_kw("TABLE"):
            p.next()
        p.accept("TABLE")
    while p.is_kw(*skip):
        p.next()
    if word in ("INSERT", "REPLACE"):
        p.accept("INTO")
    elif word == "DELETE":
        p.accept("FROM")
    if p.peek().kind in ("word", "qident"):
        return p.table_name(default_schema)
    return None


def _statement(p: _Parser, default_schema: str, sql: str) -> list[DdlOp]:
    tok = p.peek()
    if tok.kind != "word":
        return []
    word = tok.upper
    if word == "CREATE":
        p.i += 1
        or_replace = p.accept("OR", "REPLACE")
        if p.accept("TEMPORARY"):
            return []
        if p.accept("TABLE"):
            return _create_table(p, default_schema, or_replace=or_replace, statement=sql)
        if p.accept("DATABASE") or p.accept("SCHEMA"):
            if_not_exists = p.accept("IF", "NOT", "EXISTS")
            name = p.ident()
            create = CreateDatabase(name, if_not_exists)
            return [DropDatabase(name, True), create] if or_replace else [create]
        while p.is_kw("ONLINE", "OFFLINE", "UNIQUE", "FULLTEXT", "SPATIAL", "VECTOR"):
            p.next()
        if p.accept("INDEX"):
            start = p.i - 1
            unique = any(t.kind == "word" and t.upper == "UNIQUE" for t in p.toks[:start])
            p.accept("IF", "NOT", "EXISTS")
            index_name = p.ident()
            if p.accept("USING") or p.accept("TYPE"):
                p.next()
            p.expect("ON")
            schema, name = p.table_name(default_schema)
            p.target = (schema, name)
            cols = _key_parts(p)
            text = _render_tokens(p.toks[: p.i])
            return [AlterTable(schema, name, [AddIndex(text, index_name, cols, unique)])]
        return []
    if word == "ALTER":
        p.i += 1
        while p.is_kw("ONLINE", "OFFLINE", "IGNORE"):
            p.next()
        if p.accept("TABLE"):
            return [_alter_table(p, default_schema)]
        return []
    if word == "DROP":
        p.i += 1
        if p.accept("TEMPORARY"):
            return []
        if p.accept("TABLE") or p.accept("TABLES"):
            if_exists = p.accept("IF", "EXISTS")
            tables = [p.table_name(default_schema)]
            p.target = tables[0]
            while p.accept_op(","):
                tables.append(p.table_name(default_schema))
            if p.accept("WAIT"):
                p.integer()
            p.accept("NOWAIT")
            p.accept("RESTRICT") or p.accept("CASCADE")
            p.expect_end()
            return [DropTable(tables, if_exists)]
        if p.accept("DATABASE") or p.accept("SCHEMA"):
            if_exists = p.accept("IF", "EXISTS")
            return [DropDatabase(p.ident(), if_exists)]
        p.accept("ONLINE") or p.accept("OFFLINE")
        if p.accept("INDEX"):
            p.accept("IF", "EXISTS")
            index_name = p.ident()
            p.expect("ON")
            schema, name = p.table_name(default_schema)
            p.target = (schema, name)
            text = _render_tokens(p.toks[: p.i])
            if norm(index_name) == "primary":
                return [AlterTable(schema, name, [DropPrimaryKey()])]
            return [AlterTable(schema, name, [DropIndex(text, index_name)])]
        return []
    if word == "RENAME":
        p.i += 1
        if not (p.accept("TABLE") or p.accept("TABLES")):
            return []
        p.accept("IF", "EXISTS")
        pairs = []
        while True:
            old = p.table_name(default_schema)
            p.target = p.target or old
            if p.accept("WAIT"):
                p.integer()
            p.accept("NOWAIT")
            p.expect("TO")
            new = p.table_name(default_schema)
            pairs.append((old, new))
            if not p.accept_op(","):
                break
        p.expect_end()
        return [RenameTable(pairs)]
    if word == "TRUNCATE":
        p.i += 1
        p.accept("TABLE")
        schema, name = p.table_name(default_schema)
        p.target = (schema, name)
        if p.accept("WAIT"):
            p.integer()
        p.accept("NOWAIT")
        p.expect_end()
        return [TruncateTable(schema, name)]
    if word in _DML:
        try:
            target = _dml_target(p, default_schema)
        except DdlParseError:
            target = None
        if target is None:
            return [Unsupported(sql, _DML_REASON)]
        return [Unsupported(sql, _DML_REASON, target[0], target[1])]
    return []


_HEAD_RE = re.compile(r"\s*(?:/\*.*?\*/\s*)*([A-Za-z]+)", re.S)
_TABLE_DDL_HEADS = ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE")


def parse_ddl(sql: str, default_schema: str, *, sql_mode: int = 0) -> list[DdlOp]:
    """The operations of one statement (a QUERY event's text). Never raises.

    ``[]`` means nothing to follow (transaction control, users and grants, views, routines, triggers, events,
    temporary tables, ALTER DATABASE...). Table DDL that cannot be parsed becomes :class:`Unsupported` with the
    reason; so does DML logged as a statement. ``sql_mode`` is ``QueryEvent.sql_mode`` (0 when unknown).
    """
    try:
        p = _Parser(sql, sql_mode)
    except DdlParseError as exc:
        m = _HEAD_RE.match(sql)
        head = m.group(1).upper() if m else ""
        if head in _DML:
            return [Unsupported(sql, _DML_REASON)]
        if head in _TABLE_DDL_HEADS:
            return [Unsupported(sql, f"cannot parse the statement: {exc.message}")]
        return []
    try:
        return _statement(p, default_schema, sql)
    except (DdlParseError, DdlApplyError, KeyError) as exc:
        if isinstance(exc, DdlParseError):
            detail = exc.message
            if exc.position is not None:
                detail += f" at position {exc.position}"
        elif isinstance(exc, KeyError):
            detail = f"a key names an unknown column: {exc.args[0]}"
        else:
            detail = str(exc)
        schema, name = p.target if p.target is not None else (None, None)
        return [Unsupported(sql, f"cannot parse the statement: {detail}", schema, name)]
