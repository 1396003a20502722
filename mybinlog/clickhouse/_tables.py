"""ClickHouse tables for replicated MySQL tables: CREATE TABLE per engine and ALTER statements for MySQL DDL.

Pure SQL generation (no IO). Every replicated table has the MySQL columns (types from :mod:`.types`) followed
by the meta columns ``_sign Int8`` and ``_version UInt64`` (and ``_is_deleted UInt8`` for
``replacing_is_deleted``); the sorting key is the MySQL primary key (see :func:`sorting_key` for tables without
one). docs/types.md, "Tables", explains the engines and the fallback key.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import TYPE_CHECKING, Any

from ..errors import TypeMappingError
from . import types as _types
from ._tsv import quote_ident as _quote
from ._tsv import quote_table as _table
from .types import clickhouse_type, column_kind

if TYPE_CHECKING:
    from ..ddl import AlterAction, ColumnDef, TableDef
    from ._capabilities import Capabilities

__all__ = [
    "ENGINES",
    "META_COLUMNS",
    "alive_predicate",
    "alter_sql",
    "clickhouse_type",
    "create_table_sql",
    "meta_columns",
    "sorting_key",
    "truncate_sql",
]

ENGINES = ("replacing", "collapsing", "replacing_is_deleted")
"""``replacing``: ReplacingMergeTree(_version) with _sign (MaterializedMySQL); ``collapsing``:
CollapsingMergeTree(_sign) (needs insert deduplication for replays); ``replacing_is_deleted``:
ReplacingMergeTree(_version, _is_deleted) (ClickHouse 23.2+), whose FINAL drops deleted rows itself."""

META_COLUMNS = ("_sign", "_version", "_is_deleted")

_META_TYPES = {"_sign": "Int8", "_version": "UInt64", "_is_deleted": "UInt8"}
_DEDUP_WINDOW = 1000  # inserts remembered for insert_deduplication_token (collapsing replays)
_FIRST_POSITION = (20, 6)  # ADD/MODIFY COLUMN ... FIRST


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def meta_columns(engine: str) -> tuple[str, ...]:
    """The meta columns of a table of this engine, in table order."""
    _check_engine(engine)
    return META_COLUMNS if engine == "replacing_is_deleted" else META_COLUMNS[:2]


def alive_predicate(engine: str) -> str:
    """The condition that keeps live rows of a table of this engine; readers use ``... FROM t FINAL WHERE <it>``."""
    _check_engine(engine)
    return "_is_deleted = 0" if engine == "replacing_is_deleted" else "_sign = 1"


def _literal(text: str) -> str:
    out = text.replace("\\", "\\\\").replace("'", "\\'")
    for raw, esc in (("\0", "\\0"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
        out = out.replace(raw, esc)
    if any(0xDC80 <= ord(ch) <= 0xDCFF for ch in out):  # raw bytes (surrogate-escaped): \xHH
        out = "".join(f"\\x{ord(ch) - 0xDC00:02X}" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in out)
    return "'" + out + "'"


def truncate_sql(name: str, *, database: str) -> str:
    """``TRUNCATE TABLE`` for a replicated table (every ClickHouse version has it)."""
    return f"TRUNCATE TABLE {_table(database, name)}"


# ---------------------------------------------------------------------------------------------------------------
# sorting key


def sorting_key(table: TableDef) -> tuple[str, list[str]]:
    """The columns that identify a row in ClickHouse, and where they come from.

    ``("primary", pk)``: the primary key. ``("unique", cols)``: no primary key, so the first UNIQUE key whose
    columns are all NOT NULL (what InnoDB itself uses as the clustered key). ``("row", all columns)``: no usable
    key: the whole row is the key, so an UPDATE changes the key (write the before image with ``_sign = -1`` and
    the after image with ``_sign = 1``), and identical rows (possible without a key) are stored once.
    """
    if table.primary_key:
        return "primary", list(table.primary_key)
    for unique in table.unique_keys:
        if unique and all(not table.column(c).nullable for c in unique):
            return "unique", [table.column(c).name for c in unique]
    return "row", [c.name for c in table.columns]


def _key_names(table: TableDef) -> set[str]:
    return {name.lower() for name in sorting_key(table)[1]}


def _order_by(table: TableDef) -> str:
    kind, names = sorting_key(table)
    parts: list[str] = []
    for name in names:
        col = table.column(name)
        quoted = _quote(col.name)
        if kind == "row" and col.nullable and column_kind(col) != "vector":
            # a sorting key cannot hold Nullable columns (18.16 has no allow_nullable_key): NULL sorts apart
            parts.extend((f"isNull({quoted})", f"assumeNotNull({quoted})"))
        else:
            parts.append(quoted)
    return "(" + ", ".join(parts) + ")"


def _column_type(col: ColumnDef, caps: Capabilities, keys: set[str], row_key: bool) -> str:
    return clickhouse_type(col, caps, key=col.name.lower() in keys and not row_key)


# ---------------------------------------------------------------------------------------------------------------
# CREATE TABLE


def _engine_clause(engine: str) -> str:
    if engine == "collapsing":
        return "CollapsingMergeTree(`_sign`)"
    if engine == "replacing_is_deleted":
        return "ReplacingMergeTree(`_version`, `_is_deleted`)"
    return "ReplacingMergeTree(`_version`)"


def create_table_sql(
    table: TableDef, *, database: str, engine: str, caps: Capabilities, if_not_exists: bool = True
) -> str:
    """``CREATE TABLE`` for the ClickHouse copy of ``table`` in ``database``.

    Columns in MySQL order with their mapped types, then the meta columns; ``ORDER BY`` the sorting key
    (:func:`sorting_key`); no partitioning. With insert deduplication (ClickHouse 22.2+) the table keeps the last
    1000 insert tokens (``non_replicated_deduplication_window``) so a replayed batch is dropped by the server.
    Raises :class:`~mybinlog.TypeMappingError` for a column type that cannot be mapped, or a MySQL column named
    like a meta column.
    """
    _check_engine(engine)
    if engine == "replacing_is_deleted" and not caps.replacing_is_deleted:
        raise TypeMappingError(
            f"engine replacing_is_deleted needs ClickHouse 23.2 or later (ReplacingMergeTree(ver, is_deleted)); "
            f"the target is {'.'.join(str(n) for n in caps.version)}: use engine replacing"
        )
    metas = meta_columns(engine)
    for col in table.columns:
        if col.name in META_COLUMNS or col.name.lower() in META_COLUMNS:
            raise TypeMappingError(
                f"table `{table.schema}`.`{table.name}` has a column `{col.name}`, a name mybinlog uses for its own "
                "bookkeeping in ClickHouse; rename the column or exclude the table"
            )
    kind, _ = sorting_key(table)
    keys = _key_names(table)
    lines = [f"    {_quote(c.name)} {_column_type(c, caps, keys, kind == 'row')}" for c in table.columns]
    lines += [f"    {_quote(m)} {_META_TYPES[m]}" for m in metas]
    sql = (
        f"CREATE TABLE {'IF NOT EXISTS ' if if_not_exists else ''}{_table(database, table.name)}\n(\n"
        + ",\n".join(lines)
        + f"\n)\nENGINE = {_engine_clause(engine)}\nORDER BY {_order_by(table)}"
    )
    if caps.insert_deduplication_token:
        sql += f"\nSETTINGS non_replicated_deduplication_window = {_DEDUP_WINDOW}"
    return sql


# ---------------------------------------------------------------------------------------------------------------
# ALTER


def _version(caps: Capabilities) -> tuple[int, ...]:
    return tuple(caps.version[:2])


def _position(first: bool, after: str | None, caps: Capabilities) -> str:
    """Column position: cosmetic in ClickHouse (inserts name their columns); FIRST needs 20.6."""
    if first:
        return " FIRST" if _version(caps) >= _FIRST_POSITION else ""
    if after:
        return f" AFTER {_quote(after)}"
    return ""


def _mutation_settings(caps: Capabilities) -> str:
    return " SETTINGS mutations_sync = 2" if caps.mutations_sync else ""


_CURRENT_TIME = re.compile(
    r"^[\s(]*(current_timestamp|now|localtime|localtimestamp)\s*(\(\s*(\d?)\s*\))?[\s)]*$", re.IGNORECASE
)


def _default_value(col: ColumnDef, caps: Capabilities, statement_time: dt.datetime | None) -> tuple[Any, str | None]:
    """The value MySQL gives existing rows for an added column: (value, None) or (None, reason it is unknown)."""
    if col.generated:
        return None, f"`{col.name}` is a generated column: MySQL computes its value for every existing row"
    if col.auto_increment:
        return None, f"`{col.name}` is AUTO_INCREMENT: MySQL numbers the existing rows"
    kind = col.default_kind
    if kind == "none":
        return (None, None) if col.nullable else (_types.implicit_default(col, caps), None)
    if kind == "null":
        return None, None
    if kind == "literal":
        return col.default_value, None
    text = col.default or ""
    m = _CURRENT_TIME.match(text)
    if m is not None and column_kind(col) == "timestamp" and statement_time is not None:
        when = statement_time if statement_time.tzinfo else statement_time.replace(tzinfo=dt.UTC)
        fsp = int(m.group(3) or 0)
        micro = when.microsecond - when.microsecond % 10 ** (6 - fsp)
        return when.replace(microsecond=micro), None
    return None, (
        f"`{col.name}` has DEFAULT {text}: MySQL evaluated it for every existing row when the column was added, "
        "and that value is unknown here"
        + (" (pass the statement's time to follow CURRENT_TIMESTAMP on TIMESTAMP columns)" if m else "")
    )


def _default_clause(col: ColumnDef, caps: Capabilities, value: Any) -> str | None:
    """`` DEFAULT ...`` giving existing ClickHouse rows ``value``, or None when the type's own default does."""
    field = _types.tsv_field_text(_types.make_encoder(col, caps)(value))
    if field is None:
        return None  # NULL: a Nullable column's own default
    ch_type = clickhouse_type(col, caps)
    zero = _CH_ZERO.get(column_kind(col))
    if zero is not None and not ch_type.startswith("Nullable("):
        canon = _types.canonical(col, caps, side="clickhouse")
        if canon(field) == canon(zero):
            return None
    return f" DEFAULT CAST({_literal(field)} AS {ch_type})"


