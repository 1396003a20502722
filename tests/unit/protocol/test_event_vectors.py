"""Conformance of the event decoder with the event-level records of the shared corpus (vectors.jsonl).

Covers every record of kind table_map, write_rows, update_rows, delete_rows, format_description, gtid, query,
transaction_payload, and the ``other`` records that are events (heartbeats, INTVAR, STOP, XID, ROTATE, MariaDB
GTID_LIST). Value-level records (decimal, time, json_binary, value/packed_integer ``other``) are covered by
test_value_vectors.py, GTID-set encodings (previous_gtids) by test_gtid_vectors.py.

Each record is decoded the way its ``bytes_scope`` says (see the corpus' SOURCES.md):

* ``full_event``: with the decoder state the event needs: the events before it in its ``binlog_file``, the
  FORMAT_DESCRIPTION built from ``params.fde``, or the earlier records of the same upstream test sequence
  (dolthub's BINLOG statements, go-mysql's TestRowsEventDecodeFunc), then ``table_map_hex``;
* ``event_body``: wrapped in a synthetic 19-byte header of the record's event type (no checksum);
* ``row_image`` / ``compressed_payload``: wrapped into a whole event (see :func:`_build`).

The expectations are upstream test assertions; :func:`_check` maps each key to our event attributes, with
go-mysql's and rust_mysql_common's conventions translated (go-mysql numbers the images of an UPDATE as
consecutive rows; rust_mysql_common gives ENUM as an index and SET as raw bytes...). A test id is ``v<id>``.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mybinlog.errors import DecodeError
from mybinlog.protocol._constants import ColumnType, EventType
from mybinlog.protocol._decoder import EventDecoder
from mybinlog.protocol._events import (
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatEvent,
    IntvarEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    RowsEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    UpdateRowsEvent,
)
from mybinlog.protocol._format import event_to_json, format_time
from mybinlog.protocol._jsonb import JsonOpaque
from mybinlog.protocol._table import ColumnInfo, TableMap
from mybinlog.source._files import read_binlog_file
from tests.builders import (
    MYSQL8_POST_HEADERS,
    encode_packed_int,
    event,
    fde_event,
    table_map_body,
    type_code_of,
)
from tests.corpus import load_vectors

EVENT_KINDS = frozenset(
    {
        "table_map",
        "write_rows",
        "update_rows",
        "delete_rows",
        "format_description",
        "gtid",
        "query",
        "transaction_payload",
        "other",
    }
)
VALUE_SCOPES = frozenset({"value", "packed_integer"})  # covered by test_value_vectors.py
EXPECTED_RECORD_COUNT = 140  # event-level records of the kinds above (SOURCES.md totals minus value scopes)

# Records that cannot be checked, with the reason. Kept explicit so nothing is skipped silently; the test below
# asserts every id here names a real record.
EXCLUDED: dict[int, str] = {}


# Some event_body records name no concrete event type; the type code used instead, and why.
BODY_TYPE_OVERRIDES: dict[int, tuple[int, str]] = {
    214: (EventType.WRITE_ROWS_EVENT, "go-mysql decodes it as a v2 rows event with a single image"),
    268: (EventType.WRITE_ROWS_EVENT_V1, "go-mysql decodes it as a v1 rows event (no extra-data field)"),
    23: (
        EventType.HEARTBEAT_LOG_EVENT_V2,
        "heartbeat 'version 3' does not exist on the wire (the version is the type code); the record's empty "
        "body is fed as a v2 heartbeat, which must fail for want of a log file name",
    ),
}

# MySQL collation names the records mention (test-side lookup table: checks the id we decode)
COLLATION_NAMES = {45: "utf8mb4_general_ci", 63: "binary", 255: "utf8mb4_0900_ai_ci"}


def _applicable(record: dict[str, Any]) -> bool:
    if record["kind"] not in EVENT_KINDS:
        return False
    return not (record["kind"] == "other" and record["bytes_scope"] in VALUE_SCOPES)


RECORDS = [r for r in load_vectors() if _applicable(r)]
BY_ID = {r["id"]: r for r in load_vectors()}


# ----------------------------------------------------------------------------------------------------------
# building events
# ----------------------------------------------------------------------------------------------------------


def _body_type(record: dict[str, Any]) -> int:
    if record["id"] in BODY_TYPE_OVERRIDES:
        return int(BODY_TYPE_OVERRIDES[record["id"]][0])
    m = re.search(r"\((\d+)\)", record.get("event_type") or "")
    assert m, f"record {record['id']} names no event type code: {record.get('event_type')!r}"
    return int(m.group(1))


def _group(record: dict[str, Any]) -> str:
    """Records of one upstream sequence (dolthub BINLOG statements of one file, go-mysql's
    TestRowsEventDecodeFunc#0..4) share a group and are decoded in order."""
    source: str = record["source"]
    return source.rsplit("#", 1)[0] if "#" in source else source.split("::")[0]


def _file_events_before(dec: EventDecoder, path: Path, offset: int) -> None:
    gen = read_binlog_file(path, decoder=dec)
    try:
        for ev in gen:
            if ev.offset is not None and ev.offset >= offset:
                break
    finally:
        gen.close()


def _build(record: dict[str, Any], corpus_dir: Path) -> tuple[EventDecoder, bytes, int | None]:
    """The decoder state the record needs, the bytes to decode, and their offset."""
    scope = record["bytes_scope"]
    params = record.get("params") or {}
    data = bytes.fromhex(record["event_bytes_hex"])

    if scope == "full_event":
        if record.get("binlog_file"):
            path = corpus_dir / record["binlog_file"]
            offset = record["event_offset"]
            assert path.read_bytes()[offset : offset + len(data)] == data, "record bytes differ from the file"
            dec = EventDecoder()
            _file_events_before(dec, path, offset)
            return dec, data, offset
        dec = EventDecoder()
        if isinstance(params.get("fde"), dict):
            fde = params["fde"]
            dec.decode(fde_event(fde["server_version"], fde["event_type_header_lengths"], fde["checksum_alg"]))
            if record.get("column_types") and record["kind"] in ("write_rows", "update_rows", "delete_rows"):
                body = table_map_body(
                    params["table_id"],
                    params["schema"],
                    params["table"],
                    record["column_types"],
                    record["column_meta"],
                    bytes.fromhex(params["null_bitmap_hex"]),
                )
                dec.decode(event(EventType.TABLE_MAP_EVENT, body, crc=fde["checksum_alg"] == 1))
            return dec, data, None
        # a sequence of records: replay the FORMAT_DESCRIPTION (possibly of another file) and earlier records
        group = _group(record)
        earlier = [r for r in RECORDS if _group(r) == group and r["id"] < record["id"]]
        needs = params.get("needs_fde_from")
        if needs:
            fde_file = needs.split()[0]
            earlier = [r for r in RECORDS if r["kind"] == "format_description" and fde_file in r["source"]] + earlier
        for prior in earlier:
            dec.decode(bytes.fromhex(prior["event_bytes_hex"]))
        if record.get("table_map_hex"):
            dec.decode(bytes.fromhex(record["table_map_hex"]))
        return dec, data, None

    if scope == "event_body":
        dec = EventDecoder()
        if params.get("flavor") == "mariadb":
            dec.decode(fde_event("10.11.0-MariaDB-log", MYSQL8_POST_HEADERS, 0))
        if record.get("table_map_hex"):
            dec.decode(event(EventType.TABLE_MAP_EVENT, bytes.fromhex(record["table_map_hex"])))
        elif record.get("column_types") and record["kind"] in ("write_rows", "update_rows", "delete_rows"):
            null_hex = params.get("null_bitmap_hex")
            body = table_map_body(
                params["table_id"],
                params.get("schema", "test"),
                params.get("table", "t"),
                record["column_types"],
                record["column_meta"],
                bytes.fromhex(null_hex) if null_hex else None,
            )
            dec.decode(event(EventType.TABLE_MAP_EVENT, body))
        return dec, event(_body_type(record), data), None

    if scope == "row_image":
        # one after image of a PARTIAL_UPDATE_ROWS_EVENT: give it an all-NULL before image and a rows header
        ncols = len(record["column_types"])
        dec = EventDecoder()
        dec.decode(
            event(
                EventType.TABLE_MAP_EVENT, table_map_body(1, "test", "t", record["column_types"], record["column_meta"])
            )
        )
        present = bytes.fromhex(params["columns_present_bitmap_hex"])
        before = b"\xff" * ((ncols + 7) // 8)
        body = (
            (1).to_bytes(6, "little")
            + b"\x01\x00"
            + b"\x02\x00"
            + encode_packed_int(ncols)
            + present
            + present
            + before
        )
        return dec, event(EventType.PARTIAL_UPDATE_ROWS_EVENT, body + data), None

    if scope == "compressed_payload":
        fde = params["fde"]
        dec = EventDecoder()
        dec.decode(fde_event(fde["server_version"], fde["event_type_header_lengths"], fde["checksum_alg"]))
        assert params["compression_type"] == "ZSTD"
        tlv = (
            b"\x01" + encode_packed_int(len(encode_packed_int(len(data)))) + encode_packed_int(len(data))
        )  # payload_size
        tlv += b"\x02\x01\x00"  # compression_type 0 = zstd
        tlv += b"\x00"  # end of header (uncompressed_size left out: the decoder must not need it)
        return dec, event(EventType.TRANSACTION_PAYLOAD_EVENT, tlv + data, crc=fde["checksum_alg"] == 1), None

    raise AssertionError(f"record {record['id']}: unhandled bytes_scope {scope!r}")


# ----------------------------------------------------------------------------------------------------------
# comparing
# ----------------------------------------------------------------------------------------------------------


def _rust_json(v: Any) -> Any:
    """Our JSON document rendered the way rust_mysql_common's tests state it (OPAQUE temporals/decimals as
    strings, other OPAQUE values as MySQL's 'base64:type<N>:...')."""
    if isinstance(v, dict):
        return {k: _rust_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_rust_json(x) for x in v]
    if isinstance(v, JsonOpaque):
        return f"base64:type{v.type_code}:{base64.b64encode(v.data).decode()}"
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return format_time(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    return v


def _same_json(expected: Any, ours: Any) -> bool:
    """Equality that does not let True == 1 or 1 == 1.0 pass."""
    if isinstance(expected, dict):
        return (
            isinstance(ours, dict)
            and expected.keys() == ours.keys()
            and all(_same_json(expected[k], ours[k]) for k in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(ours, list)
            and len(expected) == len(ours)
            and all(_same_json(e, o) for e, o in zip(expected, ours, strict=True))
        )
    return type(expected) is type(ours) and expected == ours


def _set_bits(col: ColumnInfo, ours: Any) -> int:
    if isinstance(ours, int):
        return ours
    assert col.set_values is not None
    return sum(1 << i for i, name in enumerate(col.set_values) if name in ours)


def value_matches(expected: Any, ours: Any, col: ColumnInfo | None) -> bool:
    """Whether one decoded column value matches an upstream expectation (see the module docstring)."""
    if expected is None:
        return ours is None
    if isinstance(expected, dict) and "bytes_hex" in expected:
        raw = bytes.fromhex(expected["bytes_hex"])
        if isinstance(ours, bytes):
            return ours == raw
        if col is not None and col.real_type == ColumnType.BIT:
            return ours == int.from_bytes(raw, "big")
        if col is not None and col.real_type == ColumnType.SET:  # rust: raw little-endian member bitmap
            return _set_bits(col, ours) == int.from_bytes(raw, "little")
        if isinstance(ours, str):
            return ours.encode() == raw
        return False
    if isinstance(expected, dict) and "negative" in expected:  # rust TIME value
        magnitude = datetime.timedelta(
            days=expected["days"],
            hours=expected["hours"],
            minutes=expected["minutes"],
            seconds=expected["seconds"],
            microseconds=expected["microseconds"],
        )
        return ours == (-magnitude if expected["negative"] else magnitude)
    if isinstance(expected, dict) and expected == {"length": 0}:
        return ours is None  # zero-length JSON value (NOT NULL JSON column left out of an INSERT)
    if isinstance(expected, bool):
        return ours is expected
    if isinstance(expected, int):
        if col is not None and col.real_type == ColumnType.ENUM and isinstance(ours, str):
            assert col.enum_values is not None
            return 0 < expected <= len(col.enum_values) and col.enum_values[expected - 1] == ours
        if col is not None and col.real_type == ColumnType.SET and not isinstance(ours, int):
            return _set_bits(col, ours) == expected
        if isinstance(ours, datetime.datetime) and ours.tzinfo is not None:  # TIMESTAMP as unix seconds
            return ours.timestamp() == expected
        return type(ours) is int and ours == expected
    if isinstance(expected, str):
        if isinstance(ours, str):
            return ours == expected
        if isinstance(ours, decimal.Decimal):
            return str(ours) == expected
        if isinstance(ours, list) and col is not None and col.real_type == ColumnType.JSON and expected == "":
            return ours == []  # 0-length partial JSON diff: go-mysql says empty bytes, we say no diffs
        if col is not None and col.real_type == ColumnType.JSON:  # go-mysql: MySQL's compact JSON text
            return _same_json(json.loads(expected), ours)
        return False
    return bool(expected == ours)


_ROW_KEY = re.compile(r"rows\[(\d+)\]\[(\d+)\]")
_RUST_ROW_KEY = re.compile(r"rows?\[(\d+)\]\.(after|before)\[(@?)(\d+)\](_json|_as_mysql_text)?")


def _images(record: dict[str, Any], ev: RowsEvent) -> list[tuple[Any, ...]]:
    """Row images in go-mysql's numbering (an UPDATE's before and after images are consecutive rows)."""
    if record["bytes_scope"] == "row_image":
        return [after for _, after in ev.rows]
    if not isinstance(ev, UpdateRowsEvent):
        return list(ev.rows)
    flat = [image for pair in ev.rows for image in pair]
    if "event type unset" in record["notes"] or "with the event type unset" in record["notes"]:
        # go-mysql read the body as single-image: the second bitmap became an all-NULL rows[0]
        flat.insert(0, (None,) * ev.table.column_count)
    return flat


def _row_dict(ev: RowsEvent, row: Any, side: str) -> tuple[Any, ...] | None:
    if isinstance(ev, UpdateRowsEvent):
        return tuple(row[0] if side == "before" else row[1])
    if side == ("after" if ev.kind == "insert" else "before"):
        return tuple(row)
    return None


def _compare_image(ev: RowsEvent, expected: Any, ours: tuple[Any, ...] | None, what: str) -> list[str]:
    cols = ev.table.columns
    if expected is None:
        return [] if ours is None else [f"{what}: expected no image, got {ours!r}"]
    if ours is None:
        return [f"{what}: expected {expected!r}, got no image"]
    if isinstance(expected, dict):  # by column name; '<name>_bytes_hex' = raw bytes of that column
        problems = []
        names = list(ev.table.column_names)
        for key, value in expected.items():
            name, raw = (key[: -len("_bytes_hex")], True) if key.endswith("_bytes_hex") else (key, False)
            if name in names:
                idx = names.index(name)
            else:  # '<type>_bytes_hex': the one column of that type
                (idx,) = [c.index for c in cols if c.type_name == name]
            got = ours[idx]
            if raw and isinstance(got, list):  # VECTOR: float32 list
                got = struct.pack(f"<{len(got)}f", *got)
            ok = got == bytes.fromhex(value) if raw else value_matches(value, got, cols[idx])
            if not ok:
                problems.append(f"{what}.{key}: expected {value!r}, got {got!r}")
        return problems
    if len(expected) != len(ours):
        return [f"{what}: expected {len(expected)} columns, got {len(ours)}: {ours!r}"]
    return [
        f"{what}[{i}] ({cols[i].type_name}): expected {e!r}, got {o!r}"
        for i, (e, o) in enumerate(zip(expected, ours, strict=True))
        if not value_matches(e, o, cols[i])
    ]


def _check_rows_key(record: dict[str, Any], ev: Event, key: str, expected: Any) -> list[str] | None:
    """Row-level keys; None when ``key`` is not one of them."""
    if not isinstance(ev, RowsEvent):
        return None
    cols = ev.table.columns
    m = _ROW_KEY.fullmatch(key)
    if m:
        images = _images(record, ev)
        i, j = int(m.group(1)), int(m.group(2))
        if i >= len(images):
            return [f"{key}: only {len(images)} row images"]
        got = images[i][j]
        return [] if value_matches(expected, got, cols[j]) else [f"{key}: expected {expected!r}, got {got!r}"]
    m = _RUST_ROW_KEY.fullmatch(key)
    if m:
        row, side, col, suffix = int(m.group(1)), m.group(2), int(m.group(4)), m.group(5)
        j = col  # rust_mysql_common names unnamed columns '@<0-based index>' (the bytes agree: see v536)
        image = _row_dict(ev, ev.rows[row], side)
        assert image is not None, f"{key}: event has no {side} image"
        got = image[j]
        if suffix == "_json":
            ok = _same_json(expected, _rust_json(got))
        elif suffix == "_as_mysql_text":
            ok = format_time(got) == expected
        else:
            ok = value_matches(expected, got, cols[j])
        return [] if ok else [f"{key}: expected {expected!r}, got {got!r}"]
    if key == "rows":
        if len(expected) != len(ev.rows):
            return [f"rows: expected {len(expected)} rows, got {len(ev.rows)}"]
        problems = []
        for n, (exp_row, row) in enumerate(zip(expected, ev.rows, strict=True)):
            for side in ("before", "after"):
                if side in exp_row:
                    problems += _compare_image(ev, exp_row[side], _row_dict(ev, row, side), f"rows[{n}].{side}")
                else:
                    assert _row_dict(ev, row, side) is None or ev.kind == "update", f"{side} image not expected"
        return problems
    if key == "each_row":
        assert ev.rows, "each_row: the event has no rows"
        problems = []
        for n, row in enumerate(ev.rows):
            for side in ("before", "after"):
                problems += _compare_image(ev, expected[side], _row_dict(ev, row, side), f"rows[{n}].{side}")
        return problems
    if key == "row_count":
        got = len(_images(record, ev))
        return [] if got == expected else [f"row_count: expected {expected}, got {got}"]
    if key == "consumed_bytes":  # the decoder insists the images end exactly at the event's end
        _ = ev.rows
        got = len(bytes.fromhex(record["event_bytes_hex"]))
        return [] if got == expected else [f"consumed_bytes: expected {expected}, got {got}"]
    if key in ("partition_id", "source_partition_id"):
        got = getattr(ev, key)
        return [] if (got or 0) == expected else [f"{key}: expected {expected}, got {got}"]
    if key in ("ndb_format", "ndb_data_hex"):
        info = ev.ndb_info
        got = (info[0] if info else 0) if key == "ndb_format" else (info[1].hex() if info else None)
        return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]
    m = re.fullmatch(r"column_@(\d+)_collation(_id)?", key)
    if m:
        charset = cols[int(m.group(1))].charset  # 0-based, as in 'row[0].after[@4]'
        got = charset if m.group(2) else COLLATION_NAMES.get(charset or -1)
        return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]
    return None


def _table_of(ev: Event) -> TableMap | None:
    return ev.table if isinstance(ev, (TableMapEvent, RowsEvent)) else None


def _index_map(table: TableMap, get: Callable[[ColumnInfo], Any], keep: Callable[[ColumnInfo], bool]) -> Any:
    got = {str(c.index): get(c) for c in table.columns if keep(c)}
    return got or None


def _check_table_key(ev: Event, key: str, expected: Any, mariadb: bool) -> list[str] | None:
    table = _table_of(ev)
    if table is None:
        return None
    cols = table.columns
    got: Any
    if key == "schema":
        got = table.schema
    elif key == "table":
        got = table.name
    elif key == "column_types":
        got = [c.type for c in cols]
    elif key == "column_count":
        got = table.column_count
    elif key == "nullable":
        got = [c.nullable for c in cols]
    elif key == "column_names":
        got = list(table.column_names) if table.has_full_metadata else None
        if expected is None:
            assert all(n is None for n in table.column_names)
    elif key in ("set_str_values", "enum_str_values"):
        want = ColumnType.SET if key == "set_str_values" else ColumnType.ENUM
        values = [c.set_values if want == ColumnType.SET else c.enum_values for c in cols if c.real_type == want]
        got = [list(v) for v in values if v is not None] or None
    elif key == "primary_key":
        got = list(table.primary_key) or None
    elif key == "primary_key_prefix":
        got = list(table.primary_key_prefixes) or None
    elif key == "pri_key_columns":
        got = [table.column_names[i] for i in table.primary_key]
    elif key == "visibility_map":
        got = {str(c.index): c.visible for c in cols}
        if expected is None:  # no COLUMN_VISIBILITY metadata: every column counts as visible
            return [] if all(c.visible for c in cols) else [f"{key}: expected all visible, got {got}"]
    elif key == "visibility_bitmap_hex":
        if expected is None:
            return []  # see visibility_map
        got = _visibility_hex(cols)
    elif key == "unsigned_map":
        got = _index_map(table, lambda c: c.unsigned, lambda c: c.unsigned is not None)
        if expected is not None and got is not None:
            for k, v in expected.items():
                col = cols[int(k)]
                if col.unsigned is None and col.real_type == ColumnType.YEAR and not mariadb and v is False:
                    got[k] = False  # MySQL leaves YEAR out of the signedness bitmap; go-mysql reads a padding bit
    elif key == "collation_map":
        got = _index_map(
            table,
            lambda c: c.charset,
            lambda c: c.charset is not None and c.real_type not in (ColumnType.ENUM, ColumnType.SET),
        )
    elif key == "enum_set_collation_map":
        got = _index_map(
            table,
            lambda c: c.charset,
            lambda c: c.charset is not None and c.real_type in (ColumnType.ENUM, ColumnType.SET),
        )
    elif key == "enum_str_value_map":
        got = _index_map(table, lambda c: list(c.enum_values or ()), lambda c: c.enum_values is not None)
    elif key == "set_str_value_map":
        got = _index_map(table, lambda c: list(c.set_values or ()), lambda c: c.set_values is not None)
    elif key == "geometry_type_map":
        got = _index_map(table, lambda c: c.geometry_type, lambda c: c.geometry_type is not None)
    elif key == "optional_metadata_vector_dimensionality":
        got = [c.vector_dimension for c in cols if c.real_type == ColumnType.VECTOR]
    elif key == "column_character_sets":
        got = [c.charset or 0 for c in cols]
    elif key == "column_character_set_names":
        got = [COLLATION_NAMES[c.charset] if c.charset else "unknown (non-string)" for c in cols]
    else:
        return None
    return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]


def _visibility_hex(cols: tuple[ColumnInfo, ...]) -> str:
    out = bytearray((len(cols) + 7) // 8)
    for c in cols:
        if c.visible:
            out[c.index // 8] |= 0x80 >> (c.index % 8)
    return out.hex()


def _check_event_key(record: dict[str, Any], ev: Event, key: str, expected: Any) -> list[str] | None:
    """Keys naming event fields; per event class where upstream names collide (type_code, sequence_number)."""
    got: Any
    if isinstance(ev, MariadbGtidEvent):
        fields = {
            "sequence_number": ev.gtid.seq_no,
            "domain_id": ev.gtid.domain_id,
            "flags": ev.gtid_flags,
            "is_ddl": ev.is_ddl,
            "is_standalone": ev.standalone,
            "is_group_commit": bool(ev.gtid_flags & MariadbGtidEvent.FL_GROUP_COMMIT_ID),
            "commit_id": ev.commit_id,
            "gtid_next": str(ev.gtid),
        }
        if key in fields:
            got = fields[key]
            return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]
    if isinstance(ev, GtidEvent):
        gtid = ev.gtid
        fields = {
            "gtid": str(gtid),
            "gtid_text": str(gtid),
            "tagged": bool(gtid is not None and gtid.tag),
            "tag": gtid.tag if gtid else None,
            "uuid": gtid.sid if gtid else None,
            "gno": gtid.gno if gtid else None,
            "last_committed": ev.last_committed,
            "sequence_number": ev.sequence_number,
            "immediate_commit_timestamp": ev.immediate_commit_timestamp,
            "original_commit_timestamp": ev.original_commit_timestamp,
            "transaction_length": ev.transaction_length,
            "immediate_server_version": ev.immediate_server_version,
            "original_server_version": ev.original_server_version,
        }
        if key in fields:
            got = fields[key]
            return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]
    if isinstance(ev, IntvarEvent):
        names = {1: "LAST_INSERT_ID", 2: "INSERT_ID"}
        fields = {"type": names.get(ev.intvar_type), "type_code": ev.intvar_type, "value": ev.value}
        if key in fields:
            got = fields[key]
            return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]
    if isinstance(ev, HeartbeatEvent):
        fields = {"version": ev.version, "filename": ev.log_file, "offset": ev.position}
        if key in fields:
            got = fields[key]
            return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]
    if isinstance(ev, MariadbGtidListEvent) and key == "gtids":
        got = sorted((g.domain_id, g.server_id, g.seq_no) for g in ev.gtid_set)
        want = sorted((g["domain_id"], g["server_id"], g["sequence_number"]) for g in expected)
        return [] if got == want else [f"gtids: expected {want}, got {got}"]
    if isinstance(ev, FormatDescriptionEvent) and key in ("server_version", "binlog_version", "checksum_alg"):
        got = getattr(ev, key)
        return [] if got == expected else [f"{key}: expected {expected!r}, got {got!r}"]
    if isinstance(ev, TransactionPayloadEvent):
        inner = ev.events
        if key == "inner_event_types":
            got = [e.type_code for e in inner]
            want = [type_code_of(n) for n in expected]
            return [] if got == want else [f"{key}: expected {expected}, got {[e.type_name for e in inner]}"]
        if key == "inner_event_count":
            return [] if len(inner) == expected else [f"{key}: expected {expected}, got {len(inner)}"]
        if key == "rows_event_kinds":
            got = {str(i): e.kind for i, e in enumerate(inner) if isinstance(e, RowsEvent)}
            return [] if got == expected else [f"{key}: expected {expected}, got {got}"]
        if key == "inner_event_log_pos_all_zero":
            got = all(e.log_pos == 0 for e in inner) and all(e.in_payload for e in inner)
            return [] if got == expected else [f"{key}: expected {expected}, got {got}"]
    if key == "event_type":
        return [] if ev.type_code == expected else [f"event_type: expected {expected}, got {ev.type_code}"]
    if key == "event_type_name":
        want = type_code_of(expected)
        return [] if ev.type_code == want else [f"event_type_name: expected {expected}, got {ev.type_name}"]
    if key == "event_size":
        return [] if ev.size == expected else [f"event_size: expected {expected}, got {ev.size}"]
    if key == "header":
        got = {
            "timestamp": ev.timestamp,
            "server_id": ev.server_id,
            "event_size": ev.size,
            "log_pos": ev.log_pos,
            "flags": ev.flags,
        }
        want = {k: v for k, v in expected.items() if k != "event_type_name"}
        problems = [] if got == want else [f"header: expected {want}, got {got}"]
        if "event_type_name" in expected and ev.type_code != type_code_of(expected["event_type_name"]):
            problems.append(f"header.event_type_name: expected {expected['event_type_name']}, got {ev.type_name}")
        return problems
    return None


