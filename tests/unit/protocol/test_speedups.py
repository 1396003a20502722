"""The compiled core's row programs (mybinlog/protocol/_sp_rows.c) and the pure-Python decoder give identical results.

* Property tests build random table layouts (every column type ``_table._column_op`` handles, random metadata,
  charsets, ENUM/SET values or none), random present bitmaps (MINIMAL images), update pairs, NULLs and values
  (valid ones, MySQL's zero and invalid dates, out-of-range DECIMAL groups, invalid text, truncated images,
  images overrunning their event, flipped bytes, fully random bytes) and decode them with the compiled
  ``RowProgram`` and with the generated pure-Python decoder. Whenever Python decodes, C must decode too (it does
  not give up on a value Python can decode: the fast path is really taken) and give the same rows, value for
  value (type and repr, so NaN and -0.0 compare exactly); whenever Python raises, C must give up (return None)
  and ``_compile``'s decoder must raise the same error.
* ``RowProgram.render_json`` (the dump's rows straight from the row images) writes exactly the pure-Python
  renderer's text of the rows the pure-Python decoder gives, or gives up (None); it never writes text for an
  image Python cannot decode, and it does write the plain values (numbers, temporal types, DECIMAL, UTF-8 text,
  binary strings, ENUM) of well-formed images.
* Every rows event of the binlog corpus decodes to the same rows with both implementations.
* ``_compile`` returns the compiled-core decoder when the extension is there, the pure-Python one otherwise;
  ``mybinlog.implementation()`` and ``mybinlog --version`` say which one runs.

The C-versus-Python tests need the extension: skipped when it is not built (failed under CI=true, where it must
be), and in the pass that scripts/test.sh runs with MYBINLOG_NO_EXTENSIONS=1 (that pass tests pure Python).
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import random
import struct
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mybinlog
from mybinlog.errors import DecodeError
from mybinlog.protocol import _accel, _format, _table
from mybinlog.protocol._constants import COLLATION_CODECS, MISSING, ColumnType, collation_codec
from mybinlog.protocol._events import RowsEvent
from mybinlog.protocol._table import ColumnInfo, TableMap
from mybinlog.source._files import read_binlog_file
from tests.builders import (
    CI,
    NO_EXTENSIONS,
    encode_date,
    encode_decimal,
    encode_fraction,
    encode_time2,
    require_speedups,
    truncate_usec,
)
from tests.builders import encode as encode_jsonb
from tests.corpus import binlog_files

T = ColumnType
REPO = Path(__file__).resolve().parents[3]

# what TableMap.decode_rows turns into a located DecodeError: the only exceptions a row decoder may raise
DECODE_FAILURES = (DecodeError, IndexError, struct.error, ValueError, UnicodeDecodeError, OverflowError, KeyError)


# ----------------------------------------------------------------------------------------------------------
# Comparing results
# ----------------------------------------------------------------------------------------------------------


def difference(a: Any, b: Any, path: str = "rows") -> str | None:
    """Where ``a`` and ``b`` differ (type, length or repr), or None when they are the same value for value."""
    if a is MISSING or b is MISSING:
        return None if a is b else f"{path}: {a!r} != {b!r}"
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(a, frozenset):  # a SET value: iteration order is not part of the value
        return None if a == b else f"{path}: {a!r} != {b!r}"
    # repr: exact for floats (nan, -0.0), Decimal exponents, datetimes' tzinfo, JSON documents
    return None if repr(a) == repr(b) else f"{path}: {a!r} != {b!r}"


def test_difference_sees_what_equality_hides() -> None:
    nan = float("nan")
    assert difference([(nan, MISSING)], [(nan, MISSING)]) is None
    assert difference([(0.0,)], [(-0.0,)]) is not None
    assert difference([(Decimal("1.0"),)], [(Decimal("1.00"),)]) is not None
    assert difference([(1,)], [(True,)]) is not None
    assert difference([(MISSING,)], [(None,)]) is not None
    assert difference([(frozenset("ab"),)], [(frozenset("ba"),)]) is None
    utc = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    assert difference([(utc,)], [(utc.replace(tzinfo=None),)]) is not None


def check_same(
    table: TableMap, mode: int, present: int, present_after: int, buf: bytes, pos: int, end: int, *, supported: bool
) -> tuple[bool, bool]:
    """Decode with both implementations and check the contract; returns (Python decoded, C decoded)."""
    try:
        python_fn = _table._compile_python(table, mode, present, present_after)
    except DecodeError:
        assert not supported, "the pure-Python compiler rejected a layout the test considers supported"
        assert _table._program(table, mode, present, present_after) is None
        return False, False
    expected: list[Any] | None = None
    error: BaseException | None = None
    try:
        expected = python_fn(buf, pos, end)
    except DECODE_FAILURES as exc:
        error = exc
    program = _table._program(table, mode, present, present_after)
    if supported:
        assert program is not None, "the compiled core refused a layout of columns it handles"
    if program is None:
        return error is None, False
    got = program.decode(buf, pos, end)  # never raises: it gives up with None
    if error is not None:
        assert got is None, f"Python raised {error!r} but C decoded {got!r}"
    else:
        assert got is not None, f"C gave up on an image Python decodes: {expected!r}"
        found = difference(got, expected)
        assert found is None, found
    # what users get: the decoder _compile returns (C, or Python again when C gives up), errors included
    decoder = _table._compile(table, mode, present, present_after)
    if error is None:
        assert difference(decoder(buf, pos, end), expected) is None
    else:
        with pytest.raises(type(error)) as raised:
            decoder(buf, pos, end)
        assert str(raised.value) == str(error)
    return error is None, got is not None


def rendered_in_python(table: TableMap, mode: int, rows: list[Any]) -> str:
    """The pure-Python renderer's text of decoded rows, as in a rows event's ``"rows":[...]``."""
    fmt = _format._table_json(table)[4]
    if mode == 1:
        return ",".join(f'{{"before":{fmt(before)},"after":{fmt(after)}}}' for before, after in rows)
    return ",".join(map(fmt, rows))


def check_render(table: TableMap, mode: int, present: int, present_after: int, buf: bytes, pos: int, end: int) -> bool:
    """``render_json`` writes the pure-Python renderer's text of the pure-Python decoder's rows, or None (always
    None when Python cannot decode them); returns whether it wrote them."""
    program = _table._program(table, mode, present, present_after)
    if program is None:
        return False
    text = program.render_json(buf, pos, end)  # never raises: it gives up with None
    try:
        rows = _table._compile_python(table, mode, present, present_after)(buf, pos, end)
    except DECODE_FAILURES:
        rows = None
    if rows is None:
        assert text is None, f"Python cannot decode these rows but render_json wrote {text!r}"
        return False
    if text is None:
        return False
    assert text.decode("utf-8") == rendered_in_python(table, mode, rows)
    return True


# ----------------------------------------------------------------------------------------------------------
# Random table layouts
# ----------------------------------------------------------------------------------------------------------

# None: no charset in the table map (binlog_row_metadata=MINIMAL); 63 binary; cp1252 (latin1), utf-8 (utf8mb3,
# utf8mb4), ascii, utf-16-be (ucs2), utf-16-le, utf-32-be, gbk, cp932, koi8_r, and an id unknown to mybinlog
CHARSETS = (None, 63, 8, 33, 45, 255, 11, 35, 56, 60, 28, 95, 7, 4242)
INTS = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}
BLOBS = (T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB)
KINDS = (
    "int", "float", "double", "year", "decimal", "datetime2", "timestamp2", "time2", "date", "time", "datetime",
    "timestamp", "bit", "enum", "set", "varchar", "char", "blob", "json", "geometry", "vector", "null",
)  # fmt: skip


def string_meta(real_type: int, length: int) -> int:
    """TABLE_MAP metadata of a STRING/ENUM/SET column (lengths over 255 borrow two bits of the type byte)."""
    return (real_type ^ ((length >> 8 & 3) << 4)) << 8 | (length & 0xFF)


@st.composite
def column(draw: st.DrawFn, index: int, unusual: bool = False, kind: str | None = None) -> tuple[ColumnInfo, bool]:
    """A random column (of ``kind`` when given) and whether the compiled core must handle it (``unusual``: with
    metadata it may refuse)."""
    if kind is None:
        kind = draw(st.sampled_from(KINDS))
    supported = True
    charset = draw(st.sampled_from(CHARSETS))
    if kind == "int":
        code = draw(st.sampled_from(sorted(INTS)))
        col = ColumnInfo(index, code, 0, True)
        col.unsigned = draw(st.sampled_from([None, False, True]))
    elif kind in ("float", "double"):
        col = ColumnInfo(index, T.FLOAT if kind == "float" else T.DOUBLE, 4 if kind == "float" else 8, True)
        col.unsigned = draw(st.sampled_from([None, False, True]))
    elif kind == "year":
        col = ColumnInfo(index, T.YEAR, 0, True)
    elif kind == "decimal":
        precision = draw(st.integers(1, 65))
        scale = draw(st.integers(0, min(30, precision)))
        if unusual and draw(st.integers(0, 9)) == 0:  # corrupt metadata: pure Python decodes (and raises)
            precision, scale = draw(st.sampled_from([(0, 0), (66, 2), (5, 6), (40, 31)]))
            supported = False
        col = ColumnInfo(index, T.NEWDECIMAL, precision << 8 | scale, True)
    elif kind in ("datetime2", "timestamp2", "time2"):
        fsp = draw(st.integers(0, 6))
        if unusual and draw(st.integers(0, 9)) == 0:
            fsp, supported = draw(st.integers(7, 255)), False
        code = {"datetime2": T.DATETIME2, "timestamp2": T.TIMESTAMP2, "time2": T.TIME2}[kind]
        col = ColumnInfo(index, code, fsp, True)
    elif kind == "date":
        col = ColumnInfo(index, draw(st.sampled_from([T.DATE, T.NEWDATE])), 0, True)
    elif kind in ("time", "datetime", "timestamp"):
        col = ColumnInfo(index, {"time": T.TIME, "datetime": T.DATETIME, "timestamp": T.TIMESTAMP}[kind], 0, True)
    elif kind == "bit":
        nbytes, nbits = draw(st.integers(0, 8)), draw(st.integers(0, 7))
        if nbytes == 0 and nbits == 0:
            nbits = 1
        col = ColumnInfo(index, T.BIT, nbits << 8 | nbytes, True)
    elif kind in ("enum", "set"):
        real = T.ENUM if kind == "enum" else T.SET
        pack = draw(st.sampled_from([1, 2, 3]) if kind == "enum" else st.integers(1, 8))
        if draw(st.booleans()):
            col = ColumnInfo(index, T.STRING, string_meta(real, pack), True)
        else:
            col = ColumnInfo(index, real, real << 8 | pack, True)  # MariaDB's (and old) ENUM/SET type codes
        assert (col.real_type, col.length) == (real, pack)
        values = draw(st.none() | st.lists(st.text(max_size=4), max_size=12).map(tuple))
        if kind == "enum":
            col.enum_values = values
        else:
            col.set_values = values
    elif kind == "varchar":
        length = draw(st.integers(1, 300) | st.integers(256, 65535))
        col = ColumnInfo(index, draw(st.sampled_from([T.VARCHAR, T.VAR_STRING])), length, True)
        col.charset = charset
    elif kind == "char":
        length = draw(st.integers(0, 300) | st.integers(256, 1023))
        col = ColumnInfo(index, T.STRING, string_meta(T.STRING, length), True)
        assert (col.real_type, col.length) == (T.STRING, length)
        col.charset = charset
    elif kind in ("blob", "json", "geometry", "vector"):
        code = {"json": T.JSON, "geometry": T.GEOMETRY, "vector": T.VECTOR}.get(kind) or draw(st.sampled_from(BLOBS))
        lb = draw(st.integers(1, 4))
        if unusual and draw(st.integers(0, 19)) == 0:  # no such length size: neither compiler accepts it
            lb, supported = draw(st.sampled_from([0, 5, 8])), False
        col = ColumnInfo(index, code, lb, True)
        col.charset = charset if kind == "blob" else None
    else:
        col = ColumnInfo(index, T.NULL, 0, True)
    return col, supported


@st.composite
def tables(draw: st.DrawFn, unusual: bool = False, kind: str | None = None) -> tuple[TableMap, bool]:
    """A table of 1..12 random columns (about half of them of ``kind`` when given)."""
    n = draw(st.integers(1, 12))
    cols = [draw(column(i, unusual, kind if kind is not None and draw(st.booleans()) else None)) for i in range(n)]
    return TableMap("db", "t", [c for c, _ in cols], 0), all(ok for _, ok in cols)


# ----------------------------------------------------------------------------------------------------------
# Random values
# ----------------------------------------------------------------------------------------------------------


def length_prefix(n: int, size: int) -> bytes:
    return (n & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def text_bytes(draw: st.DrawFn, charset: int | None, limit: int, valid: bool) -> bytes:
    """Bytes of a string value: valid text in the column's codec, or random bytes (maybe invalid text)."""
    if not valid or charset == 63 or (charset is None and draw(st.booleans())):
        return draw(st.binary(max_size=min(limit, 40)))
    codec = collation_codec(charset) or "utf-8"
    text = draw(st.text(max_size=12))
    raw = text.encode(codec, "ignore")
    while len(raw) > limit:
        text = text[:-1]
        raw = text.encode(codec, "ignore")
    return raw


