"""The value rules that make the initial load / snapshot (a SELECT) and the binlog give one replica (docs/types.md):
VECTOR read as bytes and -0.0 kept; a JSON null document stored as NULL in a nullable column and as the text
``null`` in a NOT NULL one, whichever path it comes on. Live: tests/integration/clickhouse/test_mysql_values.py."""

from __future__ import annotations

import struct

from mybinlog.clickhouse import Capabilities
from mybinlog.clickhouse.types import (
    NULL_FIELD,
    canonical,
    make_encoder,
    make_row_encoder,
    select_expression,
    values_match,
)
from mybinlog.ddl import parse_create_table

NEW = Capabilities.from_version("26.8.1")
OLD = Capabilities.from_version("18.16.1")
TABLE = parse_create_table(
    "CREATE TABLE t (id INT PRIMARY KEY, `v``x` VECTOR(3), w VECTOR(1) NOT NULL, j JSON, k JSON NOT NULL)", "d"
)
ID, V, W, J, K = TABLE.columns


def test_select_expression_casts_vectors_to_binary() -> None:
    assert select_expression(ID) == "`id`"
    assert select_expression(V) == "CAST(`v``x` AS BINARY) AS `v``x`"
    assert select_expression(J) == "`j`"


def test_negative_zero_in_a_vector_is_kept_on_every_path() -> None:
    raw = struct.pack("<3f", 1.0, -0.0, 2.5)  # the SELECT of CAST(v AS BINARY)
    for caps in (NEW, OLD):
        encode = make_encoder(V, caps)
        assert encode([1.0, -0.0, 2.5]) == "[1,-0,2.5]"  # the binlog decoder's list (before: "[1,0,2.5]")
        assert encode(raw) == "[1,-0,2.5]"
        assert encode("[1,-0,2.5]") == "[1,-0,2.5]"  # text (ClickHouse's, or VECTOR_TO_STRING's)
        assert encode(None) == "[]"
        src, ch = canonical(V, caps, side="source"), canonical(V, caps, side="clickhouse")
        assert src(raw) == ch("[1,-0,2.5]") == "[1,-0,2.5]"
        assert ch("[1,0,2.5]") == "[1,0,2.5]"
        assert src(None) is None
        assert ch("[]") is None
        match = values_match(V, caps)
        assert not match("[1,-0,2.5]", "[1,0,2.5]")  # the sign of a zero is a difference (also within tolerance)


def test_a_json_null_document_is_the_same_on_both_paths() -> None:
    for caps in (NEW, OLD):
        binlog_mysql = make_row_encoder(TABLE.columns, caps, parsed_json=True)
        select = make_row_encoder(TABLE.columns, caps, parsed_json=False)  # also MariaDB's binlog (JSON is text)
        # MySQL's binlog: a JSON null document is None, like SQL NULL; a SELECT gives the text `null`
        assert binlog_mysql((1, None, [0.0], None, None)) == select((1, None, b"\0\0\0\0", "null", "null"))
        assert select((1, None, b"\0\0\0\0", "null", "null")).split("\t")[3:] == [NULL_FIELD, "null"]
        assert select((1, None, b"\0\0\0\0", " null\n", b"null")).split("\t")[3:] == [NULL_FIELD, "null"]
        # nested nulls and a JSON string "null" are documents like any other
        assert binlog_mysql((1, None, [0.0], {"a": None}, [None, "null"])).split("\t")[3:] == [
            '{"a": null}',
            '[null, "null"]',
        ]
        assert binlog_mysql((1, None, [0.0], "null", "null")).split("\t")[3:] == ['"null"', '"null"']
        assert select((1, None, b"\0\0\0\0", '"null"', "[null]")).split("\t")[3:] == ['"null"', "[null]"]
        for col in (J, K):
            src, ch = canonical(col, caps, side="source"), canonical(col, caps, side="clickhouse")
            want = None if col is J else "null"
            assert src("null") == want
            assert src(None) == want
            assert ch(None if col is J else "null") == want
