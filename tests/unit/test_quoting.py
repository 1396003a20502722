"""The one copy of each small quoting/escaping helper (MySQL identifiers, ClickHouse SQL, TabSeparated fields)."""

from __future__ import annotations

from mybinlog.ddl import quote_identifier
from mybinlog.source._sql import quote_mysql_ident


def test_mysql_identifier_backquotes_doubled_and_nothing_else_escaped() -> None:
    assert quote_mysql_ident("t") == "`t`"
    assert quote_mysql_ident("a`b") == "`a``b`"
    assert quote_mysql_ident("``") == "``````"
    # MySQL has no backslash escapes in identifiers (unlike ClickHouse): a backslash stays one backslash
    assert quote_mysql_ident("a\\b'c\"d é") == "`a\\b'c\"d é`"
    assert quote_identifier is quote_mysql_ident  # the DDL renderer's name for it


def test_clickhouse_identifiers_escape_backslash_and_backquote_in_the_schema_sql() -> None:
    from mybinlog.clickhouse import quote_ident, quote_table
    from mybinlog.clickhouse._tables import truncate_sql

    assert quote_ident("a`b\\c") == "`a\\`b\\\\c`"
    assert quote_table("d`b", "t") == "`d\\`b`.`t`"
    # the ClickHouse schema SQL uses the same quoting (ClickHouse, unlike MySQL, reads backslash escapes)
    assert truncate_sql("t\\`x", database="d`b") == "TRUNCATE TABLE `d\\`b`.`t\\\\\\`x`"


def test_one_tsv_escape_for_the_row_encoders_and_the_targets() -> None:
    from mybinlog.clickhouse import tsv_escape
    from mybinlog.clickhouse.types import _encoders

    assert _encoders._escape is tsv_escape
    assert tsv_escape("plain é ✓") == "plain é ✓"
    assert tsv_escape("\x07\x1b") == "\x07\x1b"  # not printable, but not a TabSeparated escape either
    assert tsv_escape("\\N") == "\\\\N"
    assert tsv_escape("\\t\t\n\r\0\b\f\\") == "\\\\t\\t\\n\\r\\0\\b\\f\\\\"


def test_tsv_field_text_keeps_escaped_bytes_apart_where_tsv_unescape_joins_them() -> None:
    from mybinlog.clickhouse import tsv_unescape
    from mybinlog.clickhouse.types import tsv_field_text

    assert tsv_field_text("\\xC3\\xA9") == "\udcc3\udca9"
    assert tsv_unescape("\\xC3\\xA9") == "é"
    for field in ("a\\tb\\\\c\\Nd\\x41\\q", "\\N", "plain"):
        assert tsv_field_text(field) == tsv_unescape(field)


def test_checkpoint_rows_and_schema_queries_use_the_one_clickhouse_quoting() -> None:
    from mybinlog.clickhouse import _checkpoint, quote_string, tsv_escape, tsv_unescape

    assert _checkpoint._tsv is tsv_escape
    text = 'r\\1\t\n\r\0\b\f{"a":"é"}'
    assert tsv_unescape(tsv_escape(text)) == text
    assert quote_string("d'b\\x") == "'d\\'b\\\\x'"
