"""The one copy of each small quoting/escaping helper (MySQL identifiers, ClickHouse SQL, TabSeparated fields)."""

from __future__ import annotations

from mybinlog.replication.ddl import quote_identifier
from mybinlog.source._sql import quote_mysql_ident


def test_mysql_identifier_backquotes_doubled_and_nothing_else_escaped() -> None:
    assert quote_mysql_ident("t") == "`t`"
    assert quote_mysql_ident("a`b") == "`a``b`"
    assert quote_mysql_ident("``") == "``````"
    # MySQL has no backslash escapes in identifiers (unlike ClickHouse): a backslash stays one backslash
    assert quote_mysql_ident("a\\b'c\"d é") == "`a\\b'c\"d é`"
    assert quote_identifier is quote_mysql_ident  # the DDL renderer's name for it
