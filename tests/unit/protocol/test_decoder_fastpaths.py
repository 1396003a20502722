"""The decoder's fast paths give exactly what the general code gives, and errors name their table.

* :meth:`EventDecoder.decode_batch` (inline TABLE_MAP, rows and ANNOTATE_ROWS handling) against the per-type
  handlers (``_decode_one``) on every binlog file of the corpus and on hand-built events: same events, same
  field values, same rows, same errors at the same place.
* The generated row decoders (fused fixed-width columns, inline DECIMAL / DATETIME2 / TIMESTAMP2, a no-NULL
  branch) against the value functions of ``_values`` applied column by column, for random layouts and values
  (zero dates, extremes, NULLs), and on truncated images.
* :class:`DecodeError` raised for a TABLE_MAP, a rows event or the lazy ``RowsEvent.rows`` carries ``schema``
  and ``table``.
* The fast JSON Lines formatter gives the same text as ``json.dumps`` of the documented objects.
"""

from __future__ import annotations

import datetime
import decimal
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mybinlog.errors import DecodeError
from mybinlog.protocol import _values
from mybinlog.protocol._constants import MISSING, ColumnType, EventType
from mybinlog.protocol._decoder import EventDecoder
from mybinlog.protocol._events import Event, RowsEvent, TableMapEvent
from mybinlog.protocol._format import _json_default, event_to_json
from mybinlog.protocol._jsonb import JsonDiff, JsonOpaque
from mybinlog.protocol._table import SIGNEDNESS_TYPES
from tests.builders import (
    encode_datetime2,
    encode_decimal,
    encode_packed_int,
    encode_timestamp2,
    event,
    mariadb_decoder,
    mysql_decoder,
    optional,
    rows_body,
    table_map_body,
)
from tests.corpus import binlog_files

CT = ColumnType

# ----------------------------------------------------------------------------------------------------------
# decode_batch == per-event handlers, on the corpus
# ----------------------------------------------------------------------------------------------------------


def _split(data: bytes) -> tuple[list[bytes], list[int]]:
    raws: list[bytes] = []
    offsets: list[int] = []
    pos = 4
    while pos + 19 <= len(data):
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        if size < 19 or pos + size > len(data):
            break
        raws.append(data[pos : pos + size])
        offsets.append(pos)
        pos += size
    return raws, offsets


def _snapshot(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"class": type(event).__name__}
    for cls in type(event).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name in ("_rows", "table", "events") or name.startswith("__"):
                continue
            out[name] = getattr(event, name)
    if isinstance(event, (RowsEvent, TableMapEvent)):
        out["table"] = (event.table.schema, event.table.name, event.table.column_count)
    if isinstance(event, RowsEvent):
        try:
            out["rows"] = [repr(r) for r in event.rows]
        except DecodeError as exc:
            out["rows"] = f"{type(exc).__name__}: {exc}"
    return out


def _decode_all(raws: list[bytes], offsets: list[int], batch: bool, chunk: int) -> tuple[list[Any], str | None]:
    dec = EventDecoder(file="f")
    events: list[Event] = []
    try:
        if batch:
            for i in range(0, len(raws), chunk):
                dec.decode_batch(raws[i : i + chunk], events, offsets[i : i + chunk])
        else:
            for raw, offset in zip(raws, offsets, strict=True):
                events.append(dec._decode_one(raw, offset))
    except DecodeError as exc:
        return [_snapshot(e) for e in events], f"{type(exc).__name__}: {exc} {exc.schema} {exc.table}"
    return [_snapshot(e) for e in events], None


CORPUS_FILES = [p for p in binlog_files() if not p.name.endswith((".sql", ".txt"))]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_batch_decoding_equals_the_handlers_on_the_corpus(path: Path) -> None:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        import gzip

        data = gzip.decompress(data)
    raws, offsets = _split(data)
    expected = _decode_all(raws, offsets, batch=False, chunk=0)
    assert _decode_all(raws, offsets, batch=True, chunk=64) == expected
    assert _decode_all(raws, offsets, batch=True, chunk=1) == expected


