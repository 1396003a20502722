"""SQL text for the MySQL/MariaDB server: the one identifier quoting every layer above uses, and how a SELECT names
a column (no IO, no imports)."""

from __future__ import annotations

__all__ = ["quote_mysql_ident", "select_column"]


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