# ClickHouse's own default of a non-Nullable type, where it is certain (Date32's is 1900-01-01 on new servers,
# so dates and the other types always get an explicit DEFAULT)
_CH_ZERO = {
    "int": "0",
    "bit": "0",
    "year": "0",
    "float32": "0",
    "float64": "0",
    "time": "0",
    "decimal": "0",
    "text": "",
    "binary": "",
    "enum": "",
    "set": "",
    "json": "",
    "geometry": "",
}


_UTF8_CHARSETS = frozenset({None, "utf8mb4", "utf8mb3", "utf8", "ascii"})


def _conversion_problem(old: ColumnDef, new: ColumnDef, caps: Capabilities) -> str | None:
    """Why ClickHouse's conversion of the stored values would differ from MySQL's (None: it does not)."""
    a, b = column_kind(old), column_kind(new)
    old_spec, new_spec = _types.column_spec(old, caps), _types.column_spec(new, caps)
    if a == b:
        if a == "decimal" and new_spec.scale < old_spec.scale:
            return "MySQL rounds to fewer decimal places, ClickHouse truncates"
        if a in ("datetime", "timestamp", "time") and new_spec.fsp < old_spec.fsp:
            return "MySQL rounds to fewer fractional-second digits, ClickHouse truncates"
        if a == "binary" and new_spec.length and new_spec.length != old_spec.length:
            return "MySQL pads BINARY(n) values to the new length"
        return None  # e.g. text in another character set: ClickHouse holds the characters (UTF-8) either way
    allowed = {
        ("int", "bit"),
        ("bit", "int"),
        ("year", "int"),
        ("float32", "float64"),
        ("float64", "float32"),
        ("int", "float32"),
        ("int", "float64"),
        ("bit", "float64"),
        ("int", "decimal"),
        ("int", "text"),
        ("bit", "text"),
        ("year", "text"),
        ("enum", "text"),
        ("set", "text"),
        ("text", "enum"),
        ("enum", "set"),
        ("set", "enum"),
        ("json", "text"),
        ("geometry", "binary"),
        ("binary", "geometry"),
        ("date", "datetime"),
        ("datetime", "date"),
    }
    if (a, b) not in allowed:
        if (a, b) == ("text", "binary"):
            if old.charset in _UTF8_CHARSETS and not new_spec.length:
                return None
            return "MySQL keeps the bytes of the old character set (or pads BINARY(n)); ClickHouse holds UTF-8"
        if (a, b) == ("binary", "text"):
            if new.charset in _UTF8_CHARSETS and not old_spec.length:
                return None
            return "MySQL reads the bytes in the new character set; ClickHouse holds them unchanged"
        return f"MySQL converts {a} values to {b} differently from ClickHouse's CAST"
    if (a, b) in (("date", "datetime"), ("datetime", "date")) and (old_spec.as_string or new_spec.as_string):
        return "the column is stored as text on this ClickHouse version"
    if (a, b) == ("int", "decimal") and new_spec.as_string:
        return "the column is stored as text on this ClickHouse version"
    return None


