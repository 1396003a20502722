"""The binlog bytes the unit tests build, one copy of each (no test module imports another).

* Events: :func:`event` (a header and a body, with a CRC32 when asked), :func:`fde_event`, :func:`table_map_body`,
  :func:`rows_body`, :func:`optional` (a TABLE_MAP optional-metadata field), :func:`encode_packed_int`,
  :func:`type_code_of` (the corpus's event type names), :data:`MYSQL8_POST_HEADERS`; decoders that read them:
  :func:`mysql_decoder`, :func:`mariadb_decoder`.
* Values: :func:`encode_decimal`, :func:`encode_date`, :func:`encode_time2`, :func:`encode_datetime2`,
  :func:`encode_timestamp2`, :func:`encode_fraction`, :func:`truncate_usec`.
* Binary JSON: :func:`encode` (a document), :class:`Typed` and :class:`Opaque` values, :func:`packed_datetime`,
  :func:`packed_time`.
* :func:`require_speedups`: the compiled core must be loaded (skipped in the pure-Python pass, failed under CI=true).
"""

from __future__ import annotations

import datetime
import os
import struct
import zlib
from decimal import Context, Decimal
from typing import Any, NamedTuple

import pytest

from mybinlog.protocol import _accel
from mybinlog.protocol._constants import ColumnType, EventType
from mybinlog.protocol._decoder import EventDecoder

# go-mysql test names and rust_mysql_common type names -> type codes
TYPE_CODES: dict[str, int] = {
    "WRITE_ROWS_EVENTv0": EventType.PRE_GA_WRITE_ROWS_EVENT,
    "UPDATE_ROWS_EVENTv0": EventType.PRE_GA_UPDATE_ROWS_EVENT,
    "DELETE_ROWS_EVENTv0": EventType.PRE_GA_DELETE_ROWS_EVENT,
    "WRITE_ROWS_EVENTv1": EventType.WRITE_ROWS_EVENT_V1,
    "UPDATE_ROWS_EVENTv1": EventType.UPDATE_ROWS_EVENT_V1,
    "DELETE_ROWS_EVENTv1": EventType.DELETE_ROWS_EVENT_V1,
    "WRITE_ROWS_EVENTv2": EventType.WRITE_ROWS_EVENT,
    "UPDATE_ROWS_EVENTv2": EventType.UPDATE_ROWS_EVENT,
    "DELETE_ROWS_EVENTv2": EventType.DELETE_ROWS_EVENT,
    "GTID_EVENT": EventType.GTID_LOG_EVENT,
    "ANONYMOUS_GTID_EVENT": EventType.ANONYMOUS_GTID_LOG_EVENT,
    "PREVIOUS_GTIDS_EVENT": EventType.PREVIOUS_GTIDS_LOG_EVENT,
    "ROWS_QUERY_EVENT": EventType.ROWS_QUERY_LOG_EVENT,
    "HEARTBEAT_EVENT": EventType.HEARTBEAT_LOG_EVENT,
    "MARIADB_ANNOTATE_ROWS_EVENT": EventType.ANNOTATE_ROWS_EVENT,
    "MARIADB_BINLOG_CHECKPOINT_EVENT": EventType.BINLOG_CHECKPOINT_EVENT,
}


def type_code_of(name: str) -> int:
    """Type code of an event type name as the corpus spells it (ours, go-mysql's, rust's or ``TYPE_<n>``)."""
    if name in TYPE_CODES:
        return int(TYPE_CODES[name])
    if name.startswith("TYPE_") and name[5:].isdigit():
        return int(name[5:])
    return int(EventType[name])


def header(
    type_code: int,
    body_len: int,
    *,
    crc: bool = False,
    timestamp: int = 0,
    server_id: int = 0,
    log_pos: int = 0,
    flags: int = 0,
) -> bytes:
    return struct.pack("<IBIIIH", timestamp, type_code, server_id, 19 + body_len + (4 if crc else 0), log_pos, flags)


