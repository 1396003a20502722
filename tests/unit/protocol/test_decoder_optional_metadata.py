"""The TABLE_MAP optional metadata's per-class lists land on the right columns, counted as each server counts.

A SIGNEDNESS bit, or a DEFAULT_CHARSET / COLUMN_CHARSET entry, belongs to the n-th column *of its class*: a column
the decoder counts differently from the server shifts the signedness or charset of every later column. The classes,
as the servers write them (read off mysql-server's ``has_signedess_information_type`` and ``is_character_type``,
MariaDB's ``Binlog_type_info``, and checked on live MySQL 9.7 and the corpus's MySQL 9.0 ``vector.binlog``), are
spelled out here independently of the decoder's own tables:

* signedness, both servers: the integers, YEAR, FLOAT, DOUBLE, DECIMAL, NEWDECIMAL (not BIT);
* charsets, MySQL: CHAR, VARCHAR, BLOB/TEXT and VECTOR (not GEOMETRY, not JSON);
* charsets, MariaDB: CHAR, VARCHAR, BLOB/TEXT and GEOMETRY (MariaDB has no VECTOR type code);
* ENUM and SET: their own ENUM_AND_SET_* lists, on both.

The property test builds TABLE_MAP bodies over random column lists the way each server does (both charset formats,
as the server chooses by size) and checks each column's ``unsigned`` and ``charset``; the example tests decode the
rows of the issue's tables with both implementations.
"""

from __future__ import annotations

import struct
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mybinlog.protocol._accel import speedups
from mybinlog.protocol._constants import ColumnType, EventType
from tests.builders import encode_packed_int, event, mariadb_decoder, mysql_decoder, optional, rows_body, table_map_body

CT = ColumnType

# (type code in the table map, metadata in table_map_body's convention, class) per kind of column; class is
# "num" (a signedness bit), "text" (a charset entry on both servers), "enumset" (the ENUM_AND_SET lists),
# "vector" / "geometry" (a charset entry on MySQL / MariaDB only), or "" (in no list)
_KINDS: dict[str, tuple[int, int, str]] = {
    "tinyint": (CT.TINY, 0, "num"),
    "smallint": (CT.SHORT, 0, "num"),
    "mediumint": (CT.INT24, 0, "num"),
    "int": (CT.LONG, 0, "num"),
    "bigint": (CT.LONGLONG, 0, "num"),
    "year": (CT.YEAR, 0, "num"),
    "float": (CT.FLOAT, 4, "num"),
    "double": (CT.DOUBLE, 8, "num"),
    "decimal": (CT.NEWDECIMAL, 10 << 8 | 2, "num"),
    "bit": (CT.BIT, 3, ""),
    "varchar": (CT.VARCHAR, 40, "text"),
    "char": (CT.STRING, 0xFE << 8 | 12, "text"),
    "text": (CT.BLOB, 2, "text"),
    "enum": (CT.STRING, 0xF7 << 8 | 1, "enumset"),
    "set": (CT.STRING, 0xF8 << 8 | 1, "enumset"),
    "json": (CT.JSON, 4, ""),
    "geometry": (CT.GEOMETRY, 4, "geometry"),
    "vector": (CT.VECTOR, 4, "vector"),
    "datetime": (CT.DATETIME2, 0, ""),
    "date": (CT.DATE, 0, ""),
    "timestamp": (CT.TIMESTAMP2, 0, ""),
    "time": (CT.TIME2, 0, ""),
}
_COLLATIONS = [8, 11, 33, 45, 51, 63, 255, 309]  # latin1, ascii, utf8mb3, utf8mb4 (3), cp1251, binary


def _counts_charset(cls: str, flavor: str) -> bool:
    return cls == "text" or (cls == "vector" and flavor == "mysql") or (cls == "geometry" and flavor == "mariadb")


