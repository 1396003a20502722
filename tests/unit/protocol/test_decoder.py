"""Byte-level unit tests of EventDecoder behaviours, on hand-built events (no corpus needed).

Checksums, unknown and ignorable event types, truncated input, rows events without their table map, lazy row
decoding (errors surface on ``.rows`` only), the table-map cache, update images and MISSING columns, and the
optional-metadata details the corpus showed to matter (key order, flavor rules, extra row info).
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest

from mybinlog.errors import ChecksumError, DecodeError, TruncatedError, UnknownEventError
from mybinlog.protocol._constants import ColumnType, EventType
from mybinlog.protocol._decoder import EventDecoder
from mybinlog.protocol._events import (
    MISSING,
    AnnotateRowsEvent,
    MariadbGtidListEvent,
    OtherEvent,
    QueryEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
    XidEvent,
)
from tests.builders import (
    MYSQL8_POST_HEADERS,
    encode_packed_int,
    event,
    fde_event,
    mariadb_decoder,
    mysql_decoder,
    optional,
    rows_body,
    table_map_body,
)

LONG = ColumnType.LONG
VARCHAR = ColumnType.VARCHAR


def query_body(sql: str, schema: str = "db") -> bytes:
    # thread_id, exec_time, schema length, error code, status-vars length (0), schema NUL, statement
    return struct.pack("<IIBHH", 7, 0, len(schema), 0, 0) + schema.encode() + b"\0" + sql.encode()


def int_varchar_table(table_id: int = 5, *, name: str = "t", metadata: bytes = b"") -> bytes:
    return table_map_body(table_id, "db", name, [LONG, VARCHAR], [0, 40], b"\x03") + metadata


# ----------------------------------------------------------------------------------------------------------
# checksums
# ----------------------------------------------------------------------------------------------------------


def test_valid_checksum_decodes() -> None:
    dec = mysql_decoder()
    ev = dec.decode(event(EventType.QUERY_EVENT, query_body("BEGIN"), crc=True), 200)
    assert isinstance(ev, QueryEvent)
    assert (ev.query, ev.schema, ev.offset) == ("BEGIN", "db", 200)


def test_checksum_mismatch_raises_checksum_error() -> None:
    dec = mysql_decoder(file="binlog.000007")
    data = bytearray(event(EventType.QUERY_EVENT, query_body("BEGIN"), crc=True))
    data[-6] ^= 0x01  # a byte of the statement
    with pytest.raises(ChecksumError) as info:
        dec.decode(bytes(data), 1234)
    err = info.value
    assert (err.offset, err.file, err.type_code) == (1234, "binlog.000007", EventType.QUERY_EVENT)
    assert "CRC32 mismatch in QUERY_EVENT" in str(err)
    assert "offset 1234" in str(err)
    assert "binlog.000007" in str(err)


def test_checksum_mismatch_in_the_checksum_itself() -> None:
    data = bytearray(event(EventType.XID_EVENT, struct.pack("<Q", 9), crc=True))
    data[-1] ^= 0xFF
    with pytest.raises(ChecksumError):
        mysql_decoder().decode(bytes(data), 50)


def test_unverified_checksum_is_stripped_not_checked() -> None:
    dec = EventDecoder(verify_checksum=False)
    dec.decode(fde_event("8.0.36", MYSQL8_POST_HEADERS, 1))
    data = bytearray(event(EventType.XID_EVENT, struct.pack("<Q", 9), crc=True))
    data[-1] ^= 0xFF
    ev = dec.decode(bytes(data), 50)
    assert isinstance(ev, XidEvent)
    assert ev.xid == 9


def test_format_description_checksum_is_verified() -> None:
    data = bytearray(fde_event("8.0.36", MYSQL8_POST_HEADERS, 1))
    data[30] ^= 0x01  # inside the server version
    with pytest.raises(ChecksumError) as info:
        EventDecoder().decode(bytes(data), 4)
    assert info.value.offset == 4
    assert info.value.type_code == EventType.FORMAT_DESCRIPTION_EVENT


def test_format_description_checksum_ignores_the_in_use_flag() -> None:
    """mysqld computes the FDE's CRC before setting LOG_EVENT_BINLOG_IN_USE_F in the file."""
    data = bytearray(fde_event("8.0.36", MYSQL8_POST_HEADERS, 1))
    data[17] |= 0x01  # flags: in use (CRC unchanged)
    ev = EventDecoder().decode(bytes(data), 4)
    assert ev.flags & 1