def test_batch_decoding_keeps_the_events_before_an_error() -> None:
    dec = mysql_decoder()
    good = event(EventType.XID_EVENT, struct.pack("<Q", 1), crc=True)
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    out: list[Event] = []
    with pytest.raises(DecodeError, match="CRC32 mismatch"):
        dec.decode_batch([good, good, bytes(bad), good], out, [100, 200, 300, 400])
    assert [e.offset for e in out] == [100, 200]


def test_network_mode_offsets_and_files_follow_rotates() -> None:
    """network=True: offsets from log_pos, file from ROTATE (also across ROTATEs inside one batch)."""
    dec = EventDecoder(network=True, file="a.000001")
    fake_rotate = event(EventType.ROTATE_EVENT, struct.pack("<Q", 4) + b"a.000002", flags=0x20)
    xid = event(EventType.XID_EVENT, struct.pack("<Q", 1), log_pos=500)
    rotate = event(EventType.ROTATE_EVENT, struct.pack("<Q", 4) + b"a.000003", log_pos=600)
    out: list[Event] = []
    dec.decode_batch([xid, fake_rotate, xid, rotate, xid], out)
    assert [(e.file, e.offset) for e in out] == [
        ("a.000001", 500 - len(xid)),
        ("a.000002", None),  # artificial: no offset, names the file the dump is in
        ("a.000002", 500 - len(xid)),
        ("a.000002", 600 - len(rotate)),  # a real ROTATE belongs to the file it ends
        ("a.000003", 500 - len(xid)),
    ]


# ----------------------------------------------------------------------------------------------------------
# generated row decoders == the value functions, column by column
# ----------------------------------------------------------------------------------------------------------

# (type, meta, unsigned) of the columns the generator handles specially, plus a few it does not
_INTS: dict[int, int] = {CT.TINY: 1, CT.SHORT: 2, CT.LONG: 4, CT.LONGLONG: 8}


@st.composite
def _column(draw: st.DrawFn) -> tuple[int, int, bool]:
    kind = draw(
        st.sampled_from(
            ["int", "int", "float", "double", "year", "int24", "decimal", "datetime2", "timestamp2", "varchar"]
        )
    )
    unsigned = draw(st.booleans())
    if kind == "int":
        return draw(st.sampled_from(list(_INTS))), 0, unsigned
    if kind == "float":
        return CT.FLOAT, 4, False
    if kind == "double":
        return CT.DOUBLE, 8, False
    if kind == "year":
        return CT.YEAR, 0, False
    if kind == "int24":
        return CT.INT24, 0, unsigned
    if kind == "decimal":
        precision = draw(st.integers(1, 65))
        scale = draw(st.integers(0, min(30, precision)))
        return CT.NEWDECIMAL, precision << 8 | scale, False
    if kind in ("datetime2", "timestamp2"):
        return (CT.DATETIME2 if kind == "datetime2" else CT.TIMESTAMP2), draw(st.integers(0, 6)), False
    return CT.VARCHAR, 40, False


def _value(draw: st.DrawFn, col: tuple[int, int, bool]) -> bytes:
    t, meta, unsigned = col
    if t in _INTS:
        size = _INTS[t]
        lo, hi = (0, 2 ** (8 * size) - 1) if unsigned else (-(2 ** (8 * size - 1)), 2 ** (8 * size - 1) - 1)
        return draw(st.integers(lo, hi)).to_bytes(size, "little", signed=not unsigned)
    if t == CT.INT24:
        lo, hi = (0, 2**24 - 1) if unsigned else (-(2**23), 2**23 - 1)
        return draw(st.integers(lo, hi)).to_bytes(3, "little", signed=not unsigned)
    if t == CT.FLOAT:
        return struct.pack("<f", draw(st.floats(width=32, allow_nan=False)))
    if t == CT.DOUBLE:
        return struct.pack("<d", draw(st.floats(allow_nan=False)))
    if t == CT.YEAR:
        return bytes([draw(st.integers(0, 255))])
    if t == CT.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        digits = draw(st.integers(0, 10**precision - 1))
        sign = draw(st.sampled_from([1, -1]))
        value = decimal.Decimal(sign * digits).scaleb(-scale, decimal.Context(prec=100))
        return encode_decimal(value, precision, scale)
    if t == CT.DATETIME2:
        if draw(st.integers(0, 9)) == 0:  # zero or invalid dates: text
            year, month, day = draw(st.sampled_from([(0, 0, 0), (2020, 0, 15), (2021, 2, 31), (0, 1, 1)]))
            ym = year * 13 + month
            packed = ((ym << 5 | day) << 17) + 0x8000000000
            return packed.to_bytes(5, "big") + bytes(_values._FSP_BYTES[meta])
        dt = draw(st.datetimes(datetime.datetime(1000, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59)))
        return encode_datetime2(dt, meta)
    if t == CT.TIMESTAMP2:
        seconds = draw(st.sampled_from([0, 1, 2**31 - 1]) | st.integers(0, 2**32 - 1))
        return encode_timestamp2(seconds, draw(st.integers(0, 999_999)), meta)
    text = draw(st.text(max_size=10)).encode()[:40]
    return bytes([len(text)]) + text


