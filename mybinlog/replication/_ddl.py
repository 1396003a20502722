"""A pure-Python parser for MySQL / MariaDB DDL: the schema side of replication.

Three uses:

1. :func:`parse_create_table` reads ``SHOW CREATE TABLE`` output (or any ``CREATE TABLE`` statement) into a
   :class:`TableDef`;
2. :func:`parse_ddl` turns one statement from a binlog QUERY event into a list of operations (:data:`DdlOp`):
   create / alter / rename / drop / truncate of tables and databases. Statements that change nothing we track
   (``BEGIN``, ``GRANT``, views, triggers, temporary tables...) give ``[]``;
3. :func:`apply_alter` computes the table after one ALTER action, and :func:`render_create_table` writes a
   :class:`TableDef` back as ``CREATE TABLE`` text that parses to an equal :class:`TableDef` (schemas are
   stored in checkpoints as this text).

Decisions
---------
* Names keep the case they were written with. Column names compare case-insensitively (they are in MySQL),
  through :func:`norm`; table and database names compare exactly (MySQL on Linux with the default
  ``lower_case_table_names=0`` treats them as case-sensitive).
* :func:`parse_ddl` never raises. A statement on a table that cannot be parsed becomes
  ``[Unsupported(statement, reason, schema, name)]`` (schema/name when they were read before the failure);
  the replicator stops that table with the reason. A data-changing statement (``INSERT``, ``UPDATE``,
  ``DELETE``, ``REPLACE``, ``LOAD DATA``) is also :class:`Unsupported`: in a binlog it means the server logged
  that statement instead of row events (``binlog_format`` is STATEMENT or MIXED), so its rows are not there.
  :func:`parse_create_table` raises :class:`DdlParseError` instead.
* Temporary tables are not replicated (MySQL does not log their rows in ROW format): ``CREATE TEMPORARY
  TABLE`` and ``DROP TEMPORARY TABLE`` give ``[]``.
* ``CREATE TABLE ... SELECT`` gives :class:`CreateTableSelect` (the resulting column types are not in the
  statement: read them with ``SHOW CREATE TABLE``; the rows arrive as row events). MySQL in ROW format logs
  such a statement as a plain CREATE TABLE with the columns, so this is rare.
* Versioned comments ``/*!50100 ... */`` and ``/*M!100100 ... */`` are read as code whatever their version;
  other comments are ignored.
* ``CONVERT TO CHARACTER SET`` is a :class:`ConvertCharset` (a :class:`NoOpAction`: ClickHouse stores text
  as UTF-8 bytes whatever the source charset); :func:`apply_alter` updates the charset of the text columns.
  MySQL may also widen a TEXT type to keep its length in characters; that is not modelled (re-read
  ``SHOW CREATE TABLE`` when the exact byte length matters).
* Partition maintenance is a :class:`NoOpAction`, except operations that remove or swap rows without row
  events (``DROP/TRUNCATE/EXCHANGE PARTITION``, ``DISCARD/IMPORT TABLESPACE``, ``CONVERT PARTITION``...),
  which are :class:`UnsupportedAction`.
* MariaDB's JSON is ``LONGTEXT ... CHECK (json_valid(col))`` in ``SHOW CREATE TABLE``; such a column is read
  back as ``type_name='json'``.
* ``sql_mode`` (from the QUERY event) matters for ``ANSI_QUOTES`` ("x" is an identifier),
  ``NO_BACKSLASH_ESCAPES`` and ``REAL_AS_FLOAT``. :func:`render_create_table` always writes text for the
  default mode.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from ..errors import DdlApplyError, DdlParseError

__all__ = [
    "SQL_MODE_ANSI_QUOTES",
    "SQL_MODE_NO_BACKSLASH_ESCAPES",
    "SQL_MODE_REAL_AS_FLOAT",
    "AddColumn",
    "AddIndex",
    "AddPrimaryKey",
    "AlterAction",
    "AlterTable",
    "ChangeColumn",
    "ColumnDef",
    "ConvertCharset",
    "CreateDatabase",
    "CreateTable",
    "CreateTableLike",
    "CreateTableSelect",
    "DdlApplyError",
    "DdlOp",
    "DdlParseError",
    "DropColumn",
    "DropDatabase",
    "DropIndex",
    "DropPrimaryKey",
    "DropTable",
    "ModifyColumn",
    "NoOpAction",
    "RenameColumn",
    "RenameTable",
    "RenameTableAction",
    "SetColumnDefault",
    "SetTableCharset",
    "TableDef",
    "TruncateTable",
    "Unsupported",
    "UnsupportedAction",
    "apply_actions",
    "apply_alter",
    "norm",
    "parse_create_table",
    "parse_ddl",
    "quote_identifier",
    "quote_string",
    "render_create_table",
]

#: ``sql_mode`` bits as carried by QUERY events (``QueryEvent.sql_mode``).
SQL_MODE_REAL_AS_FLOAT = 1
SQL_MODE_ANSI_QUOTES = 4
SQL_MODE_NO_BACKSLASH_ESCAPES = 1 << 20


# --------------------------------------------------------------------------------------------------------------
# errors


# --------------------------------------------------------------------------------------------------------------
# model


def norm(name: str) -> str:
    """Key for case-insensitive comparison of column (and index) names."""
    return name.lower()


_INT_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
_FLOAT_TYPES = frozenset({"float", "double"})
_TIME_TYPES = frozenset({"time", "datetime", "timestamp"})
_TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"})
_BLOB_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_GEOMETRY_TYPES = frozenset(
    {
        "geometry",
        "point",
        "linestring",
        "polygon",
        "multipoint",
        "multilinestring",
        "multipolygon",
        "geometrycollection",
    }
)
_BYTES_TYPES = _BLOB_TYPES | _GEOMETRY_TYPES
_TO_BINARY = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}


@dataclass
class ColumnDef:
    """One column, as MySQL stores it after resolving aliases and defaults.

    ``type_name``: lower-case base type after aliasing (``bool`` -> ``tinyint`` with length 1, ``integer`` ->
    ``int``, ``numeric``/``dec``/``fixed`` -> ``decimal``, ``real``/``double precision``/``float(p>24)`` ->
    ``double``, ``long [varchar]`` -> ``mediumtext``, ``char ... CHARACTER SET binary`` -> ``binary``,
    ``text ... CHARACTER SET binary`` -> ``blob``, ``serial`` -> ``bigint unsigned NOT NULL AUTO_INCREMENT
    UNIQUE``, MariaDB's ``longtext ... CHECK (json_valid(col))`` -> ``json``).
    ``length``: char/varchar/binary/varbinary length (char and binary default 1), bit width (default 1),
    decimal precision (default 10), float/double M of (M,D), vector dimensions, an integer's display width when
    written (``int(11)``; ``None`` otherwise), ``2`` for YEAR(2), text/blob (n) when written.
    ``scale``: decimal scale (default 0) or float/double D. ``fsp``: fractional digits of time/datetime/timestamp
    (0 when absent; ``None`` for other types). ``values``: ENUM/SET members, unescaped.
    ``nullable`` is False for NOT NULL and for primary-key columns. ``charset``/``collation`` are set for the
    text types (char varchar *text enum set) only: the column's own, else the one implied by its COLLATE, else
    the table default; ``None`` when unknown; ``utf8`` is written ``utf8mb3``. ``binary``: values are bytes
    (binary varbinary *blob and the geometry types). ``default``: the DEFAULT clause as canonical SQL text
    (``"NULL"``, ``"'abc'"``, ``"-1"``, ``"current_timestamp(6)"``, ``"(1 + 2)"``), ``None`` without a DEFAULT
    clause (see :attr:`default_kind` / :attr:`default_value`). ``raw_type``: the type as SHOW CREATE TABLE
    prints it, lower case, without charset (``"decimal(65,30) unsigned"``, ``"enum('a','b')"``).
    ``generated``: ``'virtual'`` or ``'stored'`` (STORED/PERSISTENT) for generated columns, with
    ``generation_expr``; ``on_update``: the ON UPDATE expression; ``invisible``; ``srid`` (SRID /
    REF_SYSTEM_ID).

    ``raw_type`` and ``binary`` are derived from the other fields when the object is created (pass
    ``raw_type=""`` to :func:`dataclasses.replace` after changing the type).
    """

    name: str
    type_name: str
    unsigned: bool = False
    zerofill: bool = False
    length: int | None = None
    scale: int | None = None
    fsp: int | None = None
    values: tuple[str, ...] = ()
    nullable: bool = True
    charset: str | None = None
    collation: str | None = None
    binary: bool = False
    default: str | None = None
    auto_increment: bool = False
    comment: str | None = None
    raw_type: str = ""
    generated: str | None = None
    generation_expr: str | None = None
    on_update: str | None = None
    invisible: bool = False
    srid: int | None = None

    def __post_init__(self) -> None:
        self.binary = self.type_name in _BYTES_TYPES
        if not self.raw_type:
            self.raw_type = _type_sql(self)

    @property
    def default_kind(self) -> str:
        """``'none'`` (no DEFAULT clause), ``'null'``, ``'literal'`` or ``'expression'``."""
        return _default_info(self.default)[0]

    @property
    def default_value(self) -> str | None:
        """The value of a literal DEFAULT: a string unescaped, a number as written (``'-1.5'``), a bit literal
        ``b'101'`` as a decimal integer (``'5'``), TRUE/FALSE as ``'1'``/``'0'``; ``None`` otherwise."""
        return _default_info(self.default)[1]


@dataclass
class TableDef:
    """One table: columns in order, primary key (``[]`` when none) and unique keys (by name)."""

    schema: str
    name: str
    columns: list[ColumnDef]
    primary_key: list[str] = field(default_factory=list)
    unique_keys: list[list[str]] = field(default_factory=list)
    unique_key_names: list[str] = field(default_factory=list)
    charset: str | None = None
    collation: str | None = None
    engine: str | None = None

    def column(self, name: str) -> ColumnDef:
        """The column called ``name`` (case-insensitive); KeyError when there is none."""
        key = norm(name)
        for col in self.columns:
            if norm(col.name) == key:
                return col
        raise KeyError(f"table `{self.schema}`.`{self.name}` has no column `{name}`")

    def has_column(self, name: str) -> bool:
        key = norm(name)
        return any(norm(col.name) == key for col in self.columns)

    def column_names(self) -> list[str]:
        return [col.name for col in self.columns]

    def apply(self, action: AlterAction) -> TableDef:
        """The table after ``action`` (a new object; see :func:`apply_alter`)."""
        return apply_alter(self, action)


# --- operations ---


@dataclass
class CreateTable:
    table: TableDef
    if_not_exists: bool = False


@dataclass
class CreateTableLike:
    schema: str
    name: str
    like_schema: str
    like_name: str
    if_not_exists: bool = False


@dataclass
class CreateTableSelect:
    """``CREATE TABLE ... [AS] SELECT``: read the new table's schema with SHOW CREATE TABLE (rows come as row
    events)."""

    schema: str
    name: str
    statement: str
    reason: str
    if_not_exists: bool = False


@dataclass
class AlterTable:
    schema: str
    name: str
    actions: list[AlterAction]


@dataclass
class RenameTable:
    pairs: list[tuple[tuple[str, str], tuple[str, str]]]


@dataclass
class DropTable:
    tables: list[tuple[str, str]]
    if_exists: bool = False


@dataclass
class TruncateTable:
    schema: str
    name: str


@dataclass
class CreateDatabase:
    name: str
    if_not_exists: bool = False


@dataclass
class DropDatabase:
    name: str
    if_exists: bool = False


@dataclass
class Unsupported:
    """A statement that affects a table (or its data) and cannot be followed; ``reason`` says why."""

    statement: str
    reason: str
    schema: str | None = None
    name: str | None = None


# --- alter actions ---


@dataclass
class AddColumn:
    column: ColumnDef
    first: bool = False
    after: str | None = None
    if_not_exists: bool = False


@dataclass
class DropColumn:
    name: str
    if_exists: bool = False


@dataclass
class ModifyColumn:
    column: ColumnDef
    first: bool = False
    after: str | None = None
    if_exists: bool = False


@dataclass
class ChangeColumn:
    old_name: str
    column: ColumnDef
    first: bool = False
    after: str | None = None
    if_exists: bool = False


@dataclass
class RenameColumn:
    old: str
    new: str


@dataclass
class AddPrimaryKey:
    columns: list[str]


@dataclass
class DropPrimaryKey:
    pass


@dataclass
class RenameTableAction:
    new_schema: str
    new_name: str


@dataclass
class NoOpAction:
    """A change with no effect on the replicated data (index, constraint, option, partition maintenance)."""

    text: str


@dataclass
class AddIndex(NoOpAction):
    index_name: str | None = None
    columns: list[str] = field(default_factory=list)
    unique: bool = False


@dataclass
class DropIndex(NoOpAction):
    index_name: str = ""


@dataclass
class SetColumnDefault(NoOpAction):
    column: str = ""
    default: str | None = None


@dataclass
class SetTableCharset(NoOpAction):
    charset: str | None = None
    collation: str | None = None


@dataclass
class ConvertCharset(NoOpAction):
    charset: str | None = None
    collation: str | None = None


@dataclass
class UnsupportedAction:
    text: str
    reason: str


AlterAction = (
    AddColumn
    | DropColumn
    | ModifyColumn
    | ChangeColumn
    | RenameColumn
    | AddPrimaryKey
    | DropPrimaryKey
    | RenameTableAction
    | NoOpAction
    | UnsupportedAction
)
DdlOp = (
    CreateTable
    | CreateTableLike
    | CreateTableSelect
    | AlterTable
    | RenameTable
    | DropTable
    | TruncateTable
    | CreateDatabase
    | DropDatabase
    | Unsupported
)


# --------------------------------------------------------------------------------------------------------------
# tokenizer


@dataclass(slots=True)
class _Tok:
    kind: str  # word qident str num hex bit op eof
    value: str  # word: as written; qident: the name; str: unescaped; others: the source text
    start: int
    end: int
    upper: str = ""


_WORD_RE = re.compile(r"[0-9A-Za-z_$\u0080-\U0010ffff]+")
_NUM_RE = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEXNUM_RE = re.compile(r"0x[0-9A-Fa-f]+|0b[01]+")
_OPS3 = ("<=>", "->>")
_OPS2 = ("<=", ">=", "<>", "!=", ":=", "||", "&&", "<<", ">>", "->")
_ESCAPES = {
    "0": "\0",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    "%": "\\%",
    "_": "\\_",
}
_DASH_COMMENT_FOLLOW = frozenset(" \t\n\r\f\v")


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_$" or ord(ch) >= 0x80


def _read_quoted(sql: str, i: int, quote: str, backslash: bool) -> tuple[str, int]:
    """Read a quoted string/identifier starting at ``sql[i] == quote``; return (value, index after it)."""
    n = len(sql)
    out: list[str] = []
    j = i + 1
    while True:
        if j >= n:
            raise DdlParseError(f"unterminated {quote}-quoted text", sql, i)
        ch = sql[j]
        if ch == quote:
            if j + 1 < n and sql[j + 1] == quote:
                out.append(quote)
                j += 2
                continue
            return "".join(out), j + 1
        if ch == "\\" and backslash and j + 1 < n:
            nxt = sql[j + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            j += 2
            continue
        # copy a run of plain characters at once
        k = j + 1
        while k < n and sql[k] != quote and not (backslash and sql[k] == "\\"):
            k += 1
        out.append(sql[j:k])
        j = k


def _tokenize(sql: str, *, ansi_quotes: bool = False, backslash: bool = True) -> list[_Tok]:
    toks: list[_Tok] = []
    append = toks.append
    i = 0
    n = len(sql)
    versioned = 0
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
            continue
        if c == "#":
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c == "-" and sql.startswith("--", i) and (i + 2 >= n or sql[i + 2] in _DASH_COMMENT_FOLLOW):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c == "/" and sql.startswith("/*", i):
            if sql.startswith("/*!", i) or sql.startswith("/*M!", i):
                j = i + (3 if sql[i + 2] == "!" else 4)
                k = j
                while k < n and k - j < 6 and sql[k].isdigit():
                    k += 1
                i = k
                versioned += 1
                continue
            j = sql.find("*/", i + 2)
            if j < 0:
                raise DdlParseError("unterminated comment", sql, i)
            i = j + 2
            continue
        if c == "*" and versioned and sql.startswith("*/", i):
            versioned -= 1
            i += 2
            continue
        if c == "'" or (c == '"' and not ansi_quotes):
            value, j = _read_quoted(sql, i, c, backslash)
            append(_Tok("str", value, i, j))
            i = j
            continue
        if c == "`" or (c == '"' and ansi_quotes):
            value, j = _read_quoted(sql, i, c, False)
            append(_Tok("qident", value, i, j))
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isdigit() and not (toks and _joinable(toks[-1], i))):
            m = _HEXNUM_RE.match(sql, i)
            if m is not None and (m.end() >= n or not _is_word_char(sql[m.end()])):
                append(_Tok("hex" if m.group()[1] in "xX" else "bit", m.group(), i, m.end()))
                i = m.end()
                continue
            m = _NUM_RE.match(sql, i)
            if m is not None and (m.end() >= n or not _is_word_char(sql[m.end()])):
                append(_Tok("num", m.group(), i, m.end()))
                i = m.end()
                continue
        if _is_word_char(c):
            m = _WORD_RE.match(sql, i)
            assert m is not None
            word = m.group()
            j = m.end()
            if j < n and sql[j] == "'" and word.lower() in ("x", "b", "n"):
                value, k = _read_quoted(sql, j, "'", backslash)
                kind = {"x": "hex", "b": "bit", "n": "str"}[word.lower()]
                append(_Tok(kind, value if kind == "str" else sql[i:k], i, k))
                i = k
                continue
            append(_Tok("word", word, i, j, word.upper()))
            i = j
            continue
        op = c
        if sql.startswith(_OPS3, i):
            op = sql[i : i + 3]
        elif sql.startswith(_OPS2, i):
            op = sql[i : i + 2]
        append(_Tok("op", op, i, i + len(op)))
        i += len(op)
    while toks and toks[-1].kind == "op" and toks[-1].value == ";":
        toks.pop()
    return toks


def _joinable(prev: _Tok, pos: int) -> bool:
    """``a.5`` after an identifier is a qualified name, not a number."""
    return prev.end == pos and prev.kind in ("word", "qident")


# --------------------------------------------------------------------------------------------------------------
# rendering helpers


def quote_identifier(name: str) -> str:
    """```name``` with backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"