def test_checksum_off_means_no_trailer_is_stripped() -> None:
    dec = mysql_decoder(crc=False)
    ev = dec.decode(event(EventType.QUERY_EVENT, query_body("COMMIT")), 300)
    assert isinstance(ev, QueryEvent)
    assert ev.query == "COMMIT"


# ----------------------------------------------------------------------------------------------------------
# unknown and ignorable types
# ----------------------------------------------------------------------------------------------------------


def test_unknown_event_type_raises_naming_type_and_offset() -> None:
    dec = mysql_decoder(file="binlog.000002")
    with pytest.raises(UnknownEventError) as info:
        dec.decode(event(99, b"\x01\x02\x03", crc=True), 4321)
    err = info.value
    assert (err.type_code, err.offset, err.file) == (99, 4321, "binlog.000002")
    assert "99" in str(err)
    assert "offset 4321" in str(err)
    assert "upgrade" in str(err)  # names the fix


def test_unknown_event_type_flagged_ignorable_is_kept_raw() -> None:
    dec = mysql_decoder()
    ev = dec.decode(event(100, b"\xaa" * 10, crc=True, flags=0x80), 281)
    assert isinstance(ev, OtherEvent)
    assert (ev.type_code, ev.body, ev.offset, ev.flags) == (100, b"\xaa" * 10, 281, 0x80)
    assert ev.type_name == "UNKNOWN_EVENT_100"


def test_ignorable_unknown_event_checksum_is_still_verified() -> None:
    data = bytearray(event(100, b"\xaa" * 10, crc=True, flags=0x80))
    data[20] ^= 1
    with pytest.raises(ChecksumError):
        mysql_decoder().decode(bytes(data), 281)


# ----------------------------------------------------------------------------------------------------------
# truncated and malformed input
# ----------------------------------------------------------------------------------------------------------


def test_shorter_than_a_header_is_truncated() -> None:
    with pytest.raises(TruncatedError) as info:
        EventDecoder().decode(b"\x00" * 10, 8)
    assert info.value.offset == 8


def test_event_shorter_than_its_header_says_is_truncated() -> None:
    data = event(EventType.XID_EVENT, struct.pack("<Q", 1))
    with pytest.raises(TruncatedError) as info:
        EventDecoder().decode(data[:-3], 77)
    assert info.value.offset == 77
    assert info.value.type_code == EventType.XID_EVENT
    assert "XID_EVENT" in str(info.value)


def test_event_longer_than_its_header_says_is_a_decode_error() -> None:
    data = event(EventType.XID_EVENT, struct.pack("<Q", 1)) + b"\x00"
    with pytest.raises(DecodeError) as info:
        EventDecoder().decode(data, 77)
    assert not isinstance(info.value, TruncatedError)


def test_fixed_size_body_of_the_wrong_size() -> None:
    with pytest.raises(DecodeError, match="XID event body must be 8 bytes"):
        EventDecoder().decode(event(EventType.XID_EVENT, b"\x01\x02\x03\x04"), 10)


def test_truncated_format_description() -> None:
    with pytest.raises(TruncatedError):
        EventDecoder().decode(event(EventType.FORMAT_DESCRIPTION_EVENT, b"\x04\x00" + b"8.0"), 4)


def test_rows_event_truncated_in_its_bitmaps() -> None:
    dec = EventDecoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    body = rows_body(5, 2, b"", b"")  # ends right after the column count
    with pytest.raises(TruncatedError) as info:
        dec.decode(event(EventType.WRITE_ROWS_EVENT, body), 900)
    assert info.value.offset == 900
    assert info.value.type_code == EventType.WRITE_ROWS_EVENT


def test_table_map_truncated_in_its_column_types() -> None:
    body = int_varchar_table()
    cut = body[: body.index(b"t\0") + 4]  # name, column count, one of two type bytes
    with pytest.raises(DecodeError, match="TABLE_MAP"):
        EventDecoder().decode(event(EventType.TABLE_MAP_EVENT, cut), 60)


def test_gtid_list_shorter_than_its_count() -> None:
    body = struct.pack("<I", 3) + b"\x00" * 16  # says 3 GTIDs, holds 1
    with pytest.raises(TruncatedError, match="GTID_LIST"):
        mariadb_decoder().decode(event(EventType.MARIADB_GTID_LIST_EVENT, body, crc=True), 256)


