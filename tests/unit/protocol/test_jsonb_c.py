"""MySQL binary JSON in the compiled core (mybinlog/protocol/_jsonb.c) against the Python decoder, its specification.

* Random documents (objects and arrays, small and large, every scalar type, non-ASCII keys and strings, OPAQUE
  DECIMAL/DATE/TIME/DATETIME/TIMESTAMP with valid, zero, invalid and random payloads, other OPAQUE types), encoded
  by this suite's encoder (tests/builders.py): the C decoder gives the same values as ``decode_jsonb``, type
  and repr (bool is not int, -0.0 keeps its sign, a Decimal its exponent).
* Damaged documents (every truncation, flipped bytes, bad offsets, random bytes): the C decoder finds a document
  malformed exactly when the Python decoder raises DecodeError (it never returns a value Python would refuse, nor
  refuses one Python decodes), and with the Python decoder as its fallback raises Python's exact error.
* Every JSON value of the binlog corpus decodes identically.
* The compiled row decoder decodes a JSON column in C: the Python decode_jsonb is not called for a well-formed
  document, and is called (raising its error) for a malformed one.

Needs the compiled core: skipped without it (failed under CI=true), and in the MYBINLOG_NO_EXTENSIONS=1 pass.
"""

from __future__ import annotations

import contextlib
import datetime
import struct
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mybinlog.errors import DecodeError
from mybinlog.protocol import _accel, _table
from mybinlog.protocol._constants import ColumnType
from mybinlog.protocol._events import RowsEvent
from mybinlog.protocol._jsonb import MAX_DEPTH, JsonOpaque, decode_jsonb
from mybinlog.protocol._table import ColumnInfo, TableMap
from mybinlog.source._files import read_binlog_file
from tests.builders import Opaque, Typed, encode, packed_datetime, packed_time, require_speedups
from tests.corpus import binlog_files


def c_decode(data: bytes, fallback: Callable[[bytes], Any] | None = None) -> Any:
    require_speedups()
    speedups = _accel.speedups
    assert speedups is not None
    return speedups.decode_jsonb(data, fallback)


def exact(value: Any) -> Any:
    """A comparable form that tells bool from int, -0.0 from 0.0 and Decimal('1.0') from Decimal('1.00')."""
    if isinstance(value, dict):
        return ("dict", [(k, exact(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [exact(v) for v in value])
    return (type(value).__name__, repr(value))


def outcome_python(data: bytes) -> tuple[str, Any]:
    try:
        return "value", exact(decode_jsonb(data))
    except DecodeError as exc:
        return "error", str(exc)


def assert_same(data: bytes) -> None:
    """C and Python agree on ``data``: the same value, or both find it malformed (with the same error through the
    fallback)."""
    kind, expected = outcome_python(data)
    if kind == "value":
        assert exact(c_decode(data)) == expected, data.hex()
        assert exact(c_decode(data, decode_jsonb)) == expected
    else:
        with pytest.raises(ValueError, match="malformed MySQL binary JSON document"):
            c_decode(data)
        with pytest.raises(DecodeError) as info:
            c_decode(data, decode_jsonb)
        assert str(info.value) == expected


# ----------------------------------------------------------------------------------------------------------
# Documents
# ----------------------------------------------------------------------------------------------------------

INT_RANGES = {
    0x05: (-(2**15), 2**15 - 1),
    0x06: (0, 2**16 - 1),
    0x07: (-(2**31), 2**31 - 1),
    0x08: (0, 2**32 - 1),
    0x09: (-(2**63), 2**63 - 1),
    0x0A: (0, 2**64 - 1),
}


@st.composite
def typed_ints(draw: st.DrawFn) -> Typed:
    t = draw(st.sampled_from(sorted(INT_RANGES)))
    lo, hi = INT_RANGES[t]
    return Typed(t, draw(st.integers(lo, hi) | st.sampled_from([lo, hi, 0])))


def decimal_bytes(draw: st.DrawFn) -> bytes:
    """precision, scale and a DECIMAL payload: mostly well-formed digits, sometimes random bytes or bad metadata."""
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(precision, 30)))
    if draw(st.integers(0, 19)) == 0:
        precision, scale = draw(st.integers(0, 255)), draw(st.integers(0, 255))  # mostly invalid metadata
    intg = precision - scale
    dig2bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    if not (1 <= precision <= 65 and 0 <= scale <= 30 and scale <= precision):
        return bytes([precision, scale]) + draw(st.binary(max_size=40))
    size = dig2bytes[intg % 9] + 4 * (intg // 9 + scale // 9) + dig2bytes[scale % 9]
    if draw(st.integers(0, 4)) == 0:
        return bytes([precision, scale]) + draw(st.binary(min_size=max(0, size - 2), max_size=size + 2))
    # a valid value: digits per field, big-endian, sign bit flipped, inverted when negative
    fields: list[tuple[int, int]] = []  # (bytes, digits)
    if intg % 9:
        fields.append((dig2bytes[intg % 9], intg % 9))
    fields += [(4, 9)] * (intg // 9 + scale // 9)
    if scale % 9:
        fields.append((dig2bytes[scale % 9], scale % 9))
    zero = draw(st.integers(0, 9)) == 0
    raw = bytearray()
    for nbytes, digits in fields:
        v = 0 if zero else draw(st.integers(0, 10**digits - 1))
        raw += v.to_bytes(nbytes, "big")
    raw[0] ^= 0x80
    if draw(st.booleans()):
        raw = bytearray(b ^ 0xFF for b in raw)
    return bytes([precision, scale]) + bytes(raw) + draw(st.binary(max_size=2))


@st.composite
def opaques(draw: st.DrawFn) -> Opaque:
    kind = draw(st.sampled_from(["decimal", "date", "time", "datetime", "timestamp", "other", "random"]))
    if kind == "decimal":
        return Opaque(246, decimal_bytes(draw))
    if kind == "time":
        fields = (draw(st.integers(0, 1023)), draw(st.integers(0, 63)), draw(st.integers(0, 63)))
        usec = draw(st.integers(0, 2**24 - 1) | st.integers(0, 999_999))
        return Opaque(11, packed_time(draw(st.booleans()), *fields, usec))
    if kind in ("date", "datetime", "timestamp"):
        code = {"date": 10, "datetime": 12, "timestamp": 7}[kind]
        # past 9999 up to what a signed 64-bit packed value holds ((10080 * 13 + 12) << 46 < 2**63)
        year = draw(st.integers(0, 9999) | st.integers(0, 10080) | st.sampled_from([0, 2000, 1900, 2024]))
        month, day = draw(st.integers(0, 12)), draw(st.integers(0, 31))
        hms = (draw(st.integers(0, 31)), draw(st.integers(0, 63)), draw(st.integers(0, 63)))
        usec = draw(st.integers(0, 999_999) | st.integers(0, 2**24 - 1))
        raw = bytearray(packed_datetime(year, month, day, *hms, usec))
        if draw(st.integers(0, 9)) == 0:  # negative
            raw = bytearray(struct.pack("<q", -struct.unpack("<q", bytes(raw))[0]))
        return Opaque(code, bytes(raw) + draw(st.binary(max_size=2)))
    if kind == "random":
        code = draw(st.sampled_from([246, 10, 11, 12, 7]))
        return Opaque(code, draw(st.binary(max_size=12)))
    return Opaque(draw(st.integers(0, 255)), draw(st.binary(max_size=20)))


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | typed_ints()
    | st.floats()
    | st.text(max_size=20)
    | st.text(alphabet=st.characters(codec="utf-8"), min_size=100, max_size=300)  # varlen sizes of 2 bytes
    | opaques()
)
documents = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6),
    max_leaves=30,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.booleans())