def _reference(col: tuple[int, int, bool], buf: bytes, pos: int) -> tuple[Any, int]:
    """One value by the functions of _values (what the generated code must agree with)."""
    t, meta, unsigned = col
    if t in _INTS:
        return _values.decode_integer(buf, pos, t, unsigned)
    if t == CT.INT24:
        return _values.decode_integer(buf, pos, 9, unsigned)
    if t == CT.FLOAT:
        return struct.unpack_from("<f", buf, pos)[0], pos + 4
    if t == CT.DOUBLE:
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if t == CT.YEAR:
        return _values.decode_year(buf, pos)
    if t == CT.NEWDECIMAL:
        return _values.decode_decimal(buf, pos, meta >> 8, meta & 0xFF)
    if t == CT.DATETIME2:
        return _values.decode_datetime2(buf, pos, meta)
    if t == CT.TIMESTAMP2:
        return _values.decode_timestamp2(buf, pos, meta)
    n = buf[pos]
    return buf[pos + 1 : pos + 1 + n].decode("utf-8"), pos + 1 + n


def _table_event(cols: list[tuple[int, int, bool]]) -> bytes:
    types = [t for t, _, _ in cols]
    metas = [m if t not in _INTS and t not in (CT.INT24, CT.YEAR) else 0 for t, m, _ in cols]
    body = table_map_body(9, "db", "t", types, metas)
    numeric = [(t, u) for t, _, u in cols if t in SIGNEDNESS_TYPES]  # YEAR too (both servers)
    bits = 0
    for k, (_t, u) in enumerate(numeric):
        if u:
            bits |= 0x80 >> (k % 8) << (8 * (k // 8))
    signedness = bits.to_bytes((len(numeric) + 7) // 8, "little") if numeric else b""
    charset = optional(2, encode_packed_int(45))  # DEFAULT_CHARSET utf8mb4_general_ci
    return event(EventType.TABLE_MAP_EVENT, body + optional(1, signedness) + charset, crc=True)


def _bitmap(bits: list[bool]) -> bytes:
    return sum(1 << i for i, b in enumerate(bits) if b).to_bytes((len(bits) + 7) // 8, "little")


@st.composite
def _tables(draw: st.DrawFn) -> tuple[list[tuple[int, int, bool]], list[tuple[list[bool], list[bytes]]]]:
    cols = draw(st.lists(_column(), min_size=1, max_size=12))
    rows = []
    for _ in range(draw(st.integers(1, 3))):
        nulls = (
            draw(st.lists(st.booleans(), min_size=len(cols), max_size=len(cols)))
            if draw(st.booleans())
            else [False] * len(cols)
        )
        rows.append((nulls, [b"" if null else _value(draw, c) for c, null in zip(cols, nulls, strict=True)]))
    return cols, rows


@settings(max_examples=300, deadline=None)
@given(_tables(), st.data())
def test_generated_row_decoder_equals_the_value_functions(
    case: tuple[list[tuple[int, int, bool]], list[tuple[list[bool], list[bytes]]]], data: st.DataObject
) -> None:
    cols, rows = case
    image = b"".join(_bitmap(nulls) + b"".join(values) for nulls, values in rows)
    expected: list[tuple[Any, ...]] = []
    for nulls, values in rows:
        row_bytes = b"".join(values)
        pos = 0
        row: list[Any] = []
        for col, null in zip(cols, nulls, strict=True):
            if null:
                row.append(None)
            else:
                value, pos = _reference(col, row_bytes, pos)
                row.append(value)
        expected.append(tuple(row))
    dec = mariadb_decoder()
    dec.decode(_table_event(cols))
    ncols = len(cols)
    present = b"\xff" * ((ncols + 7) // 8)
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(9, ncols, present, image), crc=True))
    assert isinstance(ev, RowsEvent)
    got = ev.rows
    assert [tuple(map(repr, r)) for r in got] == [tuple(map(repr, r)) for r in expected]
    # a cut image fails with a DecodeError naming the table, never a stray exception or wrong values
    cut = data.draw(st.integers(0, len(image) - 1))
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(9, ncols, present, image[:cut]), crc=True))
    error: DecodeError | None = None
    partial: list[Any] = []
    try:
        partial = ev.rows  # type: ignore[attr-defined]
    except DecodeError as exc:
        error = exc
    if error is not None:
        assert (error.schema, error.table) == ("db", "t")
    else:  # the cut fell between rows
        assert [tuple(map(repr, r)) for r in partial] == [tuple(map(repr, r)) for r in expected[: len(partial)]]
        assert len(partial) < len(expected)


# ----------------------------------------------------------------------------------------------------------
# errors name their table
# ----------------------------------------------------------------------------------------------------------


def test_decode_error_of_lazy_rows_names_the_table() -> None:
    dec = mysql_decoder(file="binlog.000003")
    dec.decode(event(EventType.TABLE_MAP_EVENT, table_map_body(5, "shop", "orders", [CT.LONG], [0]), crc=True))
    ev = dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 1, b"\x01", b"\x00\x01"), crc=True), 700)
    with pytest.raises(DecodeError) as info:
        ev.rows  # type: ignore[attr-defined]  # noqa: B018
    err = info.value
    assert (err.schema, err.table, err.file, err.offset) == ("shop", "orders", "binlog.000003", 700)
    assert "`shop`.`orders`" in str(err)