def test_gtid_list_decodes() -> None:
    body = struct.pack("<I", 1) + struct.pack("<IIQ", 0, 1, 42) + b"\x00\x00"  # MariaDB pads the list
    ev = mariadb_decoder().decode(event(EventType.MARIADB_GTID_LIST_EVENT, body, crc=True), 256)
    assert isinstance(ev, MariadbGtidListEvent)
    assert str(ev.gtid_set) == "0-1-42"


def test_transaction_payload_inner_event_running_past_the_payload() -> None:
    inner = event(EventType.XID_EVENT, struct.pack("<Q", 1))[:-2]  # header says 27 bytes, 25 present
    tlv = (
        b"\x01\x01" + encode_packed_int(len(inner)) + b"\x02\x03" + encode_packed_int(255) + b"\x00"
    )  # compression 255 = none
    with pytest.raises(TruncatedError, match="TRANSACTION_PAYLOAD"):
        mysql_decoder().decode(event(EventType.TRANSACTION_PAYLOAD_EVENT, tlv + inner, crc=True), 500)


def test_transaction_payload_uncompressed_inner_events() -> None:
    inner = event(EventType.QUERY_EVENT, query_body("BEGIN")) + event(EventType.XID_EVENT, struct.pack("<Q", 3))
    tlv = (
        b"\x01"
        + encode_packed_int(len(encode_packed_int(len(inner))))
        + encode_packed_int(len(inner))
        + b"\x02\x03"
        + encode_packed_int(255)
        + b"\x00"
    )
    ev = mysql_decoder().decode(event(EventType.TRANSACTION_PAYLOAD_EVENT, tlv + inner, crc=True), 500)
    assert [type(e) for e in ev.events] == [QueryEvent, XidEvent]  # type: ignore[attr-defined]
    assert all(e.in_payload and e.offset is None for e in ev.events)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------------------------------------
# rows events and table maps
# ----------------------------------------------------------------------------------------------------------


def test_rows_event_without_table_map_is_a_decode_error() -> None:
    dec = EventDecoder(file="mysql-bin.000003")
    body = rows_body(77, 2, b"\x03", b"\x00" + struct.pack("<i", 1) + b"\x01a")
    with pytest.raises(DecodeError) as info:
        dec.decode(event(EventType.WRITE_ROWS_EVENT, body), 1500)
    err = info.value
    assert "table_id 77" in str(err)
    assert "TABLE_MAP" in str(err)
    assert (err.offset, err.file, err.type_code) == (1500, "mysql-bin.000003", EventType.WRITE_ROWS_EVENT)


def test_rows_event_column_count_must_match_table_map() -> None:
    dec = EventDecoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    with pytest.raises(DecodeError, match="3 columns but its TABLE_MAP has 2"):
        dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 3, b"\x07", b"")), 10)


def test_rows_are_decoded_lazily_and_errors_surface_on_access() -> None:
    dec = EventDecoder(file="binlog.000001")
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    good = b"\x00" + struct.pack("<i", -5) + b"\x02hi"
    bad = b"\x00" + struct.pack("<i", 6) + b"\x09abc"  # VARCHAR says 9 bytes, 3 present
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", good + bad)), 4000)
    assert isinstance(ev, WriteRowsEvent)  # decoding the event did not touch the rows
    with pytest.raises(DecodeError) as info:
        _ = ev.rows
    assert (info.value.offset, info.value.file) == (4000, "binlog.000001")
    assert "`db`.`t`" in str(info.value)
    with pytest.raises(DecodeError):  # still failing, not half-cached
        _ = ev.rows

    ok = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", good + good)), 4100)
    assert ok.rows == [(-5, "hi"), (-5, "hi")]  # type: ignore[attr-defined]
    assert ok.rows is ok.rows  # type: ignore[attr-defined]  # decoded once, then cached


def test_trailing_bytes_after_the_last_row_are_an_error() -> None:
    dec = EventDecoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    rows = b"\x00" + struct.pack("<i", 1) + b"\x01a" + b"\x00"
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", rows)), 10)
    with pytest.raises(DecodeError):
        _ = ev.rows  # type: ignore[attr-defined]


def test_update_rows_are_pairs_and_absent_columns_are_missing() -> None:
    dec = EventDecoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    before = b"\x00" + struct.pack("<i", 1)  # minimal before image: column 0 only
    after = b"\x02" + struct.pack("<i", 2)  # full after image, column 1 NULL
    body = rows_body(5, 2, b"\x01", before + after, present_after=b"\x03")
    ev = dec.decode(event(EventType.UPDATE_ROWS_EVENT, body), 10)
    assert isinstance(ev, UpdateRowsEvent)
    assert ev.rows == [((1, MISSING), (2, None))]
    assert ev.rows[0][0][1] is MISSING
    assert repr(MISSING) == "MISSING"