def json_values() -> st.SearchStrategy[Any]:
    scalars = (
        st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=8)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=6,
    )


def datetime2_bytes(year: int, month: int, day: int, hms: tuple[int, int, int], usec: int, fsp: int) -> bytes:
    """DATETIME2 from its fields as stored, including MySQL's zero and invalid dates."""
    ymd = ((year * 13 + month) << 5) | day
    intpart = (ymd << 17) | (hms[0] << 12) | (hms[1] << 6) | hms[2]
    return (intpart + 0x8000000000).to_bytes(5, "big") + encode_fraction(truncate_usec(usec, fsp), fsp)


def value_bytes(draw: st.DrawFn, col: ColumnInfo, valid: bool) -> bytes:
    """One non-NULL value of ``col`` as a row image stores it; ``valid=False``: random bytes of a likely size."""
    t = col.real_type
    fsp = col.meta if 0 <= col.meta <= 6 else 0
    nfrac = (fsp + 1) // 2
    if t in INTS:
        return draw(st.binary(min_size=INTS[t], max_size=INTS[t]))
    if t in (T.FLOAT, T.DOUBLE):
        n = 4 if t == T.FLOAT else 8
        raw = draw(st.binary(min_size=n, max_size=n))
        if draw(st.integers(0, 3)) == 0:  # a NaN with a random payload and sign
            raw = raw[:-2] + bytes([raw[-2] | (0x80 if n == 4 else 0xF0), raw[-1] | 0x7F])
        return raw
    if t == T.YEAR:
        return draw(st.binary(min_size=1, max_size=1))
    if t == T.NEWDECIMAL:
        precision, scale = col.meta >> 8, col.meta & 0xFF
        if not valid or not (1 <= precision <= 65 and scale <= min(30, precision)):
            size = _decimal_size_or(precision, scale, draw(st.integers(1, 30)))
            return draw(st.binary(min_size=size, max_size=size))
        whole = draw(st.integers(0, 10 ** (precision - scale) - 1))
        fraction = draw(st.integers(0, 10**scale - 1))
        sign = "-" if draw(st.booleans()) else ""  # includes -0 and -0.000
        text = f"{sign}{whole}.{fraction:0{scale}d}" if scale else f"{sign}{whole}"
        return encode_decimal(Decimal(text), precision, scale)
    if t == T.DATETIME2:
        if not valid:
            return draw(st.binary(min_size=5 + nfrac, max_size=5 + nfrac))
        if draw(st.integers(0, 3)) == 0:  # zero date, zero or out-of-range parts (text in both decoders)
            year, month, day = draw(st.integers(0, 9999)), draw(st.integers(0, 12)), draw(st.integers(0, 31))
        else:
            d = draw(st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31)))
            year, month, day = d.year, d.month, d.day
        hms = (draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59)))
        return datetime2_bytes(year, month, day, hms, draw(st.integers(0, 999_999)), fsp)
    if t == T.TIMESTAMP2:
        if not valid:
            return draw(st.binary(min_size=4 + nfrac, max_size=4 + nfrac))
        seconds = draw(st.sampled_from([0, 1, 2**31 - 1, 2**32 - 1]) | st.integers(0, 2**32 - 1))
        return seconds.to_bytes(4, "big") + encode_fraction(truncate_usec(draw(st.integers(0, 999_999)), fsp), fsp)
    if t == T.TIME2:
        if not valid:
            return draw(st.binary(min_size=3 + nfrac, max_size=3 + nfrac))
        hms = (draw(st.integers(0, 838)), draw(st.integers(0, 59)), draw(st.integers(0, 59)))
        usec = truncate_usec(draw(st.integers(0, 999_999)), fsp)
        return encode_time2(draw(st.booleans()), *hms, usec, fsp)
    if t in (T.DATE, T.NEWDATE):
        if not valid:
            return draw(st.binary(min_size=3, max_size=3))
        return encode_date(draw(st.integers(0, 9999)), draw(st.integers(0, 12)), draw(st.integers(0, 31)))
    if t == T.TIME:
        if not valid:
            return draw(st.binary(min_size=3, max_size=3))
        v = draw(st.integers(0, 838)) * 10000 + draw(st.integers(0, 59)) * 100 + draw(st.integers(0, 59))
        return (-v if draw(st.booleans()) else v).to_bytes(3, "little", signed=True)
    if t == T.DATETIME:
        if not valid:
            return draw(st.binary(min_size=8, max_size=8))
        ymd = draw(st.integers(0, 9999)) * 10000 + draw(st.integers(0, 12)) * 100 + draw(st.integers(0, 31))
        hms = draw(st.integers(0, 23)) * 10000 + draw(st.integers(0, 59)) * 100 + draw(st.integers(0, 59))
        return (ymd * 1_000_000 + hms).to_bytes(8, "little")
    if t == T.TIMESTAMP:
        return draw(st.binary(min_size=4, max_size=4))
    if t == T.BIT:
        n = ((col.meta & 0xFF) * 8 + (col.meta >> 8) + 7) // 8
        return draw(st.binary(min_size=n, max_size=n))
    if t in (T.ENUM, T.SET):
        values = col.enum_values if t == T.ENUM else col.set_values
        if values is None or not valid or draw(st.integers(0, 3)) == 0:
            return draw(st.binary(min_size=col.length, max_size=col.length))
        # mostly an index (ENUM, 0 and one past the end included) or bits (SET) of the known values
        top = len(values) + 1 if t == T.ENUM else (1 << len(values)) - 1
        return draw(st.integers(0, min(top, (1 << 8 * col.length) - 1))).to_bytes(col.length, "little")
    if t in (T.VARCHAR, T.VAR_STRING, T.STRING):
        size = 1 if col.length < 256 else 2
        raw = text_bytes(draw, col.charset, 255 if size == 1 else 400, valid)
        return length_prefix(len(raw), size) + raw
    if t in (T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.JSON, T.GEOMETRY, T.VECTOR):
        lb = col.meta if 1 <= col.meta <= 4 else 4
        limit = 255 if lb == 1 else 1000
        if t == T.JSON and valid:
            raw = b"" if draw(st.integers(0, 9)) == 0 else encode_jsonb(draw(json_values()), draw(st.booleans()))
        elif t == T.VECTOR and valid:
            raw = draw(st.binary(max_size=40).map(lambda b: b[: len(b) // 4 * 4]))
        elif t in (T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
            raw = text_bytes(draw, col.charset, limit, valid)
        else:
            raw = draw(st.binary(max_size=40))
        if len(raw) > limit:
            raw = raw[:limit]
        return length_prefix(len(raw), lb) + raw
    assert t == T.NULL, t
    return b""


def _decimal_size_or(precision: int, scale: int, default: int) -> int:
    try:
        return _table._decimal_layout(precision, scale)[0]
    except DecodeError:
        return default


@st.composite
def image(draw: st.DrawFn, table: TableMap, present: int, valid: bool) -> bytes:
    """One row image: the NULL bitmap of the present columns, then their non-NULL values."""
    cols = [c for c in table.columns if present >> c.index & 1]
    nulls = draw(st.sampled_from(["none", "some", "all"]))
    bits = 0
    out = b""
    for j, col in enumerate(cols):
        if nulls == "all" or (nulls == "some" and draw(st.booleans())):
            bits |= 1 << j
        else:
            out += value_bytes(draw, col, valid or draw(st.integers(0, 3)) > 0)
    nb = (len(cols) + 7) // 8
    if nb and len(cols) % 8 and draw(st.integers(0, 4)) == 0:  # the unused high bits are set: still valid
        bits |= draw(st.integers(1, 255)) << len(cols) & ((1 << 8 * nb) - 1) & ~((1 << len(cols)) - 1)
    return bits.to_bytes(nb, "little") + out


@st.composite
def present_bitmap(draw: st.DrawFn, table: TableMap) -> int:
    """Columns in an image: every one (FULL) or a random subset (MINIMAL), at least one."""
    full = (1 << table.column_count) - 1
    if draw(st.booleans()):
        return full
    return draw(st.integers(1, full))


@st.composite
def rows_events(draw: st.DrawFn, unusual: bool = False, kind: str | None = None) -> dict[str, Any]:
    """A table, its image layout and a rows event body: ``valid`` when every value decodes in pure Python."""
    table, supported = draw(tables(unusual, kind))
    mode = draw(st.sampled_from([0, 1]))
    present = draw(present_bitmap(table))
    present_after = draw(present_bitmap(table)) if mode == 1 else present
    valid = not unusual or draw(st.booleans())
    rows = b""
    for _ in range(draw(st.integers(0 if unusual else 1, 5))):
        rows += draw(image(table, present, valid))
        if mode == 1:
            rows += draw(image(table, present_after, valid))
    prefix, suffix = draw(st.binary(max_size=6)), draw(st.binary(max_size=6))
    buf = prefix + rows + suffix
    pos, end = len(prefix), len(prefix) + len(rows)
    damage = draw(st.sampled_from(["none", "truncated", "overrun", "runs on", "flipped"])) if unusual else "none"
    if damage == "truncated" and rows:  # the event ends inside an image: the buffer ends there too
        end = draw(st.integers(pos, end - 1))
        buf = buf[:end]
    elif damage == "overrun" and rows:  # the last image runs past the event's end (more bytes follow in buf)
        end = draw(st.integers(pos, end - 1))
    elif damage == "runs on" and suffix:  # bytes after the last image belong to the event
        end = draw(st.integers(end + 1, len(buf)))
    elif damage == "flipped" and rows:
        at = draw(st.integers(pos, end - 1))
        buf = buf[:at] + bytes([buf[at] ^ draw(st.integers(1, 255))]) + buf[at + 1 :]
    return {
        "table": table, "mode": mode, "present": present, "present_after": present_after, "buf": buf, "pos": pos,
        "end": end, "supported": supported, "valid": valid and damage == "none",
    }  # fmt: skip


PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_valid_row_images_decode_identically_in_c(kind: str, data: Any) -> None:
    """Well-formed images (MySQL's zero/invalid dates included), tables with many columns of ``kind``: C decodes
    every one, with Python's values."""
    require_speedups()
    case = data.draw(rows_events(kind=kind))
    supported = case.pop("supported")
    valid = case.pop("valid")
    assert supported
    assert valid
    python_ok, c_ok = check_same(*case.values(), supported=True)
    assert python_ok, "the test generated an image the pure-Python decoder rejects"
    assert c_ok


@PROPERTY
@given(rows_events(unusual=True))
def test_unusual_row_images_give_the_same_rows_or_the_same_error(case: dict[str, Any]) -> None:
    """Invalid values, corrupt metadata, truncated, overrunning and damaged images: same rows, or C gives up and
    the pure-Python decoder raises."""
    require_speedups()
    supported = case.pop("supported")
    valid = case.pop("valid")
    python_ok, c_ok = check_same(*case.values(), supported=supported)
    if valid and supported:
        assert python_ok
        assert c_ok


# kinds whose every well-formed value render_json writes (zero dates and the like aside)
PLAIN = ("int", "float", "double", "year", "decimal", "datetime2", "timestamp2", "time2", "date", "bit", "enum",
         "set", "varchar", "char", "blob", "null")  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_render_json_writes_the_python_renderers_text(kind: str, data: Any) -> None:
    """Well-formed images of tables with many columns of ``kind``: the text of the pure-Python renderer, or
    None."""
    require_speedups()
    case = data.draw(rows_events(kind=kind))
    case.pop("supported"), case.pop("valid")
    check_render(*case.values())


@PROPERTY
@given(rows_events(unusual=True))
def test_render_json_of_unusual_images_is_the_python_text_or_none(case: dict[str, Any]) -> None:
    require_speedups()
    case.pop("supported"), case.pop("valid")
    check_render(*case.values())


@st.composite
def plain_tables(draw: st.DrawFn, kind: str) -> TableMap:
    """1..4 columns, of ``kind`` or of another plain kind."""
    n = draw(st.integers(1, 4))
    kinds = [kind if draw(st.booleans()) else draw(st.sampled_from(PLAIN)) for _ in range(n)]
    return TableMap("db", "t", [draw(column(i, kind=k))[0] for i, k in enumerate(kinds)], 0)


@pytest.mark.parametrize("kind", PLAIN)
def test_render_json_writes_plain_values(kind: str) -> None:
    """Tables of plain kinds, well-formed images: render_json writes many of them (it gives up only on what the
    generator makes unusual on purpose: zero and invalid dates, text in other codecs or not UTF-8, a zero
    TIMESTAMP), so the fast path is really taken."""
    require_speedups()
    counts = {"cases": 0, "written": 0}

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(data=st.data())
    def run(data: Any) -> None:
        table = data.draw(plain_tables(kind))
        mode = data.draw(st.sampled_from([0, 1]))
        present = data.draw(present_bitmap(table))
        present_after = data.draw(present_bitmap(table)) if mode == 1 else present
        rows = b""
        for _ in range(data.draw(st.integers(1, 3))):
            rows += data.draw(image(table, present, True))
            if mode == 1:
                rows += data.draw(image(table, present_after, True))
        counts["cases"] += 1
        counts["written"] += check_render(table, mode, present, present_after, rows, 0, len(rows))

    run()
    assert counts["written"] >= counts["cases"] // 5, counts


def test_render_json_of_a_fixed_table() -> None:
    """The mixed benchmark's kind of table, one row per value shape: written, exactly as Python writes it."""
    require_speedups()
    cols = [
        ColumnInfo(0, T.LONGLONG, 0, False),
        ColumnInfo(1, T.DATETIME2, 6, True),
        ColumnInfo(2, T.TIMESTAMP2, 3, True),
        ColumnInfo(3, T.NEWDECIMAL, 12 << 8 | 2, True),
        ColumnInfo(4, T.STRING, string_meta(T.ENUM, 1), True),
        ColumnInfo(5, T.DATE, 0, True),
        ColumnInfo(6, T.BLOB, 2, True),
        ColumnInfo(7, T.DOUBLE, 8, True),
        ColumnInfo(8, T.NEWDECIMAL, 20 << 8 | 10, True),
    ]
    cols[4].enum_values = ("new", 'café "x"')
    cols[6].charset = 45
    table = TableMap("db", "t", cols, 0)
    values = [
        (1, (2024, 2, 29, (23, 59, 59), 999999), 1, Decimal("-1234567890.12"), 2, (2024, 12, 31), "é\n\"🚀\\", 0.1,
         Decimal("0.0000000001")),
        (-1, (1, 1, 1, (0, 0, 0), 0), 2**31, Decimal("0.00"), 0, (1, 1, 1), "", float("inf"), Decimal("-0E-10")),
    ]  # fmt: skip
    buf = b""
    for v in values:
        buf += b"\x00\x00" + struct.pack("<q", v[0]) + datetime2_bytes(*v[1][:3], v[1][3], v[1][4], 6)
        buf += struct.pack(">I", v[2]) + encode_fraction(0, 3) + encode_decimal(v[3], 12, 2) + bytes([v[4]])
        buf += encode_date(*v[5]) + length_prefix(len(v[6].encode()), 2) + v[6].encode() + struct.pack("<d", v[7])
        buf += encode_decimal(v[8], 20, 10)
    assert check_render(table, 0, 511, 511, buf, 0, len(buf))
    text = _table._program(table, 0, 511, 511).render_json(buf, 0, len(buf)).decode()
    for part in ('"0.0000000001"', '"0.0000000000"', '"2024-02-29T23:59:59.999999"', '"1970-01-01T00:00:01+00:00"',
                 "Infinity", '"café \\"x\\""'):  # fmt: skip
        assert part in text, text


def test_render_json_of_sets_and_ascii_compatible_charsets() -> None:
    """SET members are written sorted, as the renderer writes sorted(frozenset); text in a multi-byte charset that
    decodes ASCII as ASCII (GBK) is written as it is when it is ASCII, and decoded first when it is not; latin1
    text goes through its byte table (test_single_byte_charsets_...); UTF-16 text is always decoded first; a SET
    whose members repeat a name is decoded first."""
    require_speedups()
    cols = [ColumnInfo(0, T.STRING, string_meta(T.SET, 1), True), ColumnInfo(1, T.VARCHAR, 40, True),
            ColumnInfo(2, T.VARCHAR, 40, True), ColumnInfo(3, T.VARCHAR, 40, True)]  # fmt: skip
    cols[0].set_values = ("b", "a", "été", "A", "")
    cols[1].charset, cols[2].charset, cols[3].charset = 8, 28, 35  # latin1 (cp1252), gbk, ucs2 (utf-16-be)
    table = TableMap("db", "t", cols, 0)
    modes = [_table._column_op(c)[3] for c in cols[1:]]  # type: ignore[index]
    assert modes == [_table._TEXT_TABLE, _table._TEXT_CODEC_ASCII, _table._TEXT_CODEC]

    def image(bits: int, text: bytes, wide: bytes | None) -> bytes:  # wide None: NULL
        out = bytes([0 if wide is not None else 8, bits]) + bytes([len(text)]) + text + bytes([len(text)]) + text
        return out + (bytes([len(wide)]) + wide if wide is not None else b"")

    plain = b"".join(image(bits, b'ab "c"\\', None) for bits in (0, 1, 2, 0b11111, 0b10110))
    assert check_render(table, 0, 15, 15, plain, 0, len(plain))
    text = _table._program(table, 0, 15, 15).render_json(plain, 0, len(plain)).decode()
    assert '["","A","a","b","été"]' in text, text
    assert '[[],"ab' in text, text
    for raw in (image(1, b"caf\xe9", None), image(1, b"ab", "x".encode("utf-16-be"))):  # decoded first, same text
        assert _table._program(table, 0, 15, 15).render_json(raw, 0, len(raw)) is None
        assert not check_render(table, 0, 15, 15, raw, 0, len(raw))
    cols[0].set_values = ("a", "a")
    table = TableMap("db", "t", cols, 0)
    raw = image(3, b"x", None)
    assert not check_render(table, 0, 15, 15, raw, 0, len(raw))


def _single_byte_charsets() -> list[tuple[int, str]]:
    """One collation id per single-byte codec the decoder knows (latin1 = cp1252, latin2, cp1251, koi8r, ascii...)."""
    seen: dict[str, int] = {}
    for cid, codec in sorted(COLLATION_CODECS.items()):
        if codec not in seen and _table._text_mode(codec)[0] == _table._TEXT_TABLE:
            seen[codec] = cid
    return sorted((cid, codec) for codec, cid in seen.items())


SINGLE_BYTE = _single_byte_charsets()


def test_single_byte_codecs_are_the_charmap_ones() -> None:
    """latin1 (cp1252) and the other single-byte code pages get a byte table; multi-byte codecs and UTF-16/32 do
    not (a byte of theirs is not a character); a table is exactly what the codec decodes byte by byte."""
    codecs_with_tables = {codec for _cid, codec in SINGLE_BYTE}
    assert {"cp1252", "ascii", "koi8_r", "cp1251", "iso8859_2", "cp1250", "iso8859_7"} <= codecs_with_tables
    for codec in ("gbk", "shift_jis", "big5", "euc_kr", "gb18030", "utf-16-be", "utf-32-be", "utf-8"):
        assert _table._byte_table(codec) is None, codec
    for codec in codecs_with_tables:
        table = _table._byte_table(codec)
        assert table is not None
        assert len(table) == 256
        for byte in range(256):
            try:
                assert bytes([byte]).decode(codec) == table[byte]
            except UnicodeDecodeError:
                assert table[byte] == "\ufffe"
    assert _table._byte_table("no-such-codec") is None


@pytest.mark.parametrize(("charset", "codec"), SINGLE_BYTE, ids=[codec for _cid, codec in SINGLE_BYTE])
def test_single_byte_charsets_decode_and_render_through_their_tables(charset: int, codec: str) -> None:
    """Every byte of the charset, alone and in runs, in a VARCHAR and a TEXT column: the compiled core decodes
    and renders exactly what Python does (bytes without a character: Python's error, and C gives up), and takes
    its fast path for text that decodes."""
    require_speedups()
    cols = [ColumnInfo(0, T.VARCHAR, 600, True), ColumnInfo(1, T.BLOB, 2, True)]
    cols[0].charset = cols[1].charset = charset
    table = TableMap("db", "t", cols, 0)
    assert [_table._column_op(c)[3] for c in cols] == [_table._TEXT_TABLE] * 2  # type: ignore[index]
    rng = random.Random(charset)
    values = [bytes([b]) for b in range(256)] + [bytes(range(256)), bytes(range(128)), bytes(range(128, 256)), b""]
    values += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(60)]
    values += [bytes(rng.choice(range(0xA0, 0x100)) for _ in range(rng.randrange(1, 600))) for _ in range(20)]
    decoded = rendered = 0
    for value in values:
        row = b"\x00" + length_prefix(len(value), 2) + value + length_prefix(len(value), 2) + value
        try:
            value.decode(codec)
            valid = True
        except UnicodeDecodeError:
            valid = False
        python_ok, c_ok = check_same(table, 0, 3, 3, row, 0, len(row), supported=True)
        assert python_ok == valid
        assert c_ok == valid, value  # the fast path: no fallback for text that decodes
        decoded += c_ok
        rendered += check_render(table, 0, 3, 3, row, 0, len(row))
    assert rendered == decoded > 0  # render_json writes every value that decodes (code points up to U+FFFF)


@pytest.mark.parametrize("scale", range(31))
def test_render_json_decimals_at_every_scale(scale: int) -> None:
    """Fixed notation where str(Decimal) switches to scientific notation (1E-7, 0E-10): every scale, values
    around the switch, zero, negative zero, the extremes."""
    require_speedups()
    precision = max(scale, 1) + 8
    col = ColumnInfo(0, T.NEWDECIMAL, precision << 8 | scale, True)
    table = TableMap("db", "t", [col], 0)
    unit = Decimal(1).scaleb(-scale)
    values = [Decimal(0), Decimal("-0").scaleb(-scale), unit, -unit, unit * 7, unit * 10, unit * 1000, unit * 12345678,
              Decimal("99999999").scaleb(0) + (1 - unit), Decimal(1), Decimal("-1.5"), Decimal("0.1"), Decimal("1E-6"),
              Decimal("1E-7"), Decimal("12E-8")]  # fmt: skip
    written = 0
    for v in values:
        try:
            raw = encode_decimal(v, precision, scale)
        except Exception:  # does not fit this precision and scale
            continue
        image = b"\x00" + raw
        written += check_render(table, 0, 1, 1, image, 0, len(image))
    assert written >= 5


def _decimal_cases(precision: int, scale: int) -> list[Decimal]:
    """Values of DECIMAL(precision, scale): zero and negative zero, one unit, the largest, values of every
    length in digits (so every number of 19-digit words), both signs."""
    rng = random.Random(precision * 100 + scale)
    coefficients = [0, 1, 10**precision - 1] + [rng.randint(10 ** (d - 1), 10**d - 1) for d in range(1, precision + 1)]
    # exact: Decimal(text), not scaleb, which rounds to the context's 28 digits
    return [Decimal(f"{sign}{c}E-{scale}") for c in coefficients for sign in ("", "-")]


_DECIMAL_OPERATIONS = (lambda x: x + 1, lambda x: x * -3, lambda x: -x, lambda x: x / 7,
                       lambda x: x.sqrt() if x >= 0 else x.copy_abs(), lambda x: x.normalize(),
                       lambda x: x.quantize(Decimal(1)), lambda x: x.to_integral_value(), float,
                       lambda x: x.is_zero(), lambda x: x.is_signed())  # fmt: skip


def _outcome(fn: Any, x: Any) -> str:
    try:
        return repr(fn(x))
    except ArithmeticError as exc:  # quantize past the context's precision: the same error for both
        return type(exc).__name__


def test_direct_decimals_are_the_constructors_values() -> None:
    """DECIMAL values are built directly in the object Decimal(str) would make (see mb_dec_direct_init in
    _sp_decimal.c): for every precision and scale, at every length, they are the pure-Python decoder's values in
    repr (sign, digits, exponent), str, hash, equality, as_tuple, and in arithmetic, which reads the coefficient."""
    require_speedups()
    from mybinlog.protocol import _speedups

    if sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11) and sys.maxsize > 2**32:
        assert _speedups.DIRECT_DECIMAL == 1, "CPython 3.11's Decimal layout is the one dec_build writes"
    checked = 0
    for precision in range(1, 66):
        for scale in sorted({min(precision, s) for s in (0, 1, 2, 9, 19, 30)}):
            col = ColumnInfo(0, T.NEWDECIMAL, precision << 8 | scale, True)
            table = TableMap("db", "t", [col], 0)
            program = _table._program(table, 0, 1, 1)
            python_fn = _table._compile_python(table, 0, 1, 1)
            for v in _decimal_cases(precision, scale):
                image = b"\x00" + encode_decimal(v, precision, scale)
                got = program.decode(image, 0, len(image))
                expected = python_fn(image, 0, len(image))
                assert difference(got, expected) is None, (precision, scale, v)
                ours, theirs = got[0][0], expected[0][0]
                assert str(ours) == str(theirs)
                assert hash(ours) == hash(theirs)
                assert ours == theirs
                assert ours.as_tuple() == theirs.as_tuple()
                assert ours.adjusted() == theirs.adjusted()
                assert ours.compare_total(theirs) == 0
                for op in _DECIMAL_OPERATIONS:
                    assert _outcome(op, ours) == _outcome(op, theirs), (precision, scale, v)
                checked += 1
    assert checked > 5000


def test_decimals_without_the_direct_build() -> None:
    """MYBINLOG_NO_DIRECT_DECIMAL=1 turns the direct build off (Decimal(str) for every value): the same values."""
    require_speedups()
    script = (
        "from decimal import Decimal\n"
        "from mybinlog.protocol import _speedups, _table\n"
        "from mybinlog.protocol._constants import ColumnType\n"
        "from mybinlog.protocol._table import ColumnInfo, TableMap\n"
        "from tests.builders import encode_decimal\n"
        "assert _speedups.DIRECT_DECIMAL == 0\n"
        "table = TableMap('db', 't', [ColumnInfo(0, ColumnType.NEWDECIMAL, 40 << 8 | 10, True)], 0)\n"
        "program = _table._program(table, 0, 1, 1)\n"
        "for text in ('0.0000000000', '-123456789012345678901234567890.0123456789', '7.5'):\n"
        "    image = b'\\x00' + encode_decimal(Decimal(text), 40, 10)\n"
        "    print(repr(program.decode(image, 0, len(image))[0][0]))\n"
    )
    env = {**os.environ, "MYBINLOG_NO_DIRECT_DECIMAL": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == [
        "Decimal('0E-10')",
        "Decimal('-123456789012345678901234567890.0123456789')",
        "Decimal('7.5000000000')",
    ]


@pytest.mark.parametrize(
    "fields",
    [(2024, 1, 1, (24, 0, 0)), (2024, 1, 1, (23, 60, 0)), (2024, 1, 1, (23, 59, 60)), (2024, 13, 1, (0, 0, 0)),
     (2023, 2, 29, (0, 0, 0)), (2024, 2, 29, (0, 0, 0)), (2024, 4, 31, (0, 0, 0)), (2024, 0, 1, (0, 0, 0)),
     (2024, 1, 0, (0, 0, 0)), (0, 1, 1, (0, 0, 0)), (9999, 12, 31, (23, 59, 59)), (1900, 2, 29, (0, 0, 0)),
     (2000, 2, 29, (0, 0, 0))],
)  # fmt: skip
def test_render_json_datetimes_and_dates_at_their_limits(fields: tuple[int, int, int, tuple[int, int, int]]) -> None:
    """Invalid fields (hour 24, minute 60, 29 February of a common year, month 13, zero parts) are values
    the pure-Python value function decides: render_json gives up on them; valid ones it writes."""
    require_speedups()
    year, month, day, hms = fields
    cols = [ColumnInfo(0, T.DATETIME2, 6, True), ColumnInfo(1, T.DATE, 0, True)]
    table = TableMap("db", "t", cols, 0)
    image = b"\x00" + datetime2_bytes(year, month, day, hms, 5, 6) + encode_date(year, month, day)
    written = check_render(table, 0, 3, 3, image, 0, len(image))
    valid = year >= 1 and 1 <= month <= 12 and day >= 1
    if valid:
        try:
            datetime.datetime(year, month, day, *hms)
        except ValueError:
            valid = False
    assert written == valid


@PROPERTY
@given(tables(unusual=True), st.data())
def test_random_bytes_give_the_same_rows_or_the_same_error(table_supported: tuple[TableMap, bool], data: Any) -> None:
    require_speedups()
    table, supported = table_supported
    mode = data.draw(st.sampled_from([0, 1]))
    present = data.draw(present_bitmap(table))
    present_after = data.draw(present_bitmap(table)) if mode == 1 else present
    buf = data.draw(st.binary(max_size=200))
    pos = data.draw(st.integers(0, len(buf)))
    end = data.draw(st.integers(pos, len(buf)))
    check_same(table, mode, present, present_after, buf, pos, end, supported=supported)
    check_render(table, mode, present, present_after, buf, pos, end)


def test_images_without_columns_are_an_error_not_an_endless_loop() -> None:
    """present = 0 (a corrupt rows event): every row would take no bytes; both decoders raise instead of filling
    memory with empty rows forever."""
    table = TableMap("db", "t", [ColumnInfo(0, T.LONG, 0, True)], 0)
    for mode in (0, 1):
        assert _table._program(table, mode, 0, 0) is None
        for decoder in (_table._compile_python(table, mode, 0, 0), _table._compile(table, mode, 0, 0)):
            assert decoder(b"\x00\x01", 2, 2) == []
            with pytest.raises(DecodeError, match="no columns"):
                decoder(b"\x00\x01", 0, 2)


@pytest.mark.parametrize("fsp", range(7))
def test_time2_every_sign_and_fraction_boundary_decodes_identically(fsp: int) -> None:
    """TIME2 is decoded in C (OP_TIME2): values around zero (where a negative time with a fraction counts the
    fraction down from the next second), the extremes of the stored range and seeded random bytes, one row each,
    give Python's timedelta."""
    require_speedups()
    import random

    nbytes = 3 + (fsp + 1) // 2
    table = TableMap("db", "t", [ColumnInfo(0, T.TIME2, fsp, True)], 0)
    rng = random.Random(fsp)
    zero = 0x800000 << 8 * (nbytes - 3)
    around = [zero + d for d in range(-300, 301)] + [0, 1, (1 << 8 * nbytes) - 1, (1 << 8 * nbytes) - 2]
    values = around + [rng.getrandbits(8 * nbytes) for _ in range(3000)]
    buf = b"".join(b"\x00" + v.to_bytes(nbytes, "big") for v in values)  # a null bitmap byte, then the value
    assert _table._program(table, 0, 1, 1) is not None
    check_same(table, 0, 1, 1, buf, 0, len(buf), supported=True)


# ----------------------------------------------------------------------------------------------------------
# The corpus
# ----------------------------------------------------------------------------------------------------------

FILES = [p for p in binlog_files() if not p.name.endswith((".sql", ".txt"))]


def _events(path: Path) -> list[RowsEvent]:
    """The rows events of a file up to its first undecodable event (the corpus has broken files on purpose)."""
    out: list[RowsEvent] = []
    try:
        for event in read_binlog_file(path):
            if isinstance(event, RowsEvent):
                out.append(event)
    except DecodeError:
        pass
    return out


def test_corpus_rows_decode_identically(corpus_dir: Path) -> None:
    """Every rows event of every corpus file: the same rows (or errors) from C and from pure Python, and the C
    decoder handles every event Python decodes (partial JSON updates, mode 2, stay in Python)."""
    require_speedups()
    assert FILES, f"no binlog files in {corpus_dir}/binlogs"
    events = in_c = rows = 0
    for path in FILES:
        for event in _events(path):
            events += 1
            mode = event._image_mode
            args = (event.table, mode, event.present, event.present_after)
            python_ok, c_ok = check_same(
                *args, event.body, event.rows_start, event.rows_end, supported=mode != 2 and _supported(event.table)
            )
            in_c += c_ok
            if python_ok:
                rows += len(event.rows)  # the decoder users get (TableMap.decode_rows -> _compile)
                expected = _table._compile_python(*args)(event.body, event.rows_start, event.rows_end)
                assert difference(event.rows, expected) is None, f"{path.name} at {event.offset}"
    assert events > 100, events
    assert rows > events, (events, rows)
    assert in_c > events * 0.9, f"only {in_c} of {events} rows events decoded by the compiled core"


def _supported(table: TableMap) -> bool:
    return all(_table._column_op(c) is not None for c in table.columns)


# ----------------------------------------------------------------------------------------------------------
# Which implementation runs
# ----------------------------------------------------------------------------------------------------------


def _layout() -> tuple[TableMap, bytes]:
    cols = [ColumnInfo(0, T.LONG, 0, False), ColumnInfo(1, T.VARCHAR, 40, True)]
    cols[1].charset = 45
    image = b"\x00" + struct.pack("<i", 7) + b"\x03abc"
    return TableMap("db", "t", cols, 0), image * 3


def test_compile_returns_the_compiled_core_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    require_speedups()
    assert mybinlog.implementation() == "compiled"
    table, buf = _layout()
    decoder = _table._compile(table, 0, 3, 3)

    def no_python(*args: Any) -> Any:
        raise AssertionError("the pure-Python decoder was compiled for a layout the compiled core handles")

    monkeypatch.setattr(_table, "_compile_python", no_python)
    assert decoder(buf, 0, len(buf)) == [(7, "abc")] * 3
    # a truncated event: C gives up, the pure-Python decoder is compiled to raise the error
    with pytest.raises(AssertionError, match="pure-Python decoder was compiled"):
        decoder(buf, 0, len(buf) - 1)


def test_pure_python_when_the_extension_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the extension (the MYBINLOG_NO_EXTENSIONS pass, or patched away here) _compile builds the pure-
    Python decoder and implementation() says so."""
    monkeypatch.setattr(_table, "speedups", None)
    monkeypatch.setattr(_accel, "speedups", None)
    assert mybinlog.implementation() == "python"
    table, buf = _layout()
    assert _table._program(table, 0, 3, 3) is None
    calls: list[int] = []
    python = _table._compile_python

    def counted(*args: Any) -> Any:
        calls.append(1)
        return python(*args)

    monkeypatch.setattr(_table, "_compile_python", counted)
    assert _table._compile(table, 0, 3, 3)(buf, 0, len(buf)) == [(7, "abc")] * 3
    assert calls == [1]


def test_implementation_matches_the_environment() -> None:
    assert mybinlog.implementation in (getattr(mybinlog, n) for n in mybinlog.__all__)
    if NO_EXTENSIONS:
        assert mybinlog.implementation() == "python"
        assert _accel.describe() == "pure Python (MYBINLOG_NO_EXTENSIONS is set)"
    elif _accel.speedups is None:
        assert not CI, f"CI=true needs the compiled core: {_accel.describe()}"
        assert mybinlog.implementation() == "python"
    else:
        assert mybinlog.implementation() == "compiled"


def _version(**env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "MYBINLOG_NO_EXTENSIONS"} | env
    code = "import sys; from mybinlog.cli import main; sys.exit(main(['--version']))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, cwd=REPO, timeout=60
    )


def test_version_names_the_pure_python_decoder_when_extensions_are_off() -> None:
    done = _version(MYBINLOG_NO_EXTENSIONS="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"mybinlog {mybinlog.__version__} (pure Python (MYBINLOG_NO_EXTENSIONS is set))\n"


def test_version_names_the_compiled_core() -> None:
    if importlib.util.find_spec("mybinlog.protocol._speedups") is None:
        reason = f"the compiled core is not built ({_accel.describe()})"
        pytest.fail(reason, pytrace=False) if CI else pytest.skip(reason)
    done = _version()
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"mybinlog {mybinlog.__version__} (compiled core (C extension mybinlog.protocol._speedups))\n"
    ), done.stdout
    # MYBINLOG_NO_EXTENSIONS=0 is "not set"
    assert _version(MYBINLOG_NO_EXTENSIONS="0").stdout == done.stdout


def test_version_from_the_installed_script() -> None:
    script = Path(sys.executable).with_name("mybinlog")
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable}") if not CI else pytest.fail(f"no {script}")
    environ = {k: v for k, v in os.environ.items() if k != "MYBINLOG_NO_EXTENSIONS"} | {"MYBINLOG_NO_EXTENSIONS": "1"}
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, env=environ, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"mybinlog {mybinlog.__version__} (pure Python (")