def test_random_documents_decode_identically(doc: Any, large: bool) -> None:
    assert_same(encode(doc, large))


@settings(max_examples=300)
@given(opaques())
def test_opaque_values_decode_identically(value: Opaque) -> None:
    for large in (False, True):
        assert_same(encode(value, large))
        assert_same(encode([value], large))
        assert_same(encode({"k": value}, large))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Opaque(246, bytes([5, 2]) + bytes.fromhex("800b1a")), Decimal("11.26")),
        (Opaque(246, bytes([5, 2]) + bytes.fromhex("7ff4e5")), Decimal("-11.26")),
        (Opaque(246, bytes([4, 4]) + bytes.fromhex("7fffff")), Decimal("0.0000")),  # a negative zero: unsigned
        (Opaque(10, packed_datetime(2024, 2, 29)), datetime.date(2024, 2, 29)),
        (Opaque(10, packed_datetime(2023, 2, 29)), "2023-02-29"),
        (Opaque(12, packed_datetime(2024, 1, 2, 3, 4, 5, 6)), datetime.datetime(2024, 1, 2, 3, 4, 5, 6)),
        (Opaque(7, packed_datetime(0, 0, 0)), "0000-00-00 00:00:00.000000"),
        (Opaque(11, packed_time(True, 838, 59, 59, 1)), -datetime.timedelta(hours=838, minutes=59, seconds=59,
                                                                                microseconds=1)),
        (Opaque(11, struct.pack("<q", -(2**63))), datetime.timedelta(0)),
        (Opaque(252, b"blob"), JsonOpaque(252, b"blob")),
    ],
)  # fmt: skip
def test_opaque_examples(value: Opaque, expected: Any) -> None:
    data = encode(value)
    assert exact(c_decode(data)) == exact(expected) == exact(decode_jsonb(data))


def test_large_and_deep_documents() -> None:
    values = list(range(70_000))
    assert_same(encode(values, large=True))
    assert_same(encode({"k" * 300: "v" * 70_000}, large=True))
    doc: Any = 1
    for _ in range(MAX_DEPTH - 1):
        doc = [doc]
    assert_same(encode(doc))  # the deepest accepted
    assert_same(encode([doc]))  # one level too deep
    assert c_decode(b"") is None