def test_null_bitmap_marks_nulls() -> None:
    dec = EventDecoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    rows = b"\x03" + b"\x02" + struct.pack("<i", 9)  # both NULL; then column 1 NULL only
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", rows)), 10)
    assert ev.rows == [(None, None), (9, None)]  # type: ignore[attr-defined]


def test_table_map_cache_reuses_identical_bytes() -> None:
    dec = EventDecoder()
    first = dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table(5)))
    again = dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table(6)))  # same body, other table id
    other = dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table(7, name="u")))
    assert isinstance(first, TableMapEvent)
    assert isinstance(again, TableMapEvent)
    assert isinstance(other, TableMapEvent)
    assert again.table is first.table
    assert other.table is not first.table
    assert other.table.name == "u"
    assert dec.table_map(5) is dec.table_map(6) is first.table
    assert dec.table_map(7) is other.table
    # the compiled row decoder is shared too: one per (table, image layout)
    for table_id in (5, 6):
        ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(table_id, 2, b"\x03", b"\x02\x01\x00\x00\x00")))
        assert ev.rows == [(1, None)]  # type: ignore[attr-defined]
    assert len(first.table._decoders) == 1


def test_table_id_is_remapped_to_a_new_table() -> None:
    dec = EventDecoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table(5)))
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table(5, name="renamed")))
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", b"\x03")))
    assert ev.table_name == "renamed"  # type: ignore[attr-defined]


def test_primary_key_keeps_key_order_and_prefixes() -> None:
    meta = optional(
        9, encode_packed_int(1) + encode_packed_int(0) + encode_packed_int(0) + encode_packed_int(10)
    )  # PRIMARY KEY (c1, c0(10))
    ev = EventDecoder().decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table(metadata=meta)))
    assert ev.table.primary_key == (1, 0)  # type: ignore[attr-defined]
    assert ev.table.primary_key_prefixes == (0, 10)  # type: ignore[attr-defined]
    simple = optional(8, encode_packed_int(1) + encode_packed_int(0))
    ev = EventDecoder().decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table(metadata=simple)))
    assert ev.table.primary_key == (1, 0)
    assert ev.table.primary_key_prefixes == (0, 0)  # type: ignore[attr-defined]
    assert all(c.primary_key for c in ev.table.columns)  # type: ignore[attr-defined]


def _geometry_varchar_table() -> bytes:
    # (g GEOMETRY, s VARCHAR(40)) with per-column charsets binary, utf8mb4_general_ci
    body = table_map_body(9, "db", "geo", [ColumnType.GEOMETRY, VARCHAR], [4, 40], b"\x03")
    return body + optional(3, encode_packed_int(63) + encode_packed_int(45))


def test_mariadb_charset_list_includes_geometry() -> None:
    """MariaDB lists GEOMETRY among the character columns of COLUMN_CHARSET; MySQL does not."""
    row = b"\x00" + struct.pack("<I", 2) + b"\x01\x02" + b"\x02hi"
    maria = mariadb_decoder()
    tm = maria.decode(event(EventType.TABLE_MAP_EVENT, _geometry_varchar_table(), crc=True))
    assert [c.charset for c in tm.table.columns] == [63, 45]  # type: ignore[attr-defined]
    ev = maria.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(9, 2, b"\x03", row), crc=True))
    assert ev.rows == [(b"\x01\x02", "hi")]  # type: ignore[attr-defined]

    mysql = mysql_decoder()
    tm = mysql.decode(event(EventType.TABLE_MAP_EVENT, _geometry_varchar_table(), crc=True))
    assert [c.charset for c in tm.table.columns] == [None, 63]  # type: ignore[attr-defined]


def test_table_cache_is_not_shared_across_flavors() -> None:
    dec = mysql_decoder()
    mysql_table = dec.decode(event(EventType.TABLE_MAP_EVENT, _geometry_varchar_table(), crc=True))
    dec.decode(fde_event("10.11.6-MariaDB-log", MYSQL8_POST_HEADERS, 1), 4)  # e.g. a new file from MariaDB
    maria_table = dec.decode(event(EventType.TABLE_MAP_EVENT, _geometry_varchar_table(), crc=True))
    assert maria_table.table is not mysql_table.table  # type: ignore[attr-defined]
    assert maria_table.table.columns[1].charset == 45  # type: ignore[attr-defined]