def alter_sql(
    old: TableDef,
    new: TableDef,
    action: AlterAction,
    *,
    database: str,
    engine: str,
    caps: Capabilities,
    statement_time: dt.datetime | None = None,
) -> list[str] | str:
    """ClickHouse statements that apply one MySQL ALTER action (``old`` -> ``new`` is its effect on the table).

    Returns the statements (``[]`` when ClickHouse has nothing to do), or a ``str``: the reason ClickHouse cannot
    follow (the table must be re-created and copied again), e.g. a change of the sorting key, RENAME COLUMN
    before ClickHouse 20.4, or a type change whose ClickHouse conversion differs from MySQL's.
    ``statement_time``: when the ALTER ran (the QueryEvent's timestamp), used for ``DEFAULT CURRENT_TIMESTAMP``
    of an added TIMESTAMP column (MySQL gives existing rows that time).
    """
    from .. import ddl as _ddl

    _check_engine(engine)
    table = _table(database, old.name)
    if isinstance(action, _ddl.NoOpAction):
        return []
    if isinstance(action, _ddl.UnsupportedAction):
        return action.reason
    if isinstance(action, _ddl.RenameTableAction):
        return [f"RENAME TABLE {table} TO {_table(database, new.name)}"]
    if isinstance(action, _ddl.AddPrimaryKey | _ddl.DropPrimaryKey):
        if sorting_key(old) == sorting_key(new):
            return []
        return _key_change(old, new)
    try:
        if isinstance(action, _ddl.AddColumn):
            return _add_column(old, new, action, table, caps, statement_time)
        if isinstance(action, _ddl.DropColumn):
            return _drop_column(old, new, action.name, table, caps)
        if isinstance(action, _ddl.RenameColumn):
            return _rename_column(old, new, action.old, action.new, table, caps)
        if isinstance(action, _ddl.ModifyColumn):
            return _change_column(old, new, action.column.name, action.column, action, table, caps)
        if isinstance(action, _ddl.ChangeColumn):
            return _change_column(old, new, action.old_name, action.column, action, table, caps)
    except TypeMappingError as exc:
        return str(exc)
    return f"mybinlog does not know the ALTER action {type(action).__name__}"