# ----------------------------------------------------------------------------------------------------------
# Damaged documents
# ----------------------------------------------------------------------------------------------------------

SAMPLE = {
    "id": 12345678901,
    "name": "zoë ✓",
    "tags": ["a", "bc", None, True, False, -1, 70000, 2.5],
    "nested": {"x": [1, {"y": "z" * 200}], "d": Opaque(246, bytes([5, 2]) + bytes.fromhex("800b1a"))},
    "when": Opaque(12, packed_datetime(2024, 1, 2, 3, 4, 5, 6)),
    "blob": Opaque(252, b"\x00\x01"),
}


@pytest.mark.parametrize("large", [False, True])
def test_every_truncation_and_every_flipped_byte(large: bool) -> None:
    data = encode(SAMPLE, large)
    for n in range(len(data) + 1):
        assert_same(data[:n])
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            damaged = bytearray(data)
            damaged[i] ^= flip
            assert_same(bytes(damaged))


@settings(max_examples=300)
@given(st.data())
def test_bad_offsets_and_sizes(data: st.DataObject) -> None:
    large = data.draw(st.booleans())
    doc = bytearray(encode(SAMPLE, large))
    width = 4 if large else 2
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(doc) - width))
        value = data.draw(st.integers(0, 256**width - 1) | st.integers(0, len(doc) + 2))
        doc[at : at + width] = value.to_bytes(width, "little")
    assert_same(bytes(doc))


@settings(max_examples=500)
@given(st.binary(max_size=64))
def test_random_bytes(data: bytes) -> None:
    assert_same(data)


# ----------------------------------------------------------------------------------------------------------
# The corpus
# ----------------------------------------------------------------------------------------------------------


def corpus_json_documents() -> Iterator[bytes]:
    """The JSON documents of the corpus's rows events, as the pure-Python row decoder hands them to decode_jsonb."""
    seen: list[bytes] = []

    def record(data: bytes) -> Any:
        seen.append(bytes(data))
        return decode_jsonb(data)

    original = _table.decode_jsonb
    _table.decode_jsonb = record  # type: ignore[assignment]
    try:
        for path in binlog_files():
            if path.name.endswith((".sql", ".txt")):
                continue
            try:
                for event in read_binlog_file(path):
                    if isinstance(event, RowsEvent) and any(c.type == ColumnType.JSON for c in event.table.columns):
                        args = (event.table, event._image_mode, event.present, event.present_after)
                        with contextlib.suppress(DecodeError):
                            _table._compile_python(*args)(event.body, event.rows_start, event.rows_end)
            except DecodeError:
                pass  # the corpus has broken files on purpose
    finally:
        _table.decode_jsonb = original
    yield from seen


def test_corpus_json_values_decode_identically() -> None:
    require_speedups()
    docs = list(corpus_json_documents())
    assert len(docs) > 20, len(docs)
    for data in docs:
        assert_same(data)


# ----------------------------------------------------------------------------------------------------------
# The row decoder's hook
# ----------------------------------------------------------------------------------------------------------


def json_table() -> TableMap:
    return TableMap("db", "t", [ColumnInfo(0, ColumnType.LONG, 0, False), ColumnInfo(1, ColumnType.JSON, 4, True)], 0)


def rows_image(docs: list[bytes]) -> bytes:
    out = bytearray()
    for i, doc in enumerate(docs):
        out += b"\x00" + struct.pack("<i", i) + struct.pack("<I", len(doc)) + doc
    return bytes(out)


def python_calls(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """fn()'s result (or exception) and the names of the Python functions it called."""
    names: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        result: Any = fn()
    except DecodeError as exc:
        result = exc
    finally:
        sys.setprofile(None)
    return result, names


def test_the_compiled_row_decoder_decodes_json_in_c() -> None:
    require_speedups()
    table = json_table()
    program = _table._program(table, 0, 0b11, 0)
    assert program is not None
    docs = [encode(SAMPLE), encode([1, 2.5, "x"], large=True), b"", encode("text")]
    buf = rows_image(docs)
    rows, called = python_calls(lambda: program.decode(buf, 0, len(buf)))
    assert "decode_jsonb" not in called, called
    expected = _table._compile_python(table, 0, 0b11, 0)(buf, 0, len(buf))
    assert exact([list(r) for r in rows]) == exact([list(r) for r in expected])
    # a malformed document: the Python decoder is called (and raises), the compiled decoder gives up on the event
    # (None), which the pure-Python decoder then decodes, raising the error
    bad = rows_image([encode(SAMPLE)[:-3]])
    result, called = python_calls(lambda: program.decode(bad, 0, len(bad)))
    assert "decode_jsonb" in called
    assert result is None
    with pytest.raises(DecodeError, match="malformed MySQL binary JSON document"):
        _table._compile_python(table, 0, 0b11, 0)(bad, 0, len(bad))