def event(type_code: int, body: bytes, *, crc: bool = False, **fields: int) -> bytes:
    """A whole event: header + body (+ CRC32 when ``crc``)."""
    data = header(type_code, len(body), crc=crc, **fields) + body
    if crc:
        data += struct.pack("<I", zlib.crc32(data))
    return data


def fde_event(server_version: str, post_header_lengths: list[int], checksum_alg: int | None) -> bytes:
    """A FORMAT_DESCRIPTION event (binlog v4); ``checksum_alg`` None = a server without checksums."""
    body = struct.pack("<H", 4) + server_version.encode().ljust(50, b"\0") + struct.pack("<I", 0) + bytes([19])
    body += bytes(post_header_lengths)
    if checksum_alg is None:
        return event(EventType.FORMAT_DESCRIPTION_EVENT, body)
    return event(EventType.FORMAT_DESCRIPTION_EVENT, body + bytes([checksum_alg]), crc=True)


# MySQL 8.0 post-header lengths (types 1..41)
MYSQL8_POST_HEADERS = [
    56,
    13,
    0,
    8,
    0,
    18,
    0,
    4,
    4,
    4,
    4,
    18,
    0,
    0,
    92,
    0,
    4,
    26,
    8,
    0,
    0,
    0,
    8,
    8,
    8,
    2,
    0,
    0,
    0,
    10,
    10,
    10,
    25,
    25,
    0,
    18,
    52,
    0,
    10,
    40,
    0,
]


_META_BYTES = {
    ColumnType.FLOAT: 1,
    ColumnType.DOUBLE: 1,
    ColumnType.BLOB: 1,
    ColumnType.GEOMETRY: 1,
    ColumnType.JSON: 1,
    ColumnType.TIMESTAMP2: 1,
    ColumnType.DATETIME2: 1,
    ColumnType.TIME2: 1,
    ColumnType.VECTOR: 1,
}