def _key_change(old: TableDef, new: TableDef) -> str:
    a, b = sorting_key(old), sorting_key(new)
    return (
        f"the ClickHouse sorting key of `{old.name}` would change from {a[0]} key {a[1]} to {b[0]} key {b[1]}; "
        "ClickHouse cannot change a table's key: re-create the table and copy it again"
    )


def _add_column(
    old: TableDef,
    new: TableDef,
    action: Any,
    table: str,
    caps: Capabilities,
    statement_time: dt.datetime | None,
) -> list[str] | str:
    col = new.column(action.column.name)
    kind_old, _ = sorting_key(old)
    if sorting_key(old) != sorting_key(new) and kind_old != "row":
        return _key_change(old, new)
    value, problem = _default_value(col, caps, statement_time)
    if problem:
        return f"cannot add column {problem}; re-create the table and copy it again"
    row_key = kind_old == "row"
    ch_type = clickhouse_type(col, caps, key=False if row_key else col.name.lower() in _key_names(new))
    default = _default_clause(col, caps, value) or ""
    if_not_exists = " IF NOT EXISTS" if caps.alter_if_exists else ""
    sql = (
        f"ALTER TABLE {table} ADD COLUMN{if_not_exists} {_quote(col.name)} {ch_type}{default}"
        f"{_position(action.first, action.after, caps)}"
    )
    if row_key:
        # the whole row is the key: a new column joins it (ClickHouse allows adding new columns to the key, but
        # not columns whose existing rows take a DEFAULT expression)
        if default:
            return (
                f"`{old.name}` has no primary key, so every column is part of its ClickHouse sorting key, and "
                f"ClickHouse cannot add `{col.name}` with a value for the existing rows to a key: re-create the "
                "table and copy it again"
            )
        return [f"{sql}, MODIFY ORDER BY {_order_by(new)}"]
    statements = [sql]
    if default:
        # Parts written before the ADD do not hold the column: ClickHouse computes it from the DEFAULT on every
        # read, and a later MODIFY COLUMN may drop or change that DEFAULT (18.16 drops it). Write it out now.
        statements.append(
            f"ALTER TABLE {table} UPDATE {_quote(col.name)} = {_quote(col.name)} WHERE 1{_mutation_settings(caps)}"
        )
    return statements


