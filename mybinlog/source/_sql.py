"""SQL text for the MySQL/MariaDB server: the one identifier quoting every layer above uses (no IO, no imports)."""

from __future__ import annotations

__all__ = ["quote_mysql_ident"]


def quote_mysql_ident(name: str) -> str:
    """A MySQL identifier in backquotes, backquotes doubled: ``quote_mysql_ident("a`b") == "`a``b`"``."""
    return "`" + name.replace("`", "``") + "`"