@pytest.mark.parametrize(("flavor", "signedness"), [("mysql", b"\xc0"), ("mysql", b"\x40"), ("mariadb", b"\xc0")])
def test_signedness_bitmap_and_year_per_flavor(flavor: str, signedness: bytes) -> None:
    """(y YEAR, n INT UNSIGNED): both servers give YEAR a signedness bit (MySQL 9.7 sets it, 8.0 clears it)."""
    dec = mariadb_decoder() if flavor == "mariadb" else mysql_decoder()
    body = table_map_body(3, "db", "y", [ColumnType.YEAR, LONG], [0, 0], b"\x03") + optional(1, signedness)
    tm = dec.decode(event(EventType.TABLE_MAP_EVENT, body, crc=True))
    assert tm.table.columns[1].unsigned is True  # type: ignore[attr-defined]
    row = b"\x00" + bytes([124]) + struct.pack("<I", 4294967295)
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(3, 2, b"\x03", row), crc=True))
    assert ev.rows == [(2024, 4294967295)]  # type: ignore[attr-defined]


def test_vector_dimension_from_optional_metadata() -> None:
    body = table_map_body(4, "db", "v", [ColumnType.LONGLONG, ColumnType.VECTOR], [0, 4], b"\x03")
    ev = EventDecoder().decode(event(EventType.TABLE_MAP_EVENT, body + optional(13, encode_packed_int(3))))
    assert [c.vector_dimension for c in ev.table.columns] == [None, 3]  # type: ignore[attr-defined]


def test_extra_row_info_partition_ids() -> None:
    dec = EventDecoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    write = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", b"\x03", extra=b"\x01\x03\x00")))
    assert (write.partition_id, write.source_partition_id) == (3, None)  # type: ignore[attr-defined]
    update = dec.decode(
        event(
            EventType.UPDATE_ROWS_EVENT,
            rows_body(5, 2, b"\x03", b"\x03\x03", extra=b"\x01\x01\x00\x03\x00", present_after=b"\x03"),
        )
    )
    assert (update.partition_id, update.source_partition_id) == (1, 3)  # type: ignore[attr-defined]
    assert update.rows == [((None, None), (None, None))]  # type: ignore[attr-defined]
    plain = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", b"\x03")))
    assert (plain.partition_id, plain.ndb_info, plain.extra_data) == (None, None, b"")  # type: ignore[attr-defined]


def test_decode_is_sans_io_and_stateful_per_instance() -> None:
    """Two decoders do not share table maps (one per stream)."""
    a, b = EventDecoder(), EventDecoder()
    a.decode(event(EventType.TABLE_MAP_EVENT, int_varchar_table()))
    assert a.table_map(5) is not None
    assert b.table_map(5) is None


# ----------------------------------------------------------------------------------------------------------
# ANNOTATE_ROWS: the text is kept as bytes until read
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", [b"INSERT INTO t VALUES (1, 'caf\xc3\xa9')", b"", b"bad \xff\xfe bytes", ("\u00e9" * 50).encode()]
)
def test_annotate_rows_query_is_decoded_when_read(text: bytes) -> None:
    """The decoders (compiled or not, one event or a batch) keep the bytes; ``query`` is the UTF-8 text with invalid
    bytes replaced, the same str on every read, and ``repr``, ``describe`` and the constructor still speak str."""
    dec = mariadb_decoder()
    raw = event(EventType.ANNOTATE_ROWS_EVENT, text, crc=True)
    one = dec.decode(raw, 100)
    batch: list[Any] = []
    dec.decode_batch([raw, raw], batch, [100, 200])
    for ev in (one, *batch):
        assert isinstance(ev, AnnotateRowsEvent)
        assert ev.query == text.decode("utf-8", "replace")
        assert ev.query is ev.query  # decoded once
        assert ev.describe() == ev.query
        assert repr(ev).endswith(f"query={ev.query!r})")
        assert "offset=" in repr(ev)
    built = AnnotateRowsEvent(type_code=160, timestamp=1, server_id=1, size=19, log_pos=0, flags=0, query="q")
    assert (built.query, built.offset, built.in_payload) == ("q", None, False)
    with pytest.raises(TypeError):
        AnnotateRowsEvent(type_code=160, timestamp=1, server_id=1, size=19, log_pos=0, flags=0)
    assert dataclasses.replace(one, timestamp=5).query == one.query
    assert dataclasses.replace(one, query="other").query == "other"