def _materialise(ev: Event) -> None:
    """Decode everything lazy (rows, rows inside a compressed transaction) and render as JSON."""
    events = [ev, *ev.events] if isinstance(ev, TransactionPayloadEvent) else [ev]
    for e in events:
        if isinstance(e, RowsEvent):
            _ = e.rows
        json.loads(event_to_json(e))


# Rows events whose rows must not be decoded, with the reason.
HEADER_ONLY: dict[int, str] = {
    328: "upstream decodes only the rows header: the payload holds LONG values although the table map says TINY",
}


def _check(record: dict[str, Any], ev: Event, mariadb: bool) -> list[str]:
    problems: list[str] = []
    for key, expected in record["expected"].items():
        if key in ("error", "must_not_crash", "requires_ignore_json_decode_error"):
            continue
        result = _check_rows_key(record, ev, key, expected)
        if result is None:
            result = _check_table_key(ev, key, expected, mariadb)
        if result is None:
            result = _check_event_key(record, ev, key, expected)
        if result is not None:
            problems += result
        else:
            problems.append(f"no comparator for expected key {key!r} on {type(ev).__name__}")
    return problems


# ----------------------------------------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------------------------------------


def test_corpus_has_the_event_records(corpus_dir: Path) -> None:
    """Every event-level record is parametrized below (a changed corpus must be looked at, not skipped)."""
    assert len(RECORDS) == EXPECTED_RECORD_COUNT, [r["id"] for r in RECORDS]
    for rid, reason in EXCLUDED.items():
        assert rid in {r["id"] for r in RECORDS}, f"EXCLUDED names record {rid} which is not checked here"
        assert reason
    for rid in (*BODY_TYPE_OVERRIDES, *HEADER_ONLY):
        assert rid in BY_ID