_STRING_ESCAPES = {"\\": "\\\\", "'": "''", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z"}
_STRING_ESCAPE_RE = re.compile(r"[\\'\0\n\r\x1a]")


def quote_string(value: str) -> str:
    """A MySQL string literal (default sql_mode) for ``value``."""
    return "'" + _STRING_ESCAPE_RE.sub(lambda m: _STRING_ESCAPES[m.group()], value) + "'"


def _tok_text(tok: _Tok) -> str:
    if tok.kind == "qident":
        return quote_identifier(tok.value)
    if tok.kind == "str":
        return quote_string(tok.value)
    return tok.value


def _render_tokens(toks: list[_Tok]) -> str:
    """Canonical text of an expression: tokens in canonical form, one space where the source had a gap."""
    parts: list[str] = []
    prev: _Tok | None = None
    for tok in toks:
        if prev is not None and tok.start > prev.end:
            parts.append(" ")
        parts.append(_tok_text(tok))
        prev = tok
    return "".join(parts)


def _default_info(default: str | None) -> tuple[str, str | None]:
    if default is None:
        return "none", None
    try:
        toks = _tokenize(default)
    except DdlParseError:
        return "expression", None
    while len(toks) >= 3 and toks[0].value == "(" and toks[-1].value == ")" and toks[0].kind == "op":
        toks = toks[1:-1]
    if len(toks) == 1:
        tok = toks[0]
        if tok.kind == "word" and tok.upper == "NULL":
            return "null", None
        if tok.kind == "word" and tok.upper in ("TRUE", "FALSE"):
            return "literal", "1" if tok.upper == "TRUE" else "0"
        if tok.kind in ("str", "num"):
            return "literal", tok.value
        if tok.kind == "bit":
            digits = tok.value[2:] if tok.value[:2] in ("0b", "0B") else tok.value[2:-1]
            if digits.strip("01"):
                return "expression", None
            return "literal", str(int(digits or "0", 2))
        return "expression", None
    if len(toks) == 2:
        first, second = toks
        if first.kind == "op" and first.value in ("-", "+") and second.kind == "num":
            return "literal", ("-" if first.value == "-" else "") + second.value
        if (
            first.kind == "word"
            and second.kind == "str"
            and (first.value.startswith("_") or first.upper in ("DATE", "TIME", "TIMESTAMP"))
        ):
            return "literal", second.value
    if toks and all(t.kind == "str" for t in toks):
        return "literal", "".join(t.value for t in toks)
    return "expression", None


def _type_sql(col: ColumnDef) -> str:
    """The column type as SHOW CREATE TABLE prints it (lower case, without charset/collation)."""
    t = col.type_name
    args = ""
    if t in ("enum", "set"):
        args = "(" + ",".join(quote_string(v) for v in col.values) + ")"
    elif t == "decimal":
        args = f"({col.length if col.length is not None else 10},{col.scale or 0})"
    elif t in _FLOAT_TYPES:
        if col.length is not None:
            args = f"({col.length},{col.scale or 0})"
    elif t in _TIME_TYPES:
        if col.fsp:
            args = f"({col.fsp})"
    elif col.length is not None:
        args = f"({col.length})"
    text = t + args
    if col.unsigned:
        text += " unsigned"
    if col.zerofill:
        text += " zerofill"
    return text


# --------------------------------------------------------------------------------------------------------------
# parser core

_EOF = "eof"


class _Parser:
    def __init__(self, sql: str, sql_mode: int = 0) -> None:
        self.sql = sql
        self.toks = _tokenize(
            sql,
            ansi_quotes=bool(sql_mode & SQL_MODE_ANSI_QUOTES),
            backslash=not sql_mode & SQL_MODE_NO_BACKSLASH_ESCAPES,
        )
        self.toks.append(_Tok(_EOF, "", len(sql), len(sql)))
        self.i = 0
        self.real_as_float = bool(sql_mode & SQL_MODE_REAL_AS_FLOAT)
        self.target: tuple[str, str] | None = None

    # -- token access --

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != _EOF:
            self.i += 1
        return tok

    def at_end(self) -> bool:
        return self.toks[self.i].kind == _EOF

    def error(self, message: str, tok: _Tok | None = None) -> DdlParseError:
        tok = tok if tok is not None else self.peek()
        near = "end of statement" if tok.kind == _EOF else repr(self.sql[tok.start : tok.start + 40])
        return DdlParseError(f"{message} (near {near})", self.sql, tok.start)

    def is_kw(self, *words: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "word" and tok.upper in words

    def is_op(self, op: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "op" and tok.value == op

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence ``words`` if it is next (all or nothing)."""
        for k, word in enumerate(words):
            tok = self.peek(k)
            if tok.kind != "word" or tok.upper != word:
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def accept_op(self, op: str) -> bool:
        if self.is_op(op):
            self.i += 1
            return True
        return False

    def expect_op(self, op: str) -> None:
        if not self.accept_op(op):
            raise self.error(f"expected {op!r}")

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error("unexpected text")

    # -- names and values --

    def ident(self) -> str:
        tok = self.peek()
        if tok.kind in ("word", "qident"):
            self.i += 1
            return tok.value
        raise self.error("expected a name")

    def table_name(self, default_schema: str) -> tuple[str, str]:
        first = self.ident()
        if self.accept_op("."):
            return first, self.ident()
        return default_schema, first

    def name_value(self) -> str:
        """A charset/collation/engine name: word, quoted name or string."""
        tok = self.peek()
        if tok.kind in ("word", "qident", "str"):
            self.i += 1
            return tok.value
        raise self.error("expected a name")

    def integer(self) -> int:
        tok = self.peek()
        if tok.kind == "num" and tok.value.isdigit():
            self.i += 1
            return int(tok.value)
        raise self.error("expected an integer")

    def string(self) -> str:
        tok = self.peek()
        if tok.kind != "str":
            raise self.error("expected a quoted string")
        parts = []
        while self.peek().kind == "str":
            parts.append(self.next().value)
        return "".join(parts)

    def group(self) -> list[_Tok]:
        """Consume ``( ... )`` (balanced) and return the tokens inside."""
        start = self.i
        self.expect_op("(")
        depth = 1
        while depth:
            tok = self.next()
            if tok.kind == _EOF:
                raise self.error("unbalanced parentheses")
            if tok.kind == "op":
                if tok.value == "(":
                    depth += 1
                elif tok.value == ")":
                    depth -= 1
        return self.toks[start + 1 : self.i - 1]

    def skip_until(self, stop: Callable[[_Tok], bool]) -> list[_Tok]:
        """Consume tokens at depth 0 until ``stop(token)`` (not consumed) or the end."""
        start = self.i
        while True:
            tok = self.peek()
            if tok.kind == _EOF or stop(tok):
                break
            if tok.kind == "op" and tok.value == "(":
                self.group()
            elif tok.kind == "op" and tok.value == ")":
                break
            else:
                self.i += 1
        return self.toks[start : self.i]

    def skip_to_comma(self) -> list[_Tok]:
        return self.skip_until(lambda t: t.kind == "op" and t.value == ",")

    def text_since(self, start: int) -> str:
        return _render_tokens(self.toks[start : self.i])

    def optional_eq(self) -> None:
        self.accept_op("=")


# --------------------------------------------------------------------------------------------------------------
# column definitions

_TYPE_ALIASES = {
    "TINYINT": "tinyint",
    "INT1": "tinyint",
    "SMALLINT": "smallint",
    "INT2": "smallint",
    "MEDIUMINT": "mediumint",
    "MIDDLEINT": "mediumint",
    "INT3": "mediumint",
    "INT": "int",
    "INTEGER": "int",
    "INT4": "int",
    "BIGINT": "bigint",
    "INT8": "bigint",
    "DECIMAL": "decimal",
    "DEC": "decimal",
    "NUMERIC": "decimal",
    "FIXED": "decimal",
    "FLOAT": "float",
    "FLOAT4": "float",
    "DOUBLE": "double",
    "FLOAT8": "double",
    "REAL": "double",
    "BIT": "bit",
    "DATE": "date",
    "TIME": "time",
    "DATETIME": "datetime",
    "TIMESTAMP": "timestamp",
    "YEAR": "year",
    "CHAR": "char",
    "CHARACTER": "char",
    "VARCHAR": "varchar",
    "VARCHARACTER": "varchar",
    "BINARY": "binary",
    "VARBINARY": "varbinary",
    "TINYTEXT": "tinytext",
    "TEXT": "text",
    "MEDIUMTEXT": "mediumtext",
    "LONGTEXT": "longtext",
    "TINYBLOB": "tinyblob",
    "BLOB": "blob",
    "MEDIUMBLOB": "mediumblob",
    "LONGBLOB": "longblob",
    "ENUM": "enum",
    "SET": "set",
    "JSON": "json",
    "GEOMETRY": "geometry",
    "POINT": "point",
    "LINESTRING": "linestring",
    "POLYGON": "polygon",
    "MULTIPOINT": "multipoint",
    "MULTILINESTRING": "multilinestring",
    "MULTIPOLYGON": "multipolygon",
    "GEOMETRYCOLLECTION": "geometrycollection",
    "GEOMCOLLECTION": "geometrycollection",
    "UUID": "uuid",
    "INET4": "inet4",
    "INET6": "inet6",
    "VECTOR": "vector",
    "BOOL": "bool",
    "BOOLEAN": "bool",
    "SERIAL": "serial",
    "NCHAR": "nchar",
    "NVARCHAR": "nvarchar",
    "NATIONAL": "national",
    "LONG": "long",
}

_KNOWN_CHARSETS = frozenset(
    {
        "armscii8",
        "ascii",
        "big5",
        "binary",
        "cp1250",
        "cp1251",
        "cp1256",
        "cp1257",
        "cp850",
        "cp852",
        "cp866",
        "cp932",
        "dec8",
        "eucjpms",
        "euckr",
        "gb18030",
        "gb2312",
        "gbk",
        "geostd8",
        "greek",
        "hebrew",
        "hp8",
        "keybcs2",
        "koi8r",
        "koi8u",
        "latin1",
        "latin2",
        "latin5",
        "latin7",
        "macce",
        "macroman",
        "sjis",
        "swe7",
        "tis620",
        "ucs2",
        "ujis",
        "utf16",
        "utf16le",
        "utf32",
        "utf8",
        "utf8mb3",
        "utf8mb4",
    }
)


def _norm_charset(name: str | None) -> str | None:
    if name is None:
        return None
    low = name.lower()
    return "utf8mb3" if low == "utf8" else low


def _norm_collation(name: str | None) -> str | None:
    if name is None:
        return None
    low = name.lower()
    return "utf8mb3" + low[4:] if low.startswith("utf8_") else low


def _charset_of_collation(collation: str | None) -> str | None:
    if collation is None:
        return None
    if collation == "binary":
        return "binary"
    best = None
    for cs in _KNOWN_CHARSETS:
        if collation.startswith(cs + "_") and (best is None or len(cs) > len(best)):
            best = cs
    return _norm_charset(best)


@dataclass
class _ColSpec:
    """A parsed column definition plus what it implies for the table."""

    column: ColumnDef
    primary_key: bool = False
    unique: bool = False
    binary_collation: bool = False  # the BINARY attribute: the charset's _bin collation
    json_check: bool = False
    explicit_charset: bool = False


def _parse_type(p: _Parser, col: ColumnDef, spec: _ColSpec) -> None:
    tok = p.next()
    if tok.kind != "word" or tok.upper not in _TYPE_ALIASES:
        raise p.error("unknown column type", tok)
    word = tok.upper
    base = _TYPE_ALIASES[word]
    national = False
    if base == "double" and word == "DOUBLE":
        p.accept("PRECISION")
    elif base == "double" and word == "REAL" and p.real_as_float:
        base = "float"
    elif base == "char" and p.accept("VARYING"):
        base = "varchar"
    elif base == "national":
        national = True
        t2 = p.next()
        if t2.kind == "word" and t2.upper in ("CHAR", "CHARACTER"):
            base = "varchar" if p.accept("VARYING") else "char"
        elif t2.kind == "word" and t2.upper in ("VARCHAR", "VARCHARACTER"):
            base = "varchar"
        else:
            raise p.error("expected CHAR or VARCHAR after NATIONAL", t2)
    elif base == "nchar":
        national = True
        base = "varchar" if p.accept("VARYING") or p.accept("VARCHAR") or p.accept("VARCHARACTER") else "char"
    elif base == "nvarchar":
        national = True
        base = "varchar"
    elif base == "long":
        if p.accept("VARBINARY"):
            base = "mediumblob"
        else:
            p.accept("VARCHAR") or p.accept("VARCHARACTER")
            base = "mediumtext"
    if national:
        col.charset = "utf8mb3"
        spec.explicit_charset = True
    args: list[int] = []
    if p.is_op("("):
        if base in ("enum", "set"):
            p.expect_op("(")
            values: list[str] = []
            while True:
                values.append(p.string())
                if p.accept_op(","):
                    continue
                p.expect_op(")")
                break
            col.values = tuple(values)
        else:
            p.expect_op("(")
            while True:
                args.append(p.integer())
                if p.accept_op(","):
                    continue
                p.expect_op(")")
                break
    elif base in ("enum", "set"):
        raise p.error(f"{base.upper()} needs a list of members")
    if len(args) > 2 or (len(args) == 2 and base not in ("decimal", "float", "double")):
        raise p.error(f"too many arguments for {base.upper()}")
    if base == "bool":
        base, args = "tinyint", [1]
    elif base == "serial":
        base = "bigint"
        col.unsigned = True
        col.nullable = False
        col.auto_increment = True
        spec.unique = True
    if base in _INT_TYPES:
        col.length = args[0] if args else None
    elif base == "decimal":
        col.length = args[0] if args else 10
        col.scale = args[1] if len(args) > 1 else 0
    elif base in _FLOAT_TYPES:
        if len(args) == 2:
            col.length, col.scale = args
        elif len(args) == 1 and base == "float":
            if args[0] > 24:
                base = "double"
        elif args:
            raise p.error("DOUBLE takes (M,D)")
    elif base in _TIME_TYPES:
        col.fsp = args[0] if args else 0
    elif base in ("char", "binary", "bit"):
        col.length = args[0] if args else 1
    elif base in ("varchar", "varbinary", "vector"):
        if not args:
            raise p.error(f"{base.upper()} needs a length")
        col.length = args[0]
    elif base == "year":
        col.length = 2 if args and args[0] == 2 else None
    elif args:
        if base in _TEXT_TYPES or base in _BLOB_TYPES:
            col.length = args[0]
        else:
            raise p.error(f"{base.upper()} takes no length")
    col.type_name = base


_REF_ACTIONS = ("RESTRICT", "CASCADE", "SET", "NO")


def _skip_references(p: _Parser) -> None:
    """After REFERENCES: tbl [(cols)] [MATCH x] [ON DELETE|UPDATE action]..."""
    p.table_name("")
    if p.is_op("("):
        p.group()
    while True:
        if p.accept("MATCH"):
            p.next()
        elif p.is_kw("ON") and p.is_kw("DELETE", "UPDATE", k=1):
            p.i += 2
            if p.accept("SET"):
                p.next()
            elif p.accept("NO"):
                p.expect("ACTION")
            else:
                p.next()
        else:
            return


def _parse_default_expr(p: _Parser) -> list[_Tok]:
    """One DEFAULT / ON UPDATE expression: a parenthesized expression, a literal or a function call."""
    start = p.i
    _parse_primary(p)
    while p.peek().kind == "op" and p.peek().value in ("+", "-", "*", "/", "%", "||"):
        p.next()
        _parse_primary(p)
    return p.toks[start : p.i]


def _parse_primary(p: _Parser) -> None:
    if p.is_op("("):
        p.group()
        return
    while p.peek().kind == "op" and p.peek().value in ("-", "+", "~", "!"):
        p.next()
    tok = p.next()
    if tok.kind == "str":
        while p.peek().kind == "str":
            p.next()
    elif tok.kind in ("num", "hex", "bit"):
        pass
    elif tok.kind == "word":
        nxt = p.peek()
        if tok.upper in ("NEXT", "PREVIOUS") and p.is_kw("VALUE") and p.is_kw("FOR", k=1):
            p.i += 2
            p.table_name("")
        elif nxt.kind == "str" and (tok.value.startswith("_") or tok.upper in ("DATE", "TIME", "TIMESTAMP")):
            while p.peek().kind == "str":
                p.next()
        elif nxt.kind == "op" and nxt.value == "(":
            p.group()
        elif nxt.kind == "op" and nxt.value == "." and p.peek(1).kind in ("word", "qident"):
            p.i += 2  # NEXT VALUE FOR db.seq / qualified names
    else:
        raise p.error("expected an expression", tok)


def _parse_column(p: _Parser, name: str, *, in_alter: bool = False) -> _ColSpec:
    col = ColumnDef(name=name, type_name="int")
    spec = _ColSpec(col)
    _parse_type(p, col, spec)
    collation: str | None = None
    while True:
        tok = p.peek()
        if tok.kind == _EOF or (tok.kind == "op" and tok.value in (",", ")")):
            break
        if tok.kind != "word":
            raise p.error("unexpected text in a column definition")
        word = tok.upper
        if in_alter and word in ("FIRST", "AFTER"):
            break
        p.i += 1
        if word == "NOT":
            if p.accept("NULL"):
                col.nullable = False
            else:
                raise p.error("expected NULL after NOT")
        elif word == "NULL":
            col.nullable = True
        elif word == "UNSIGNED":
            col.unsigned = True
        elif word == "SIGNED":
            col.unsigned = False
        elif word == "ZEROFILL":
            col.zerofill = True
            col.unsigned = True
        elif word == "BINARY":
            spec.binary_collation = True
        elif word == "BYTE":
            col.charset = "binary"
            spec.explicit_charset = True
        elif word == "ASCII":
            col.charset = "latin1"
            spec.explicit_charset = True
        elif word == "UNICODE":
            col.charset = "ucs2"
            spec.explicit_charset = True
        elif word in ("CHARACTER", "CHARSET"):
            if word == "CHARACTER":
                p.expect("SET")
            p.optional_eq()
            col.charset = _norm_charset(p.name_value())
            spec.explicit_charset = True
        elif word == "COLLATE":
            p.optional_eq()
            collation = _norm_collation(p.name_value())
        elif word == "DEFAULT":
            col.default = _render_tokens(_parse_default_expr(p))
        elif word == "ON":
            p.expect("UPDATE")
            col.on_update = _render_tokens(_parse_default_expr(p))
        elif word == "AUTO_INCREMENT":
            col.auto_increment = True
        elif word == "UNIQUE":
            p.accept("KEY") or p.accept("INDEX")
            spec.unique = True
        elif word == "PRIMARY":
            p.expect("KEY")
            spec.primary_key = True
        elif word == "KEY":
            spec.primary_key = True
        elif word == "COMMENT":
            p.optional_eq()
            col.comment = p.string()
        elif word in ("GENERATED", "AS"):
            if word == "GENERATED":
                p.expect("ALWAYS")
                p.expect("AS")
            if p.accept("ROW"):
                if not (p.accept("START") or p.accept("END")):
                    raise p.error("expected START or END")
                continue
            col.generation_expr = _render_tokens(p.group())
            col.generated = "virtual"
        elif word == "VIRTUAL":
            col.generated = "virtual"
        elif word in ("STORED", "PERSISTENT"):
            col.generated = "stored"
        elif word == "INVISIBLE":
            col.invisible = True
        elif word == "VISIBLE":
            col.invisible = False
        elif word == "SERIAL":
            p.expect("DEFAULT")
            p.expect("VALUE")
            col.nullable = False
            col.auto_increment = True
            spec.unique = True
        elif word in ("COLUMN_FORMAT", "STORAGE"):
            p.next()
        elif word == "SRID":
            col.srid = p.integer()
        elif word == "REF_SYSTEM_ID":
            p.optional_eq()
            col.srid = p.integer()
        elif word in ("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
            p.optional_eq()
            p.string()
        elif word == "COMPRESSED":
            if p.accept_op("="):
                p.next()
        elif word in ("WITH", "WITHOUT"):
            p.expect("SYSTEM")
            p.expect("VERSIONING")
        elif word == "CONSTRAINT":
            if not p.is_kw("CHECK"):
                p.ident()
            p.expect("CHECK")
            _column_check(p, col, spec)
        elif word == "CHECK":
            _column_check(p, col, spec)
        elif word == "REFERENCES":
            _skip_references(p)
        else:
            raise p.error("unknown column attribute", tok)
    if collation is not None:
        col.collation = collation
        if col.charset is None:
            col.charset = _charset_of_collation(collation)
            spec.explicit_charset = col.charset is not None
    return spec


def _column_check(p: _Parser, col: ColumnDef, spec: _ColSpec) -> None:
    inner = p.group()
    if _is_json_check(inner, col.name):
        spec.json_check = True
    p.accept("NOT")
    p.accept("ENFORCED")


def _is_json_check(inner: list[_Tok], column: str) -> bool:
    return (
        len(inner) == 4
        and inner[0].kind == "word"
        and inner[0].upper == "JSON_VALID"
        and inner[1].value == "("
        and inner[2].kind in ("word", "qident")
        and norm(inner[2].value) == norm(column)
        and inner[3].value == ")"
    )


def _finish_column(spec: _ColSpec, table_charset: str | None, table_collation: str | None) -> ColumnDef:
    """Resolve charset/collation (table defaults, BINARY attribute, CHARACTER SET binary) and JSON."""
    col = spec.column
    if spec.json_check and col.type_name == "longtext":
        col.type_name = "json"
    if col.type_name in _TEXT_TYPES:
        if col.charset is None and table_charset is not None:
            col.charset = table_charset
            if col.collation is None and _charset_of_collation(table_collation) == table_charset:
                col.collation = table_collation
        if spec.binary_collation and col.charset is not None and col.collation is None:
            col.collation = "binary" if col.charset == "binary" else f"{col.charset}_bin"
        if col.charset == "binary":
            col.charset = None
            col.collation = None
            col.type_name = _TO_BINARY.get(col.type_name, col.type_name)
    else:
        col.charset = None
        col.collation = None
    col.binary = col.type_name in _BYTES_TYPES
    col.raw_type = _type_sql(col)
    return col


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


def _set_primary_key(table: TableDef, columns: list[str]) -> None:
    names = []
    for name in columns:
        col = table.column(name)
        col.nullable = False
        names.append(col.name)
    table.primary_key = names


def _add_unique(table: TableDef, index_name: str | None, columns: list[str]) -> None:
    names = [table.column(c).name for c in columns]
    if not names:
        return
    taken = {norm(n) for n in table.unique_key_names} | {"primary"}
    if index_name is None:
        index_name = names[0]
        suffix = 2
        while norm(index_name) in taken:
            index_name = f"{names[0]}_{suffix}"
            suffix += 1
    elif norm(index_name) in taken:
        return  # MySQL refuses a duplicate key name; ADD UNIQUE IF NOT EXISTS on an existing key does nothing
    table.unique_keys.append(names)
    table.unique_key_names.append(index_name)


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


# --------------------------------------------------------------------------------------------------------------
# ALTER TABLE


def _position(p: _Parser) -> tuple[bool, str | None]:
    if p.accept("FIRST"):
        return True, None
    if p.accept("AFTER"):
        return False, p.ident()
    return False, None


def _column_actions(p: _Parser, spec: _ColSpec, text: str) -> list[AlterAction]:
    """Extra actions implied by inline PRIMARY KEY / UNIQUE of an added or changed column."""
    extra: list[AlterAction] = []
    if spec.primary_key:
        extra.append(AddPrimaryKey([spec.column.name]))
    if spec.unique:
        extra.append(AddIndex(text, None, [spec.column.name], True))
    return extra


def _finish_alter_column(spec: _ColSpec) -> ColumnDef:
    return _finish_column(spec, None, None)


_PARTITION_UNSUPPORTED = {
    "DROP": "DROP PARTITION deletes the partition's rows without row events",
    "TRUNCATE": "TRUNCATE PARTITION deletes the partition's rows without row events",
    "EXCHANGE": "EXCHANGE PARTITION swaps rows with another table without row events",
    "DISCARD": "DISCARD PARTITION TABLESPACE removes the partition's rows without row events",
    "IMPORT": "IMPORT PARTITION TABLESPACE loads rows without row events",
    "CONVERT": "CONVERT PARTITION / CONVERT TABLE moves rows between tables without row events",
}


def _list_continues(p: _Parser, *followers: str) -> bool:
    """At ``, name`` where ``name`` continues a list of names (it is followed by a comma, the end or one of
    ``followers``) rather than starting the next ALTER action."""
    if not p.is_op(",") or p.peek(1).kind not in ("word", "qident"):
        return False
    after = p.peek(2)
    return after.kind == _EOF or (after.kind == "op" and after.value == ",") or p.is_kw(*followers, k=2)


def _partition_tail(p: _Parser) -> None:
    """After ``... PARTITION``: ``[IF EXISTS] {names | ALL | n}`` and what follows the names."""
    p.accept("IF", "EXISTS")
    if p.peek().kind == "num":
        p.next()
        return
    p.ident()
    while _list_continues(p, "TABLESPACE", "INTO"):
        p.i += 2
    p.accept("TABLESPACE")
    if p.accept("INTO"):
        p.group()
    if p.accept("WITH", "TABLE") or p.accept("TO", "TABLE"):
        p.table_name("")
        p.accept("WITH", "VALIDATION") or p.accept("WITHOUT", "VALIDATION")


def _alter_action(p: _Parser, default_schema: str) -> list[AlterAction]:
    start = p.i
    tok = p.peek()
    if tok.kind != "word":
        raise p.error("expected an ALTER TABLE action")
    word = tok.upper

    def text() -> str:
        return p.text_since(start)

    if word == "ADD":
        p.i += 1
        return _alter_add(p, start)
    if word == "DROP":
        p.i += 1
        return _alter_drop(p, start)
    if word in ("MODIFY", "CHANGE"):
        p.i += 1
        p.accept("COLUMN")
        if_exists = p.accept("IF", "EXISTS")
        old = p.ident() if word == "CHANGE" else None
        new = p.ident()
        spec = _parse_column(p, new, in_alter=True)
        first, after = _position(p)
        col = _finish_alter_column(spec)
        action: AlterAction
        if old is None:
            action = ModifyColumn(col, first, after, if_exists)
        else:
            action = ChangeColumn(old, col, first, after, if_exists)
        return [action, *_column_actions(p, spec, text())]
    if word == "ALTER":
        p.i += 1
        if p.accept("INDEX") or p.accept("KEY") or p.accept("CHECK") or p.accept("CONSTRAINT"):
            p.skip_to_comma()
            return [NoOpAction(text())]
        p.accept("COLUMN")
        p.accept("IF", "EXISTS")
        name = p.ident()
        if p.accept("SET", "DEFAULT"):
            default = _render_tokens(_parse_default_expr(p))
            return [SetColumnDefault(text(), name, default)]
        if p.accept("DROP", "DEFAULT"):
            return [SetColumnDefault(text(), name, None)]
        if p.accept("SET", "VISIBLE") or p.accept("SET", "INVISIBLE"):
            return [NoOpAction(text())]
        raise p.error("expected SET DEFAULT, DROP DEFAULT or SET [IN]VISIBLE")
    if word == "RENAME":
        p.i += 1
        if p.accept("COLUMN"):
            p.accept("IF", "EXISTS")
            old = p.ident()
            p.expect("TO")
            return [RenameColumn(old, p.ident())]
        if p.accept("INDEX") or p.accept("KEY"):
            p.accept("IF", "EXISTS")
            p.ident()
            p.expect("TO")
            p.ident()
            return [NoOpAction(text())]
        p.accept("TO") or p.accept("AS")
        new_schema, new_name = p.table_name(default_schema)
        return [RenameTableAction(new_schema, new_name)]
    if word == "CONVERT":
        p.i += 1
        if p.accept("TO"):
            if not (p.accept("CHARACTER", "SET") or p.accept("CHARSET")):
                raise p.error("expected CHARACTER SET")
            p.optional_eq()
            charset = None if p.accept("DEFAULT") else _norm_charset(p.name_value())
            collation = None
            if p.accept("COLLATE"):
                p.optional_eq()
                collation = _norm_collation(p.name_value())
            if charset is None:
                charset = _charset_of_collation(collation)
            return [ConvertCharset(text(), charset, collation)]
        if p.accept("PARTITION"):
            _partition_tail(p)
        else:
            p.skip_to_comma()
        return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED["CONVERT"])]
    if word in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE") and (
        word != "DEFAULT" or p.is_kw("CHARACTER", "CHARSET", "COLLATE", k=1)
    ):
        opts = _TableOptions()
        _table_options(p, opts, stop=lambda: p.is_op(",") or not p.is_kw("DEFAULT", "CHARACTER", "CHARSET", "COLLATE"))
        charset, collation = _table_charset(opts)
        return [SetTableCharset(text(), charset, collation)]
    if word in ("DISCARD", "IMPORT"):
        p.i += 1
        if p.accept("PARTITION"):
            _partition_tail(p)
            return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED[word])]
        p.expect("TABLESPACE")
        return [UnsupportedAction(text(), f"{word} TABLESPACE replaces the table's rows without row events")]
    if word in ("TRUNCATE", "EXCHANGE") and p.is_kw("PARTITION", k=1):
        p.i += 2
        _partition_tail(p)
        return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED[word])]
    if word in ("COALESCE", "REORGANIZE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR") and p.is_kw(
        "PARTITION", k=1
    ):
        p.i += 2
        _partition_tail(p)
        return [NoOpAction(text())]
    if word in ("REMOVE", "UPGRADE") and p.is_kw("PARTITIONING", k=1):
        p.i += 2
        return [NoOpAction(text())]
    if word == "PARTITION" and p.is_kw("BY", k=1):
        p.skip_until(lambda t: False)
        return [NoOpAction(text())]
    if word == "ORDER" and p.is_kw("BY", k=1):
        p.i += 2
        while True:
            p.table_name("")
            p.accept("ASC") or p.accept("DESC")
            if not (_list_continues(p) or (p.is_op(",") and p.is_kw("ASC", "DESC", k=2))):
                break
            p.i += 1
        return [NoOpAction(text())]
    if word in ("ALGORITHM", "LOCK"):
        p.i += 1
        p.optional_eq()
        p.next()
        return [NoOpAction(text())]
    if word in ("FORCE", "SECONDARY_LOAD", "SECONDARY_UNLOAD"):
        p.i += 1
        return [NoOpAction(text())]
    if word in ("ENABLE", "DISABLE") and p.is_kw("KEYS", k=1):
        p.i += 2
        return [NoOpAction(text())]
    if word in ("WITH", "WITHOUT") and p.is_kw("VALIDATION", k=1):
        p.i += 2
        return [NoOpAction(text())]
    # anything else: table options (ENGINE=, ROW_FORMAT=, COMMENT=, AUTO_INCREMENT= ...)
    opts = _TableOptions()
    _table_options(p, opts, stop=lambda: p.is_op(","))
    if opts.charset is not None or opts.collation is not None:
        charset, collation = _table_charset(opts)
        return [SetTableCharset(text(), charset, collation)]
    return [NoOpAction(text())]


def _alter_add(p: _Parser, start: int) -> list[AlterAction]:
    def text() -> str:
        return p.text_since(start)

    tok = p.peek()
    word = tok.upper if tok.kind == "word" else ""
    if word == "CONSTRAINT" or word in ("PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN"):
        body = _Body()
        _create_definition(p, body)
        if body.primary_key:
            return [AddPrimaryKey(body.primary_key)]
        if body.uniques:
            name, cols = body.uniques[0]
            return [AddIndex(text(), name, cols, True)]
        if word in ("INDEX", "KEY"):
            return [AddIndex(text(), None, [], False)]
        return [NoOpAction(text())]
    if (word == "VECTOR" and p.is_kw("INDEX", "KEY", k=1)) or (word == "CHECK" and p.is_op("(", k=1)):
        body = _Body()
        _create_definition(p, body)
        return [NoOpAction(text())]
    if word == "PERIOD" and p.is_kw("FOR", k=1):
        p.skip_to_comma()
        return [NoOpAction(text())]
    if word == "PARTITION":
        p.skip_to_comma()
        return [NoOpAction(text())]
    if word == "SYSTEM" and p.is_kw("VERSIONING", k=1):
        p.i += 2
        return [UnsupportedAction(text(), "ADD SYSTEM VERSIONING adds hidden row_start/row_end columns")]
    p.accept("COLUMN")
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    if p.is_op("("):
        p.i += 1
        actions: list[AlterAction] = []
        while True:
            body = _Body()
            _create_definition(p, body)
            for spec in body.specs:
                col = _finish_alter_column(spec)
                actions.append(AddColumn(col, if_not_exists=if_not_exists))
                actions.extend(_column_actions(p, spec, text()))
            if body.primary_key:
                actions.append(AddPrimaryKey(body.primary_key))
            for name, cols in body.uniques:
                actions.append(AddIndex(text(), name, cols, True))
            if p.accept_op(","):
                continue
            p.expect_op(")")
            return actions
    name = p.ident()
    spec = _parse_column(p, name, in_alter=True)
    first, after = _position(p)
    col = _finish_alter_column(spec)
    return [AddColumn(col, first, after, if_not_exists), *_column_actions(p, spec, text())]


def _alter_drop(p: _Parser, start: int) -> list[AlterAction]:
    def text() -> str:
        return p.text_since(start)

    if p.accept("PRIMARY", "KEY"):
        return [DropPrimaryKey()]
    if p.accept("INDEX") or p.accept("KEY") or p.accept("CONSTRAINT"):
        p.accept("IF", "EXISTS")
        name = p.ident()
        if norm(name) == "primary":
            return [DropPrimaryKey()]
        return [DropIndex(text(), name)]
    if p.accept("FOREIGN", "KEY") or p.accept("CHECK"):
        p.accept("IF", "EXISTS")
        p.ident()
        return [NoOpAction(text())]
    if p.is_kw("PERIOD") and p.is_kw("FOR", k=1):
        p.skip_to_comma()
        return [NoOpAction(text())]
    if p.accept("PARTITION"):
        _partition_tail(p)
        return [UnsupportedAction(text(), _PARTITION_UNSUPPORTED["DROP"])]
    if p.is_kw("SYSTEM") and p.is_kw("VERSIONING", k=1):
        p.i += 2
        return [UnsupportedAction(text(), "DROP SYSTEM VERSIONING deletes history rows and hidden columns")]
    p.accept("COLUMN")
    if_exists = p.accept("IF", "EXISTS")
    name = p.ident()
    p.accept("RESTRICT") or p.accept("CASCADE")
    return [DropColumn(name, if_exists)]


def _alter_table(p: _Parser, default_schema: str) -> AlterTable:
    """After ALTER [ONLINE] [IGNORE] TABLE."""
    p.accept("IF", "EXISTS")
    schema, name = p.table_name(default_schema)
    p.target = (schema, name)
    if p.accept("WAIT"):
        p.integer()
    p.accept("NOWAIT")
    actions: list[AlterAction] = []
    while not p.at_end():
        if p.accept_op(","):
            continue
        actions.extend(_alter_action(p, default_schema))
    return AlterTable(schema, name, actions)


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


# --------------------------------------------------------------------------------------------------------------
# applying ALTER actions


def _index_of(table: TableDef, name: str) -> int:
    key = norm(name)
    for i, col in enumerate(table.columns):
        if norm(col.name) == key:
            return i
    raise DdlApplyError(f"table `{table.schema}`.`{table.name}` has no column `{name}`")


def _inherit_charset(table: TableDef, col: ColumnDef) -> ColumnDef:
    if col.type_name in _TEXT_TYPES and col.charset is None and table.charset is not None:
        collation = col.collation
        if (
            collation is None
            and table.collation is not None
            and _charset_of_collation(table.collation) == (table.charset)
        ):
            collation = table.collation
        return replace(col, charset=table.charset, collation=collation)
    return col


def _place(columns: list[ColumnDef], col: ColumnDef, first: bool, after: str | None, table: TableDef) -> None:
    if first:
        columns.insert(0, col)
    elif after is not None:
        key = norm(after)
        for i, other in enumerate(columns):
            if norm(other.name) == key:
                columns.insert(i + 1, col)
                return
        raise DdlApplyError(f"table `{table.schema}`.`{table.name}` has no column `{after}` (AFTER)")
    else:
        columns.append(col)


def _copy(table: TableDef) -> TableDef:
    return replace(
        table,
        columns=list(table.columns),
        primary_key=list(table.primary_key),
        unique_keys=[list(k) for k in table.unique_keys],
        unique_key_names=list(table.unique_key_names),
    )


def _rename_in_keys(table: TableDef, old: str, new: str) -> None:
    key = norm(old)
    table.primary_key = [new if norm(c) == key else c for c in table.primary_key]
    table.unique_keys = [[new if norm(c) == key else c for c in cols] for cols in table.unique_keys]


def _drop_from_keys(table: TableDef, name: str) -> None:
    key = norm(name)
    table.primary_key = [c for c in table.primary_key if norm(c) != key]
    keys, names = [], []
    for cols, index_name in zip(table.unique_keys, table.unique_key_names, strict=True):
        cols = [c for c in cols if norm(c) != key]
        if cols:
            keys.append(cols)
            names.append(index_name)
    table.unique_keys, table.unique_key_names = keys, names


def _redefine(table: TableDef, old_name: str, col: ColumnDef, first: bool, after: str | None) -> TableDef:
    new = _copy(table)
    i = _index_of(new, old_name)
    col = _inherit_charset(new, col)
    if norm(col.name) != norm(old_name) and new.has_column(col.name):
        raise DdlApplyError(f"table `{table.schema}`.`{table.name}` already has a column `{col.name}`")
    if any(norm(c) == norm(old_name) for c in new.primary_key):
        col = replace(col, nullable=False)
    del new.columns[i]
    if first or after is not None:
        _place(new.columns, col, first, after, new)
    else:
        new.columns.insert(i, col)
    _rename_in_keys(new, old_name, col.name)
    return new


def _convert_column(col: ColumnDef, charset: str | None, collation: str | None) -> ColumnDef:
    if col.type_name not in _TEXT_TYPES or col.type_name == "json":
        return col
    if charset == "binary":
        return replace(
            col, type_name=_TO_BINARY.get(col.type_name, col.type_name), charset=None, collation=None, raw_type=""
        )
    return replace(col, charset=charset, collation=collation)


def apply_alter(table: TableDef, action: AlterAction) -> TableDef:
    """The table after one ALTER action, as a new :class:`TableDef` (``table`` is not changed).

    Raises :class:`DdlApplyError` when the action does not fit (unknown column, a name already taken) unless
    its IF [NOT] EXISTS says to skip it, and for :class:`UnsupportedAction`. Text columns added or redefined
    without a charset get the table's default charset (as MySQL does).
    """
    where = f"`{table.schema}`.`{table.name}`"
    if isinstance(action, AddColumn):
        if table.has_column(action.column.name):
            if action.if_not_exists:
                return table
            raise DdlApplyError(f"table {where} already has a column `{action.column.name}`")
        new = _copy(table)
        _place(new.columns, _inherit_charset(new, action.column), action.first, action.after, new)
        return new
    if isinstance(action, DropColumn):
        if not table.has_column(action.name):
            if action.if_exists:
                return table
            raise DdlApplyError(f"table {where} has no column `{action.name}`")
        new = _copy(table)
        del new.columns[_index_of(new, action.name)]
        _drop_from_keys(new, action.name)
        return new
    if isinstance(action, ModifyColumn):
        if not table.has_column(action.column.name):
            if action.if_exists:
                return table
            raise DdlApplyError(f"table {where} has no column `{action.column.name}`")
        old = table.column(action.column.name)
        return _redefine(table, old.name, replace(action.column, name=old.name), action.first, action.after)
    if isinstance(action, ChangeColumn):
        if not table.has_column(action.old_name):
            if action.if_exists:
                return table
            raise DdlApplyError(f"table {where} has no column `{action.old_name}`")
        return _redefine(table, action.old_name, action.column, action.first, action.after)
    if isinstance(action, RenameColumn):
        if not table.has_column(action.old):
            raise DdlApplyError(f"table {where} has no column `{action.old}`")
        old = table.column(action.old)
        return _redefine(table, old.name, replace(old, name=action.new), False, None)
    if isinstance(action, AddPrimaryKey):
        new = _copy(table)
        new.columns = [replace(c) for c in new.columns]
        try:
            _set_primary_key(new, action.columns)
        except KeyError as exc:
            raise DdlApplyError(f"PRIMARY KEY of {where} names an unknown column: {exc.args[0]}") from exc
        return new
    if isinstance(action, DropPrimaryKey):
        new = _copy(table)
        new.primary_key = []
        return new
    if isinstance(action, RenameTableAction):
        new = _copy(table)
        new.schema, new.name = action.new_schema, action.new_name
        return new
    if isinstance(action, UnsupportedAction):
        raise DdlApplyError(f"cannot apply to {where}: {action.text}: {action.reason}")
    if isinstance(action, AddIndex):
        if not action.unique:
            return table
        new = _copy(table)
        try:
            _add_unique(new, action.index_name, action.columns)
        except KeyError as exc:
            raise DdlApplyError(f"UNIQUE key of {where} names an unknown column: {exc.args[0]}") from exc
        return new
    if isinstance(action, DropIndex):
        new = _copy(table)
        key = norm(action.index_name)
        keep = [i for i, n in enumerate(new.unique_key_names) if norm(n) != key]
        new.unique_keys = [new.unique_keys[i] for i in keep]
        new.unique_key_names = [new.unique_key_names[i] for i in keep]
        return new
    if isinstance(action, SetColumnDefault):
        new = _copy(table)
        i = _index_of(new, action.column)
        new.columns[i] = replace(new.columns[i], default=action.default)
        return new
    if isinstance(action, SetTableCharset):
        new = _copy(table)
        new.charset, new.collation = action.charset, action.collation
        return new
    if isinstance(action, ConvertCharset):
        new = _copy(table)
        new.charset, new.collation = action.charset, action.collation
        new.columns = [_convert_column(c, action.charset, action.collation) for c in new.columns]
        return new
    return table


def apply_actions(table: TableDef, actions: Iterable[AlterAction]) -> TableDef:
    """:func:`apply_alter` for each action in order."""
    for action in actions:
        table = apply_alter(table, action)
    return table


# --------------------------------------------------------------------------------------------------------------
# rendering


def _column_sql(col: ColumnDef) -> str:
    parts = [quote_identifier(col.name), _type_sql(col)]
    if col.charset is not None and col.type_name in _TEXT_TYPES:
        parts.append(f"CHARACTER SET {col.charset}")
    if col.collation is not None and col.type_name in _TEXT_TYPES:
        parts.append(f"COLLATE {col.collation}")
    if col.srid is not None:
        parts.append(f"SRID {col.srid}")
    if col.generation_expr is not None:
        kind = "STORED" if col.generated == "stored" else "VIRTUAL"
        parts.append(f"GENERATED ALWAYS AS ({col.generation_expr}) {kind}")
    parts.append("NULL" if col.nullable else "NOT NULL")
    if col.default is not None:
        parts.append(f"DEFAULT {col.default}")
    if col.on_update is not None:
        parts.append(f"ON UPDATE {col.on_update}")
    if col.auto_increment:
        parts.append("AUTO_INCREMENT")
    if col.invisible:
        parts.append("INVISIBLE")
    if col.comment is not None:
        parts.append(f"COMMENT {quote_string(col.comment)}")
    return " ".join(parts)


def render_create_table(table: TableDef, *, qualified: bool = True) -> str:
    """``CREATE TABLE`` text for ``table`` (default sql_mode). Parsing it with ``table.schema`` as the default
    schema gives a :class:`TableDef` equal to ``table``."""
    name = quote_identifier(table.name)
    if qualified and table.schema:
        name = f"{quote_identifier(table.schema)}.{name}"
    lines = [_column_sql(col) for col in table.columns]
    if table.primary_key:
        lines.append("PRIMARY KEY (" + ",".join(quote_identifier(c) for c in table.primary_key) + ")")
    for index_name, cols in zip(table.unique_key_names, table.unique_keys, strict=True):
        lines.append(f"UNIQUE KEY {quote_identifier(index_name)} (" + ",".join(quote_identifier(c) for c in cols) + ")")
    options = []
    if table.engine is not None:
        options.append(f"ENGINE={table.engine}")
    if table.charset is not None:
        options.append(f"DEFAULT CHARSET={table.charset}")
    if table.collation is not None:
        options.append(f"COLLATE={table.collation}")
    text = f"CREATE TABLE {name} (\n  " + ",\n  ".join(lines) + "\n)"
    if options:
        text += " " + " ".join(options)
    return text
