"""A :class:`~._model.TableDef` written back as ``CREATE TABLE`` text (default sql_mode) that parses to an equal
:class:`~._model.TableDef`: checkpoints store the schemas of the replicated tables in this form."""

from __future__ import annotations

from ._lexer import quote_identifier, quote_string
from ._model import _TEXT_TYPES, ColumnDef, TableDef, _type_sql

__all__ = ["render_create_table"]


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