def _drop_column(old: TableDef, new: TableDef, name: str, table: str, caps: Capabilities) -> list[str] | str:
    if not old.has_column(name):
        return []
    col = old.column(name)
    if col.name.lower() in _key_names(old) or sorting_key(old) != sorting_key(new):
        kind, _ = sorting_key(old)
        if kind == "row":
            return (
                f"`{old.name}` has no primary key, so every column is part of its ClickHouse sorting key, and "
                f"ClickHouse cannot drop key column `{col.name}`: re-create the table and copy it again"
            )
        return _key_change(old, new)
    if_exists = " IF EXISTS" if caps.alter_if_exists else ""
    return [f"ALTER TABLE {table} DROP COLUMN{if_exists} {_quote(col.name)}"]


def _rename_column(
    old: TableDef, new: TableDef, old_name: str, new_name: str, table: str, caps: Capabilities
) -> list[str] | str:
    if old_name == new_name:
        return []
    if not caps.rename_column:
        return (
            f"ClickHouse {'.'.join(str(n) for n in caps.version)} cannot rename columns (ALTER TABLE ... RENAME "
            f"COLUMN needs 20.4): renaming `{old_name}` to `{new_name}` needs the table re-created and copied again"
        )
    if old_name.lower() in _key_names(old):
        return (
            f"`{old_name}` is part of the ClickHouse sorting key, which ClickHouse cannot rename: re-create the "
            "table and copy it again"
        )
    if_exists = " IF EXISTS" if caps.alter_if_exists else ""
    return [f"ALTER TABLE {table} RENAME COLUMN{if_exists} {_quote(old_name)} TO {_quote(new_name)}"]


def _change_column(
    old: TableDef,
    new: TableDef,
    old_name: str,
    column: ColumnDef,
    action: Any,
    table: str,
    caps: Capabilities,
) -> list[str] | str:
    if not old.has_column(old_name):
        return f"column `{old_name}` of `{old.name}` is unknown"
    before = old.column(old_name)
    after = new.column(column.name)
    statements: list[str] = []
    kind, _ = sorting_key(old)
    is_key = before.name.lower() in _key_names(old)
    if before.name != after.name:
        renamed = _rename_column(old, new, before.name, after.name, table, caps)
        if isinstance(renamed, str):
            return renamed
        statements += renamed
    old_type = clickhouse_type(before, caps, key=is_key and kind != "row")
    new_type = clickhouse_type(after, caps, key=is_key and kind != "row")
    problem = _conversion_problem(before, after, caps)
    if problem is not None and (old_type != new_type or column_kind(before) != column_kind(after)):
        return (
            f"changing `{before.name}` from {before.raw_type or before.type_name} to "
            f"{after.raw_type or after.type_name}: {problem}; re-create the table and copy it again"
        )
    name = _quote(after.name)
    if old_type != new_type:
        if is_key or kind == "row":
            return (
                f"`{before.name}` is part of the ClickHouse sorting key, whose type ClickHouse cannot change "
                f"({old_type} -> {new_type}): re-create the table and copy it again"
            )
        default = ""
        if old_type.startswith("Nullable(") and not new_type.startswith("Nullable("):
            zero = _types.zero_field(dataclasses.replace(after, nullable=False), caps)
            default = f" DEFAULT CAST({_literal(_types.tsv_field_text(zero) or '')} AS {new_type})"
        if_exists = " IF EXISTS" if caps.alter_if_exists else ""
        position = _position(action.first, action.after, caps) if _version(caps) >= _FIRST_POSITION else ""
        statements.append(f"ALTER TABLE {table} MODIFY COLUMN{if_exists} {name} {new_type}{default}{position}")
    elif (action.first or action.after) and _version(caps) >= _FIRST_POSITION:
        statements.append(
            f"ALTER TABLE {table} MODIFY COLUMN {name} {new_type}{_position(action.first, action.after, caps)}"
        )
    if column_kind(after) == "text" and _base_char(after) and not _base_char(before) and column_kind(before) == "text":
        # CHAR values are read without trailing spaces: VARCHAR values that had them change
        statements.append(
            f"ALTER TABLE {table} UPDATE {name} = replaceRegexpOne({name}, ' +$', '') WHERE 1{_mutation_settings(caps)}"
        )
    return statements


def _base_char(col: ColumnDef) -> bool:
    return col.type_name.lower() in ("char", "nchar", "character", "national char")