def test_decode_error_of_a_rows_event_names_the_table() -> None:
    dec = mysql_decoder()
    dec.decode(event(EventType.TABLE_MAP_EVENT, table_map_body(5, "shop", "orders", [CT.LONG], [0]), crc=True))
    with pytest.raises(DecodeError, match="has 2 columns") as info:
        dec.decode(event(EventType.WRITE_ROWS_EVENT, rows_body(5, 2, b"\x03", b""), crc=True), 800)
    assert (info.value.schema, info.value.table, info.value.offset) == ("shop", "orders", 800)


def test_decode_error_of_a_table_map_names_the_table() -> None:
    body = table_map_body(5, "shop", "orders", [CT.LONG, CT.VARCHAR], [0, 40])
    broken = body.replace(bytes([CT.VARCHAR]), b"\x63")  # an unknown column type: metadata does not add up
    with pytest.raises(DecodeError, match="TABLE_MAP metadata") as info:
        mysql_decoder().decode(event(EventType.TABLE_MAP_EVENT, broken, crc=True), 900)
    assert (info.value.schema, info.value.table) == ("shop", "orders")
    truncated = body[: body.index(b"orders") + 8]  # names, then the column count, then nothing
    with pytest.raises(DecodeError) as info:
        mysql_decoder().decode(event(EventType.TABLE_MAP_EVENT, truncated, crc=True), 900)
    assert (info.value.schema, info.value.table) == ("shop", "orders")


def test_decode_error_without_a_table_has_none() -> None:
    data = bytearray(event(EventType.XID_EVENT, struct.pack("<Q", 9), crc=True))
    data[-1] ^= 0xFF
    with pytest.raises(DecodeError) as info:
        mysql_decoder().decode(bytes(data), 50)
    assert (info.value.schema, info.value.table) == (None, None)
    assert DecodeError("x", schema="a", table="b").for_table("c", "d").table == "b"