@pytest.mark.parametrize("record", RECORDS, ids=[f"v{r['id']}" for r in RECORDS])
def test_event_vector(record: dict[str, Any], corpus_dir: Path) -> None:
    if record["id"] in EXCLUDED:
        pytest.skip(EXCLUDED[record["id"]])
    expected = record["expected"]
    dec, data, offset = _build(record, corpus_dir)
    mariadb = dec.format is not None and dec.format.is_mariadb

    if expected.get("error") is True:
        with pytest.raises(DecodeError):
            _materialise(dec.decode(data, offset))
        return
    if expected.get("must_not_crash"):
        with contextlib.suppress(DecodeError):
            _materialise(dec.decode(data, offset))
        return
    if expected.get("requires_ignore_json_decode_error"):
        # go-mysql needs ignoreJSONDecodeErr to read this corrupt JSON; mybinlog has no lenient mode: the
        # event itself decodes, the rows raise a DecodeError naming the event
        ev = dec.decode(data, offset)
        assert isinstance(ev, RowsEvent)
        with pytest.raises(DecodeError, match="JSON"):
            _ = ev.rows
        return

    ev = dec.decode(data, offset)
    assert ev.size == len(data)
    if record["id"] not in HEADER_ONLY:
        _materialise(ev)
    problems = _check(record, ev, mariadb)
    assert not problems, f"v{record['id']} ({record['source']}):\n  " + "\n  ".join(problems)
