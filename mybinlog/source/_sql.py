"""SQL text for the MySQL/MariaDB server: the one identifier quoting every layer above uses, how a SELECT names
a column, and the SELECT of a table's rows (no IO, no imports of mybinlog)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["quote_mysql_ident", "select_column", "select_where"]


def quote_mysql_ident(name: str) -> str:
    """A MySQL identifier in backquotes, backquotes doubled: ``quote_mysql_ident("a`b") == "`a``b`"``."""
    return "`" + name.replace("`", "``") + "`"


def select_column(name: str, type_name: str) -> str:
    """What a ``SELECT`` of the source names for a column of MySQL type ``type_name``, so that asyncmy/pymysql can
    read the value: the quoted name, and for VECTOR ``CAST(`v` AS BINARY) AS `v```. Drivers decode a VECTOR field
    (type 242) as ASCII text and fail on its float bytes (UnicodeDecodeError); cast to binary it arrives as the
    little-endian float32 bytes (exact, -0.0 kept). The initial load, the snapshot and verify use it."""
    quoted = quote_mysql_ident(name)
    if type_name.strip().lower() == "vector":
        return f"CAST({quoted} AS BINARY) AS {quoted}"
    return quoted


def select_where(table: str, columns: Sequence[str], where: str = "1") -> str:
    """``SELECT columns FROM table WHERE where``: ``table`` quoted (```db`.`t```), ``columns`` as
    :func:`select_column` names them, ``where`` an SQL condition (how a snapshot task reads its chunk)."""
    return f"SELECT {', '.join(columns)} FROM {table} WHERE {where}"