# ----------------------------------------------------------------------------------------------------------
# JSON Lines: the text formatter equals json.dumps of the documented objects
# ----------------------------------------------------------------------------------------------------------


def _documented(event: Event) -> str:
    """The JSON object of docs/dump-format.md built as a dict and encoded by json.dumps."""
    from mybinlog.protocol._format import event_fields

    d: dict[str, Any] = {
        "type": event.type_name, "type_code": event.type_code, "file": event.file, "offset": event.offset,
        "log_pos": event.log_pos, "timestamp": event.timestamp, "server_id": event.server_id,
        "size": event.size, "flags": event.flags,
    }  # fmt: skip
    if event.in_payload:
        d["in_payload"] = True
    d.update(event_fields(event))
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("path", [p for p in CORPUS_FILES if p.stat().st_size < 3_000_000], ids=lambda p: p.name)
def test_json_lines_text_equals_json_dumps(path: Path) -> None:
    from mybinlog.source._files import read_binlog_file

    n = 0
    broken = False
    try:
        for ev in read_binlog_file(path):
            try:
                expected = _documented(ev)
            except DecodeError:
                continue
            assert event_to_json(ev) == expected
            n += 1
    except DecodeError:
        broken = True  # the deliberately broken files: the events before the error were compared
    assert n or broken


_ODD_VALUES: list[Any] = [
    None, MISSING, 0, -1, 2**64 - 1, 1.5, float("nan"), float("inf"), -0.0, "", 'quote " back \\ \n tab \t é',
    b"\x00\xff", bytearray(b"ab"), decimal.Decimal("-0.50"), datetime.date(2020, 1, 2),
    datetime.datetime(2020, 1, 2, 3, 4, 5, 6), datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC),
    datetime.timedelta(hours=-838, seconds=1), frozenset({"b", "a"}), "0000-00-00 00:00:00", {"k": [1, "v"]},
    [JsonDiff("REPLACE", "$.a", decimal.Decimal("1.5"))], JsonOpaque(246, b"\x01"), True,
]  # fmt: skip


@pytest.mark.parametrize(
    "type_code", sorted({1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 15, 16, 17, 18, 245, 246, 247, 248, 252, 253, 254, 255})
)
def test_json_row_formatter_handles_any_value_in_any_column(type_code: int) -> None:
    from mybinlog.protocol._format import _row, _row_formatter

    fmt = _row_formatter((type_code,) * len(_ODD_VALUES))
    row = tuple(_ODD_VALUES)
    assert fmt(row) == json.dumps(_row(row), ensure_ascii=False, separators=(",", ":"))
    assert json.loads(fmt(row))[1] == {"$missing": True}
    with pytest.raises(TypeError):
        _json_default(object())


@pytest.mark.parametrize("ncols", [0, 1, 8, 9, 16, 250])
def test_fast_rows_path_matches_the_handler_for_any_column_count(ncols: int) -> None:
    """Bitmap widths around the one-byte boundary, up to the largest one-byte column count, and a (corrupt)
    table without columns."""
    types = [CT.TINY] * ncols
    body = table_map_body(3, "db", "w", types, [0] * ncols, b"\x00" * ((ncols + 7) // 8))
    tm = event(EventType.TABLE_MAP_EVENT, body, crc=True)
    nb = (ncols + 7) // 8
    image = b"\x00" * nb + bytes(range(ncols % 256)) if ncols else b""
    body = rows_body(3, ncols, b"\xff" * nb, image)
    raws = [
        tm,
        event(EventType.WRITE_ROWS_EVENT, body, crc=True),
        event(
            EventType.UPDATE_ROWS_EVENT,
            rows_body(3, ncols, b"\xff" * nb, image + image, present_after=b"\xff" * nb),
            crc=True,
        ),
    ]
    fast: list[Event] = []
    mysql_decoder().decode_batch(raws, fast, [100, 200, 300])
    slow_decoder = mysql_decoder()
    slow = [slow_decoder._decode_one(r, o) for r, o in zip(raws, [100, 200, 300], strict=True)]
    assert [_snapshot(e) for e in fast] == [_snapshot(e) for e in slow]