def table_map_body(
    table_id: int, schema: str, table: str, types: list[int], metas: list[int], null_bitmap: bytes | None = None
) -> bytes:
    """A TABLE_MAP body from column types and go-mysql-convention metadata (see SOURCES.md)."""
    meta = b""
    for t, m in zip(types, metas, strict=True):
        if t in (ColumnType.NEWDECIMAL, ColumnType.STRING, ColumnType.ENUM, ColumnType.SET):
            meta += m.to_bytes(2, "big")
        elif t in (ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.BIT):
            meta += m.to_bytes(2, "little")
        elif t in _META_BYTES:
            meta += bytes([m])
    if null_bitmap is None:
        null_bitmap = b"\xff" * ((len(types) + 7) // 8)
    return (
        table_id.to_bytes(6, "little")
        + b"\x01\x00"
        + bytes([len(schema)])
        + schema.encode()
        + b"\0"
        + bytes([len(table)])
        + table.encode()
        + b"\0"
        + bytes([len(types)])
        + bytes(types)
        + bytes([len(meta)])
        + meta
        + null_bitmap
    )


def encode_packed_int(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def mysql_decoder(*, crc: bool = True, file: str | None = None) -> EventDecoder:
    dec = EventDecoder(file=file)
    dec.decode(fde_event("8.0.36", MYSQL8_POST_HEADERS, 1 if crc else 0), 4)
    assert dec.checksum is crc
    return dec


def mariadb_decoder() -> EventDecoder:
    dec = EventDecoder()
    dec.decode(fde_event("10.11.6-MariaDB-log", MYSQL8_POST_HEADERS, 1), 4)
    return dec


def optional(kind: int, payload: bytes) -> bytes:
    return bytes([kind]) + encode_packed_int(len(payload)) + payload


def rows_body(
    table_id: int, ncols: int, present: bytes, rows: bytes, *, extra: bytes = b"", present_after: bytes | None = None
) -> bytes:
    """A v2 rows event body (WRITE/DELETE; UPDATE when ``present_after`` is given)."""
    body = table_id.to_bytes(6, "little") + b"\x01\x00" + struct.pack("<H", 2 + len(extra)) + extra
    body += encode_packed_int(ncols) + present + (present_after if present_after is not None else b"")
    return body + rows


class Typed(NamedTuple):
    """Force a JSONB integer type: 0x05 int16, 0x06 uint16, 0x07 int32, 0x08 uint32, 0x09 int64, 0x0a u64."""

    type_byte: int
    value: int


class Opaque(NamedTuple):
    type_code: int
    data: bytes


def encode(value: Any, large: bool = False) -> bytes:
    t, data = payload(value, large)
    return bytes([t]) + data


def packed_datetime(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> bytes:
    ymd = ((y * 13 + mo) << 5) | d
    hms = (h << 12) | (mi << 6) | s
    return struct.pack("<q", (((ymd << 17) | hms) << 24) | us)


def packed_time(negative: bool, h: int, mi: int, s: int, us: int = 0) -> bytes:
    v = (((h << 12) | (mi << 6) | s) << 24) | us
    return struct.pack("<q", -v if negative else v)


WIDE = Context(prec=100)  # the default 28-digit context would round 65-digit decimals


def encode_decimal(value: Decimal, precision: int, scale: int) -> bytes:
    """MySQL decimal2bin: 9 digits per 4 bytes, leftover digits in shorter words, sign in the top bit."""
    quantized = value.quantize(Decimal(1).scaleb(-scale, context=WIDE), context=WIDE)
    sign, digits, exponent = quantized.as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    if scale:
        text = text.rjust(scale + 1, "0")
        int_text, frac_text = text[:-scale], text[-scale:]
    else:
        int_text, frac_text = text, ""
    intg = precision - scale
    int_text = int_text.lstrip("0").rjust(intg, "0")
    assert len(int_text) == intg, "value does not fit the precision"
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(int_text[:lead]).to_bytes(DIG2BYTES[lead], "big")
    for i in range(lead, intg, 9):
        out += int(int_text[i : i + 9]).to_bytes(4, "big")
    full = scale - scale % 9
    for i in range(0, full, 9):
        out += int(frac_text[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac_text[full:]).to_bytes(DIG2BYTES[scale % 9], "big")
    out[0] ^= 0x80
    if sign:
        out = bytearray(b ^ 0xFF for b in out)
    return bytes(out)


def encode_fraction(usec: int, fsp: int) -> bytes:
    nbytes = (fsp + 1) // 2
    if not nbytes:
        return b""
    return (usec // FRAC_DIV[nbytes]).to_bytes(nbytes, "big")


def truncate_usec(usec: int, fsp: int) -> int:
    unit: int = 10 ** (6 - fsp)
    return usec - usec % unit


def encode_datetime2(dt: datetime.datetime, fsp: int) -> bytes:
    ymd = ((dt.year * 13 + dt.month) << 5) | dt.day
    hms = (dt.hour << 12) | (dt.minute << 6) | dt.second
    intpart = (ymd << 17) | hms
    return (intpart + 0x8000000000).to_bytes(5, "big") + encode_fraction(dt.microsecond, fsp)


def encode_timestamp2(seconds: int, usec: int, fsp: int) -> bytes:
    return seconds.to_bytes(4, "big") + encode_fraction(usec, fsp)


def encode_time2(negative: bool, hour: int, minute: int, second: int, usec: int, fsp: int) -> bytes:
    """my_time_packed_to_binary: C semantics (arithmetic shift for the integer part, truncating remainder)."""
    packed = (((hour << 12) | (minute << 6) | second) << 24) + usec
    if negative:
        packed = -packed
    nbytes = (fsp + 1) // 2
    int_part = packed >> 24
    frac = abs(packed) & 0xFFFFFF
    frac = -frac if packed < 0 else frac  # C's % keeps the sign of the dividend
    if nbytes == 0:
        return (int_part + 0x800000).to_bytes(3, "big")
    if nbytes == 1:
        return (int_part + 0x800000).to_bytes(3, "big") + ((frac // 10000) & 0xFF).to_bytes(1, "big")
    if nbytes == 2:
        return (int_part + 0x800000).to_bytes(3, "big") + ((frac // 100) & 0xFFFF).to_bytes(2, "big")
    return (packed + 0x800000000000).to_bytes(6, "big")


def encode_date(year: int, month: int, day: int) -> bytes:
    return (day | month << 5 | year << 9).to_bytes(3, "little")


CI = os.environ.get("CI") == "true"


NO_EXTENSIONS = os.environ.get("MYBINLOG_NO_EXTENSIONS", "").strip() not in ("", "0")


def require_speedups() -> None:
    """The compiled core must be loaded: skip in the MYBINLOG_NO_EXTENSIONS pass, fail under CI=true without it."""
    if _accel.speedups is not None:
        return
    if NO_EXTENSIONS:
        pytest.skip("MYBINLOG_NO_EXTENSIONS is set: this pass tests the pure-Python decoder")
    reason = (
        f"the compiled core is not loaded: {_accel.describe()}; build it with "
        "`.venv/bin/python -m pip install --no-deps -e .` (needs gcc and the Python headers: bash scripts/setup.sh)"
    )
    if CI:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


# --- values

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


FRAC_DIV = (1, 10000, 100, 1)


# --- binary JSON

INT_FORMATS = {0x05: "<h", 0x06: "<H", 0x07: "<i", 0x08: "<I", 0x09: "<q", 0x0A: "<Q"}


def varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def mysql_key_order(key: str) -> tuple[int, bytes]:
    raw = key.encode()
    return len(raw), raw


def scalar(value: Any) -> tuple[int, bytes]:
    """(type byte, payload) of a non-container value."""
    if value is None:
        return 0x04, b"\x00"
    if value is True:
        return 0x04, b"\x01"
    if value is False:
        return 0x04, b"\x02"
    if isinstance(value, Typed):
        return value.type_byte, struct.pack(INT_FORMATS[value.type_byte], value.value)
    if isinstance(value, int):
        if -(2**15) <= value < 2**15:
            return 0x05, struct.pack("<h", value)
        if -(2**31) <= value < 2**31:
            return 0x07, struct.pack("<i", value)
        if -(2**63) <= value < 2**63:
            return 0x09, struct.pack("<q", value)
        return 0x0A, struct.pack("<Q", value)
    if isinstance(value, float):
        return 0x0B, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return 0x0C, varlen(len(raw)) + raw
    if isinstance(value, Opaque):
        return 0x0F, bytes([value.type_code]) + varlen(len(value.data)) + value.data
    raise TypeError(value)


def inlined(type_byte: int, large: bool) -> bool:
    return type_byte in (0x04, 0x05, 0x06) or (large and type_byte in (0x07, 0x08))


def payload(value: Any, large: bool) -> tuple[int, bytes]:
    if isinstance(value, dict):
        items: list[tuple[str | None, Any]] = [(k, value[k]) for k in sorted(value, key=mysql_key_order)]
        return container(items, True, large)
    if isinstance(value, list):
        return container([(None, v) for v in value], False, large)
    return scalar(value)


def container(items: list[tuple[str | None, Any]], is_object: bool, large: bool) -> tuple[int, bytes]:
    osz = 4 if large else 2
    ofmt = "<I" if large else "<H"
    n = len(items)
    header = 2 * osz + n * ((osz + 2) if is_object else 0) + n * (1 + osz)
    keys = b""
    key_entries = b""
    if is_object:
        for key, _ in items:
            assert key is not None
            raw = key.encode()
            key_entries += struct.pack(ofmt, header + len(keys)) + struct.pack("<H", len(raw))
            keys += raw
    values = b""
    value_entries = b""
    for _, v in items:
        t, data = payload(v, large)
        if inlined(t, large):
            value_entries += bytes([t]) + data.ljust(osz, b"\x00")
        else:
            value_entries += bytes([t]) + struct.pack(ofmt, header + len(keys) + len(values))
            values += data
    size = header + len(keys) + len(values)
    body = struct.pack(ofmt, n) + struct.pack(ofmt, size) + key_entries + value_entries + keys + values
    assert len(body) == size
    type_byte = (0x00 if is_object else 0x02) | (1 if large else 0)
    return type_byte, body
