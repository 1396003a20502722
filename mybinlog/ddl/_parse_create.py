"""CREATE TABLE: the column list, keys, CHECK constraints and table options, read into a
:class:`~._model.TableDef`; also ``CREATE TABLE ... LIKE`` and ``... SELECT``. :func:`parse_create_table` reads
``SHOW CREATE TABLE`` output (the schema a replica starts from)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import DdlApplyError, DdlParseError
from ._model import (
    ColumnDef,
    TableDef,
    _add_unique,
    _charset_of_collation,
    _norm_charset,
    _norm_collation,
    _set_primary_key,
    norm,
)
from ._ops import CreateTable, CreateTableLike, CreateTableSelect, DdlOp, DropTable
from ._parse_column import _ColSpec, _finish_column, _is_json_check, _parse_column
from ._parser import _Parser

__all__ = ["parse_create_table"]


# --------------------------------------------------------------------------------------------------------------
# CREATE TABLE


@dataclass
class _Body:
    columns: list[ColumnDef] = field(default_factory=list)
    specs: list[_ColSpec] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    uniques: list[tuple[str | None, list[str]]] = field(default_factory=list)
    json_checks: set[str] = field(default_factory=set)


def _key_parts(p: _Parser) -> list[str]:
    """``(col[(len)] [ASC|DESC], ...)``; functional parts ``((expr))`` give no name."""
    p.expect_op("(")
    names: list[str] = []
    while True:
        if p.is_op("("):
            p.group()
        else:
            names.append(p.ident())
            if p.is_op("("):
                p.group()
        p.accept("ASC") or p.accept("DESC")
        if p.accept_op(","):
            continue
        p.expect_op(")")
        return names


def _index_def(p: _Parser) -> tuple[str | None, list[str]]:
    """After INDEX/KEY/UNIQUE [KEY]/PRIMARY KEY: ``[IF NOT EXISTS] [name] [USING t] (parts) [options]``."""
    p.accept("IF", "NOT", "EXISTS")
    name: str | None = None
    if not p.is_op("(") and not p.is_kw("USING", "TYPE"):
        name = p.ident()
    if p.accept("USING") or p.accept("TYPE"):
        p.next()
    cols = _key_parts(p)
    p.skip_to_comma()
    return name, cols


def _create_definition(p: _Parser, body: _Body) -> None:
    tok = p.peek()
    if tok.kind == "word":
        word = tok.upper
        symbol: str | None = None
        if word == "CONSTRAINT":
            p.i += 1
            if not p.is_kw("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                symbol = p.ident()
            tok = p.peek()
            word = tok.upper if tok.kind == "word" else ""
            if word not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                raise p.error("expected PRIMARY KEY, UNIQUE, FOREIGN KEY or CHECK after CONSTRAINT")
        if word == "PRIMARY" and p.is_kw("KEY", k=1):
            p.i += 2
            _name, cols = _index_def(p)
            body.primary_key = cols
            return
        if word == "UNIQUE":
            p.i += 1
            p.accept("KEY") or p.accept("INDEX")
            name, cols = _index_def(p)
            body.uniques.append((name if name is not None else symbol, cols))
            return
        if word in ("INDEX", "KEY"):
            p.i += 1
            _index_def(p)
            return
        if word in ("FULLTEXT", "SPATIAL") or (word == "VECTOR" and p.is_kw("INDEX", "KEY", k=1)):
            p.i += 1
            p.accept("KEY") or p.accept("INDEX")
            _index_def(p)
            return
        if word == "FOREIGN" and p.is_kw("KEY", k=1):
            p.skip_to_comma()
            return
        if word == "CHECK" and p.is_op("(", k=1):
            p.i += 1
            inner = p.group()
            if len(inner) == 4 and inner[2].kind in ("word", "qident") and _is_json_check(inner, inner[2].value):
                body.json_checks.add(norm(inner[2].value))
            p.skip_to_comma()
            return
        if word == "PERIOD" and p.is_kw("FOR", k=1):
            p.skip_to_comma()
            return
    name = p.ident()
    spec = _parse_column(p, name)
    body.specs.append(spec)


def _create_body(p: _Parser) -> _Body:
    body = _Body()
    p.expect_op("(")
    if p.accept_op(")"):
        return body
    while True:
        _create_definition(p, body)
        if p.accept_op(","):
            continue
        p.expect_op(")")
        return body


_SELECT_START = ("SELECT", "WITH", "TABLE", "VALUES", "AS", "IGNORE", "REPLACE")


#: table options taking one value (engine-defined options ``name=value`` are accepted too)
_TABLE_OPTION_NAMES = frozenset(
    {
        "AUTO_INCREMENT",
        "AUTOEXTEND_SIZE",
        "AVG_ROW_LENGTH",
        "CHECKSUM",
        "TABLE_CHECKSUM",
        "COMMENT",
        "COMPRESSION",
        "CONNECTION",
        "DELAY_KEY_WRITE",
        "ENCRYPTION",
        "ENCRYPTED",
        "ENCRYPTION_KEY_ID",
        "ENGINE_ATTRIBUTE",
        "SECONDARY_ENGINE",
        "SECONDARY_ENGINE_ATTRIBUTE",
        "INSERT_METHOD",
        "KEY_BLOCK_SIZE",
        "MAX_ROWS",
        "MIN_ROWS",
        "PACK_KEYS",
        "PASSWORD",
        "ROW_FORMAT",
        "STATS_AUTO_RECALC",
        "STATS_PERSISTENT",
        "STATS_SAMPLE_PAGES",
        "UNION",
        "PAGE_CHECKSUM",
        "PAGE_COMPRESSED",
        "PAGE_COMPRESSION_LEVEL",
        "TRANSACTIONAL",
        "IETF_QUOTES",
        "SEQUENCE",
        "DEFAULT_ENCRYPTION",
    }
)


@dataclass
class _TableOptions:
    engine: str | None = None
    charset: str | None = None
    collation: str | None = None


def _table_options(p: _Parser, opts: _TableOptions, *, stop: Callable[[], bool]) -> None:
    """Table options (``ENGINE=x DEFAULT CHARSET=y ...``), optionally comma-separated, and PARTITION BY."""
    while not p.at_end() and not stop():
        if p.accept_op(","):
            continue
        tok = p.peek()
        if tok.kind != "word":
            raise p.error("unexpected text in table options")
        word = tok.upper
        if word == "PARTITION" and p.is_kw("BY", k=1):
            while not p.at_end() and not _at_select(p) and not p.is_op(")"):
                if p.is_op("("):
                    p.group()
                else:
                    p.i += 1
            continue
        p.i += 1
        if word == "DEFAULT" and p.peek().kind == "word":
            tok = p.next()
            word = tok.upper
        if word in ("CHARACTER", "CHARSET"):
            if word == "CHARACTER":
                p.expect("SET")
            p.optional_eq()
            opts.charset = _norm_charset(p.name_value())
        elif word == "COLLATE":
            p.optional_eq()
            opts.collation = _norm_collation(p.name_value())
        elif word in ("ENGINE", "TYPE"):
            p.optional_eq()
            opts.engine = p.name_value()
        elif word in ("DATA", "INDEX"):
            p.expect("DIRECTORY")
            p.optional_eq()
            p.string()
        elif word == "TABLESPACE":
            p.optional_eq()
            p.name_value()
            if p.accept("STORAGE"):
                p.next()
        elif word == "STORAGE":
            p.next()
        elif word == "START":
            p.expect("TRANSACTION")
        elif word == "WITH":
            p.expect("SYSTEM")
            p.expect("VERSIONING")
        else:
            if word not in _TABLE_OPTION_NAMES and not p.is_op("="):
                raise p.error("unknown table option", tok)
            p.optional_eq()
            nxt = p.peek()
            if nxt.kind == "op" and nxt.value == "(":
                p.group()
            elif nxt.kind in ("word", "qident", "str", "num", "hex", "bit"):
                p.i += 1
            else:
                raise p.error(f"expected a value for table option {tok.value}")


def _at_select(p: _Parser) -> bool:
    if p.is_kw("WITH") and p.is_kw("SYSTEM", k=1):
        return False
    return p.is_kw(*_SELECT_START) or (p.is_op("(") and p.is_kw("SELECT", "WITH", k=1))


def _table_charset(opts: _TableOptions) -> tuple[str | None, str | None]:
    charset = opts.charset
    if charset is None:
        charset = _charset_of_collation(opts.collation)
    return charset, opts.collation


def _build_table(schema: str, name: str, body: _Body, opts: _TableOptions) -> TableDef:
    charset, collation = _table_charset(opts)
    columns: list[ColumnDef] = []
    primary_key = list(body.primary_key)
    uniques = list(body.uniques)
    for spec in body.specs:
        if norm(spec.column.name) in body.json_checks:
            spec.json_check = True
        col = _finish_column(spec, charset, collation)
        columns.append(col)
        if spec.primary_key:
            primary_key = [col.name]
        if spec.unique:
            uniques.append((None, [col.name]))
    table = TableDef(schema, name, columns, charset=charset, collation=collation, engine=opts.engine)
    seen = set()
    for col in columns:
        key = norm(col.name)
        if key in seen:
            raise DdlApplyError(f"duplicate column name `{col.name}`")
        seen.add(key)
    _set_primary_key(table, primary_key)
    for index_name, cols in uniques:
        _add_unique(table, index_name, cols)
    return table


def _create_table(p: _Parser, default_schema: str, *, or_replace: bool, statement: str) -> list[DdlOp]:
    """After CREATE [OR REPLACE] [TEMPORARY] TABLE."""
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    schema, name = p.table_name(default_schema)
    p.target = (schema, name)
    op: DdlOp
    if p.accept("LIKE") or (p.is_op("(") and p.is_kw("LIKE", k=1)):
        paren = p.accept_op("(")
        if paren:
            p.expect("LIKE")
        like_schema, like_name = p.table_name(default_schema)
        if paren:
            p.expect_op(")")
        p.expect_end()
        op = CreateTableLike(schema, name, like_schema, like_name, if_not_exists)
    else:
        body = _Body()
        has_body = p.is_op("(") and not p.is_kw("SELECT", "WITH", "VALUES", "TABLE", k=1) and not p.is_op("(", k=1)
        if has_body:
            body = _create_body(p)
        opts = _TableOptions()
        _table_options(p, opts, stop=lambda: _at_select(p))
        if not has_body and p.at_end():
            raise p.error("expected a column list, LIKE or SELECT")
        if not p.at_end() or not has_body:
            op = CreateTableSelect(
                schema,
                name,
                statement,
                "CREATE TABLE ... SELECT: the column types are not in the statement; read them with "
                "SHOW CREATE TABLE (the rows arrive as row events)",
                if_not_exists,
            )
        else:
            op = CreateTable(_build_table(schema, name, body, opts), if_not_exists)
    if or_replace:
        return [DropTable([(schema, name)], if_exists=True), op]
    return [op]


def parse_create_table(sql: str, default_schema: str, *, sql_mode: int = 0) -> TableDef:
    """Parse ``CREATE TABLE`` text (``SHOW CREATE TABLE`` output or a statement) into a :class:`TableDef`.

    Unqualified names belong to ``default_schema``. Raises :class:`DdlParseError` for anything else, including
    ``CREATE TABLE ... LIKE`` and ``CREATE TABLE ... SELECT``.
    """
    p = _Parser(sql, sql_mode)
    p.expect("CREATE")
    or_replace = p.accept("OR", "REPLACE")
    p.accept("TEMPORARY")
    p.expect("TABLE")
    try:
        ops = _create_table(p, default_schema, or_replace=or_replace, statement=sql)
    except DdlApplyError as exc:
        raise DdlParseError(str(exc), sql) from exc
    except KeyError as exc:
        raise DdlParseError(f"a key names an unknown column: {exc.args[0]}", sql) from exc
    op = ops[-1]
    if not isinstance(op, CreateTable):
        raise DdlParseError("not a CREATE TABLE with a column list", sql)
    return op.table