def _bits(flags: list[bool]) -> bytes:
    """MSB-first bits, as the server writes SIGNEDNESS (one bit per counted column)."""
    out = bytearray((len(flags) + 7) // 8)
    for k, flag in enumerate(flags):
        if flag:
            out[k // 8] |= 0x80 >> (k % 8)
    return bytes(out)


def _charset_field(collations: list[int], default_kind: int, column_kind: int, use_default: bool) -> bytes:
    """The server's DEFAULT_CHARSET (the most used collation, then (index, collation) of the others) or
    COLUMN_CHARSET (every collation) field; both servers choose the shorter one, the test draws either."""
    if not collations:
        return b""
    if use_default:
        default = Counter(collations).most_common(1)[0][0]
        payload = encode_packed_int(default)
        for index, coll in enumerate(collations):
            if coll != default:
                payload += encode_packed_int(index) + encode_packed_int(coll)
        return optional(default_kind, payload)
    return optional(column_kind, b"".join(encode_packed_int(c) for c in collations))


@st.composite
def _tables(draw: st.DrawFn) -> tuple[str, list[tuple[str, bool, int]], bool, bool]:
    flavor = draw(st.sampled_from(["mysql", "mariadb"]))
    kinds = [k for k in _KINDS if not (flavor == "mariadb" and k == "vector")]
    cols = draw(
        st.lists(
            st.tuples(st.sampled_from(kinds), st.booleans(), st.sampled_from(_COLLATIONS)), min_size=1, max_size=40
        )
    )
    return flavor, cols, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=400, deadline=None)
@given(_tables())
def test_signedness_and_charsets_land_on_the_columns_the_server_counted(
    table: tuple[str, list[tuple[str, bool, int]], bool, bool],
) -> None:
    flavor, cols, default_format, enum_default_format = table
    types = [_KINDS[k][0] for k, _, _ in cols]
    metas = [_KINDS[k][1] for k, _, _ in cols]
    classes = [_KINDS[k][2] for k, _, _ in cols]
    signed_flags = [unsigned for (_, unsigned, _), cls in zip(cols, classes, strict=True) if cls == "num"]
    text = [coll for (_, _, coll), cls in zip(cols, classes, strict=True) if _counts_charset(cls, flavor)]
    enumset = [coll for (_, _, coll), cls in zip(cols, classes, strict=True) if cls == "enumset"]
    body = table_map_body(7, "db", "t", types, metas)
    if signed_flags:
        body += optional(1, _bits(signed_flags))
    body += _charset_field(text, 2, 3, default_format)
    body += _charset_field(enumset, 10, 11, enum_default_format)
    dec = mysql_decoder() if flavor == "mysql" else mariadb_decoder()
    columns = dec.decode(event(EventType.TABLE_MAP_EVENT, body, crc=True)).table.columns  # type: ignore[attr-defined]
    for (kind, unsigned, coll), cls, col in zip(cols, classes, columns, strict=True):
        where = f"{kind} at {col.index} in {[k for k, _, _ in cols]} ({flavor})"
        if cls == "num" and kind != "year":  # YEAR takes a bit but has no sign to apply
            assert col.unsigned is unsigned, where
        elif cls != "num":
            assert col.unsigned is None, where
        if _counts_charset(cls, flavor) or cls == "enumset":
            assert col.charset == coll, where
        else:
            assert col.charset is None, where


# ----------------------------------------------------------------------------------------------------------
# the tables, with rows, on both implementations
# ----------------------------------------------------------------------------------------------------------


@pytest.fixture(params=["compiled", "python"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr("mybinlog.protocol._table.speedups", None)
    elif speedups is None:
        pytest.skip("the compiled core is not built")
    return str(request.param)


def test_year_takes_a_signedness_bit_on_mysql(implementation: str) -> None:
    """(id INT, x YEAR, g BIGINT, u TINYINT UNSIGNED) with g=-5, u=200, as MySQL 9.7 writes it: bits id, x, g, u =
    0, 1, 0, 1 (MySQL sets YEAR's bit). Skipping YEAR read g as 18446744073709551611 and u as -56."""
    types = [CT.LONG, CT.YEAR, CT.LONGLONG, CT.TINY]
    body = table_map_body(3, "db", "y", types, [0, 0, 0, 0], b"\x0f") + optional(1, b"\x50")
    dec = mysql_decoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, body, crc=True))
    row = b"\x00" + struct.pack("<i", 1) + bytes([124]) + struct.pack("<q", -5) + bytes([200])
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(3, 4, b"\x0f", row), crc=True))
    assert ev.rows == [(1, 2024, -5, 200)]  # type: ignore[attr-defined]


def test_vector_takes_a_charset_entry_on_mysql(implementation: str) -> None:
    """(id INT, v VECTOR, c VARCHAR latin1, d VARCHAR utf8mb4): MySQL lists v with collation 63 first; skipping it
    read c with d's charset (and d as bytes or with the wrong codec)."""
    types = [CT.LONG, CT.VECTOR, CT.VARCHAR, CT.VARCHAR]
    metas = [0, 4, 10, 40]
    charsets = optional(3, encode_packed_int(63) + encode_packed_int(8) + encode_packed_int(255))
    body = table_map_body(4, "db", "v", types, metas, b"\x0f") + optional(1, b"\x00") + charsets
    dec = mysql_decoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, body, crc=True))
    vector = struct.pack("<2f", 1.0, -0.0)
    latin1 = "ü€".encode("cp1252")
    utf8 = "ü€".encode()
    row = (
        b"\x00"
        + struct.pack("<i", 1)
        + struct.pack("<I", len(vector))
        + vector
        + bytes([len(latin1)])
        + latin1
        + bytes([len(utf8)])
        + utf8
    )
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(4, 4, b"\x0f", row), crc=True))
    ((ident, vec, c, d),) = ev.rows  # type: ignore[attr-defined]
    assert (ident, c, d) == (1, "ü€", "ü€")
    assert list(vec) == [1.0, -0.0]


def test_the_corpus_mysql_9_vector_file_reads_its_text_column_as_text() -> None:
    """rust_mysql_common's vector.binlog (MySQL 9.0.1): ``bar (id, vector_column, foo TEXT, vector_column2)`` has
    DEFAULT_CHARSET 63 with (1, 255): entry 1 is ``foo`` only when VECTOR columns are counted."""
    from mybinlog.protocol._events import TableMapEvent
    from mybinlog.source._files import read_binlog_file
    from tests.corpus import binlog_files

    path = next((p for p in binlog_files() if p.name == "rust_mysql_common__vector.binlog"), None)
    if path is None:
        pytest.skip("the binlog corpus is not here")
    tables = {ev.table.name: ev.table for ev in read_binlog_file(path) if isinstance(ev, TableMapEvent)}
    assert [c.charset for c in tables["bar"].columns] == [None, 63, 255, 63]
