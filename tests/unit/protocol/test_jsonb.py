"""MySQL binary JSON: decoding, MySQL text rendering, partial-update diffs.

Documents are built by a small encoder in this file, written from MySQL's documented format (json_binary.h),
independent of the decoder.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import struct
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mybinlog.errors import DecodeError
from mybinlog.protocol._jsonb import (
    MAX_DEPTH,
    JsonDiff,
    JsonDiffs,
    JsonOpaque,
    JsonValue,
    apply_json_diffs,
    decode_json_diff,
    decode_json_diff_column,
    decode_jsonb,
    decode_opaque,
    format_mysql_double,
    parse_json_path,
    read_varlen,
    render_json_mysql_text,
)
from tests.builders import Opaque, Typed, encode, mysql_key_order, packed_datetime, packed_time

# ----------------------------------------------------------------------------------------------------
# A tiny JSONB encoder
# ----------------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------------
# Decoding
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (False, False),
        (Typed(0x05, -32768), -32768),
        (Typed(0x06, 65535), 65535),
        (Typed(0x07, -(2**31)), -(2**31)),
        (Typed(0x08, 2**32 - 1), 2**32 - 1),
        (Typed(0x09, -(2**63)), -(2**63)),
        (Typed(0x0A, 2**64 - 1), 2**64 - 1),
        (1.5, 1.5),
        (-0.0, -0.0),
        ("", ""),
        ("héllo wörld 😀", "héllo wörld 😀"),
        ("x" * 300, "x" * 300),
    ],
)
def test_scalars_at_top_level(value: Any, expected: Any) -> None:
    decoded = decode_jsonb(encode(value))
    assert decoded == expected
    assert type(decoded) is type(expected)


@pytest.mark.parametrize("large", [False, True])
def test_containers_with_every_entry_kind(large: bool) -> None:
    doc = {
        "null": None,
        "t": True,
        "f": False,
        "i16": Typed(0x05, -5),
        "u16": Typed(0x06, 60000),
        "i32": Typed(0x07, -100000),
        "u32": Typed(0x08, 4000000000),
        "i64": Typed(0x09, -(2**40)),
        "u64": Typed(0x0A, 2**63 + 1),
        "dbl": 2.5,
        "str": "text",
        "arr": [1, [2, [3, {}]], []],
        "obj": {"nested": {"deeper": "yes"}},
    }
    expected = {
        "null": None,
        "t": True,
        "f": False,
        "i16": -5,
        "u16": 60000,
        "i32": -100000,
        "u32": 4000000000,
        "i64": -(2**40),
        "u64": 2**63 + 1,
        "dbl": 2.5,
        "str": "text",
        "arr": [1, [2, [3, {}]], []],
        "obj": {"nested": {"deeper": "yes"}},
    }
    data = encode(doc, large)
    assert data[0] == (0x01 if large else 0x00)
    decoded = decode_jsonb(data)
    assert decoded == expected
    assert isinstance(decoded, dict)
    assert list(decoded) == sorted(expected, key=mysql_key_order)  # MySQL's stored key order is kept


def test_memoryview_and_bytearray_input() -> None:
    data = encode([1, "a"])
    assert decode_jsonb(memoryview(data)) == [1, "a"]
    assert decode_jsonb(bytearray(data)) == [1, "a"]


def test_empty_input_is_none() -> None:
    assert decode_jsonb(b"") is None


def test_large_array_of_many_elements() -> None:
    values = list(range(-2000, 2000, 3)) + ["s" * i for i in range(50)]
    assert decode_jsonb(encode(values, large=True)) == values
    assert decode_jsonb(encode(values[:300])) == values[:300]


def test_nesting_up_to_100_levels() -> None:
    doc: Any = "leaf"
    for i in range(100):
        doc = [doc] if i % 2 else {"k": doc}
    assert decode_jsonb(encode(doc)) == doc


def nested_arrays(depth: int) -> bytes:
    """``depth`` small arrays, each holding only the next one (by offset); the innermost holds "x"."""
    t, body = 0x0C, b"\x01x"
    for _ in range(depth):
        body = struct.pack("<HH", 1, 7 + len(body)) + bytes([t]) + struct.pack("<H", 7) + body
        t = 0x02
    return bytes([t]) + body


def test_nesting_limit() -> None:
    doc: Any = "x"
    for _ in range(MAX_DEPTH):
        doc = [doc]
    assert decode_jsonb(nested_arrays(MAX_DEPTH)) == doc
    with pytest.raises(DecodeError, match=f"deeper than {MAX_DEPTH}"):
        decode_jsonb(nested_arrays(MAX_DEPTH + 1))
    with pytest.raises(DecodeError, match=f"deeper than {MAX_DEPTH}"):
        decode_jsonb(nested_arrays(5000))


# ----------------------------------------------------------------------------------------------------
# OPAQUE values
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opaque", "expected", "text"),
    [
        (Opaque(246, bytes([2, 1, 0x81, 0x00])), Decimal("1.0"), "1.0"),
        (Opaque(246, bytes([4, 2]) + bytes.fromhex("75c8")), Decimal("-10.55"), "-10.55"),
        (Opaque(10, packed_datetime(2024, 1, 15)), datetime.date(2024, 1, 15), '"2024-01-15"'),
        (Opaque(10, bytes(8)), "0000-00-00", '"0000-00-00"'),
        (
            Opaque(12, packed_datetime(2024, 1, 15, 10, 30, 45, 123456)),
            datetime.datetime(2024, 1, 15, 10, 30, 45, 123456),
            '"2024-01-15 10:30:45.123456"',
        ),
        (
            Opaque(7, packed_datetime(1999, 12, 31, 23, 59, 59)),
            datetime.datetime(1999, 12, 31, 23, 59, 59),
            '"1999-12-31 23:59:59.000000"',
        ),
        (Opaque(12, bytes(8)), "0000-00-00 00:00:00.000000", '"0000-00-00 00:00:00.000000"'),
        (
            Opaque(12, packed_datetime(2020, 0, 5, 1, 2, 3)),
            "2020-00-05 01:02:03.000000",
            '"2020-00-05 01:02:03.000000"',
        ),
        (
            Opaque(11, packed_time(False, 10, 30, 45, 123456)),
            datetime.timedelta(hours=10, minutes=30, seconds=45, microseconds=123456),
            '"10:30:45.123456"',
        ),
        (
            Opaque(11, packed_time(True, 838, 59, 59, 1)),
            -datetime.timedelta(hours=838, minutes=59, seconds=59, microseconds=1),
            '"-838:59:59.000001"',
        ),
        (Opaque(11, bytes(8)), datetime.timedelta(0), '"00:00:00.000000"'),
        (Opaque(252, b"\xde\xad\xbe\xef"), JsonOpaque(252, b"\xde\xad\xbe\xef"), '"base64:type252:3q2+7w=="'),
        (Opaque(255, b""), JsonOpaque(255, b""), '"base64:type255:"'),
    ],
)
def test_opaque(opaque: Opaque, expected: Any, text: str) -> None:
    decoded = decode_jsonb(encode(opaque))
    assert decoded == expected
    assert type(decoded) is type(expected)
    assert render_json_mysql_text(decoded) == text
    assert decode_opaque(opaque.type_code, opaque.data) == expected


@pytest.mark.parametrize(
    "opaque",
    [
        Opaque(246, b"\x02"),  # no scale byte
        Opaque(246, bytes([10, 2, 0x80])),  # fewer decimal bytes than DECIMAL(10,2) needs
        Opaque(246, bytes([70, 2]) + bytes(40)),  # precision beyond 65
        Opaque(12, bytes(7)),  # packed temporal shorter than 8 bytes
        Opaque(11, bytes(4)),
    ],
)
def test_bad_opaque_is_a_decode_error(opaque: Opaque) -> None:
    with pytest.raises(DecodeError):
        decode_jsonb(encode(opaque))


# ----------------------------------------------------------------------------------------------------
# Malformed documents
# ----------------------------------------------------------------------------------------------------

SAMPLE = {"a": [1, "two", 3.0, {"b": None}], "long key": "x" * 40, "n": Typed(0x09, 2**40)}


@pytest.mark.parametrize("large", [False, True])
def test_every_truncation_is_a_decode_error(large: bool) -> None:
    data = encode(SAMPLE, large)
    for cut in range(1, len(data)):
        with pytest.raises(DecodeError, match="malformed MySQL binary JSON"):
            decode_jsonb(data[:cut])


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"\x0d", "unknown JSON value type 0x0d"),
        (b"\x10\x00", "unknown JSON value type"),
        (b"\x04\x03", "unknown JSON literal"),
        (b"\x0c\x02\xff\xfe", "not valid UTF-8"),
        (b"\x0c\x05ab", "runs past"),
        (b"\x0c\x80\x80\x80\x80\x80\x01", "longer than 5 bytes"),
        (b"\x0c\xff\xff\xff\xff\x7f", "exceeds 2\\*\\*32"),
        (b"\x00\x00\x00\x0a\x00", "claims 10 bytes"),
        (b"\x02\x05\x00\x08\x00\x00\x00\x00\x00", "do not fit"),
        # array entry pointing outside the array
        (b"\x02\x01\x00\x07\x00\x0c\x40\x00", "lies outside"),
        # object key pointing outside the object
        (b"\x00\x01\x00\x0b\x00\x30\x00\x01\x00\x04\x00\x00", "lies outside"),
        (b"\x05\x01", "runs past"),
        (b"\x0f\xfc\x05ab", "runs past"),
    ],
)
def test_malformed_documents(data: bytes, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        decode_jsonb(data)


@given(st.binary(max_size=64))
def test_random_bytes_never_escape_as_other_errors(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_jsonb(data)


@given(st.data())
def test_mutated_documents_never_escape_as_other_errors(data: st.DataObject) -> None:
    doc = bytearray(encode(SAMPLE, data.draw(st.booleans())))
    for _ in range(data.draw(st.integers(1, 4))):
        doc[data.draw(st.integers(0, len(doc) - 1))] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        decode_jsonb(bytes(doc))


# ----------------------------------------------------------------------------------------------------
# Round trips and MySQL text
# ----------------------------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)


def mysql_order(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: mysql_order(value[k]) for k in sorted(value, key=mysql_key_order)}
    if isinstance(value, list):
        return [mysql_order(v) for v in value]
    return value


@settings(max_examples=150)
@given(json_values, st.booleans())
def test_round_trip_and_text(value: Any, large: bool) -> None:
    decoded = decode_jsonb(encode(value, large))
    assert decoded == value
    # without doubles, MySQL's text is exactly what json.dumps prints for keys in MySQL's order
    expected = json.dumps(mysql_order(value), ensure_ascii=False, separators=(", ", ": "))
    assert render_json_mysql_text(decoded) == expected
    compact = json.dumps(mysql_order(value), ensure_ascii=False, separators=(",", ":"))
    assert render_json_mysql_text(decoded, compact=True) == compact


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_round_trip(value: float) -> None:
    decoded = decode_jsonb(encode(value))
    assert isinstance(decoded, float)
    assert math.copysign(1, decoded) == math.copysign(1, value)
    assert decoded == value
    text = format_mysql_double(value)
    assert float(text) == value  # shortest round-trip digits, no precision lost
    assert "." in text or "e" in text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (1e-5, "0.00001"),
        (1e-15, "0.000000000000001"),
        (1e-16, "1e-16"),
        (999999999999999.9, "999999999999999.9"),
        (1e15, "1e15"),
        (1234567890123456.8, "1234567890123456.8"),
        (9007199254740992.0, "9.007199254740992e15"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
        (5e-324, "5e-324"),
        (-1e25, "-1e25"),
        (42.0, "42.0"),
    ],
)
def test_format_mysql_double(value: float, text: str) -> None:
    assert format_mysql_double(value) == text


def test_render_spacing_and_key_order() -> None:
    doc: JsonValue = {"bb": [1, 2.0, "x"], "a": {"z": None, "yy": True}, "ccc": Decimal("1.50")}
    assert render_json_mysql_text(doc) == '{"a": {"z": null, "yy": true}, "bb": [1, 2.0, "x"], "ccc": 1.50}'
    assert render_json_mysql_text(doc, compact=True) == '{"a":{"z":null,"yy":true},"bb":[1,2.0,"x"],"ccc":1.50}'


def test_render_escaping() -> None:
    text = 'q" b\\ \b\f\n\r\t \x01\x1f é 😀 \x7f'
    assert render_json_mysql_text(text) == '"q\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001f é 😀 \x7f"'
    assert render_json_mysql_text({"k\n": 1}) == '{"k\\n": 1}'


def test_render_rejects_foreign_types() -> None:
    with pytest.raises(TypeError, match="cannot render set"):
        render_json_mysql_text({1, 2})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "value", "end"),
    [
        (b"\x05", 5, 1),
        (b"\x81\x01", 129, 2),
        (b"\x80\x80\x80\x80\x01", 2**28, 5),
        (b"\xff\xff\xff\xff\x0f", 2**32 - 1, 5),
    ],
)
def test_read_varlen(data: bytes, value: int, end: int) -> None:
    assert read_varlen(b"\x00" + data + b"\x00", 1) == (value, end + 1)


# ----------------------------------------------------------------------------------------------------
# Partial JSON updates
# ----------------------------------------------------------------------------------------------------


def packed(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 2**16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 2**24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def encode_diff(op: int, path: str, value: Any = None) -> bytes:
    raw = path.encode()
    out = bytes([op]) + packed(len(raw)) + raw
    if op != 2:
        doc = encode(value)
        out += packed(len(doc)) + doc
    return out


def test_decode_json_diff() -> None:
    body = (
        encode_diff(0, "$.a", "new")
        + encode_diff(1, "$.b[1]", {"x": [1, 2]})
        + encode_diff(2, '$."key with space"')
        + encode_diff(0, "$.big", "y" * 300)  # value length needs a 0xfc packed integer
    )
    column = b"\xaa" + struct.pack("<I", len(body)) + body + b"\xbb"
    diffs, end = decode_json_diff(column, 5, 5 + len(body))
    assert end == 5 + len(body)
    assert diffs == [
        JsonDiff("REPLACE", "$.a", "new"),
        JsonDiff("INSERT", "$.b[1]", {"x": [1, 2]}),
        JsonDiff("REMOVE", '$."key with space"', None),
        JsonDiff("REPLACE", "$.big", "y" * 300),
    ]
    assert decode_json_diff_column(column, 1) == (diffs, len(column) - 1)
    # a type of their own: a column updated in place is told from a document written whole, even with no diffs
    assert type(diffs) is JsonDiffs
    empty, _ = decode_json_diff_column(struct.pack("<I", 0), 0)
    assert type(empty) is JsonDiffs
    assert empty == []


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"\x03\x01$", "operation 3"),
        (b"\x00", "path length .* is missing"),
        (b"\x00\x05$.a", "runs past"),
        (b"\x00\x03$.a", "value length .* is missing"),
        (b"\x00\x03$.a\x09\x04\x00", "runs past"),
        (b"\x00\x03$.a\x02\x04\x07", "malformed MySQL binary JSON"),
        (b"\x02\x02\xff\xfe", "not valid UTF-8"),
        (b"\x02\xfb", "runs past"),
    ],
)
def test_bad_json_diffs(body: bytes, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        decode_json_diff(body, 0, len(body))


def test_json_diff_list_longer_than_buffer() -> None:
    with pytest.raises(DecodeError, match="truncated"):
        decode_json_diff_column(struct.pack("<I", 50) + encode_diff(2, "$.a"), 0)


@pytest.mark.parametrize(
    ("path", "legs"),
    [
        ("$", []),
        ("$.a.b[3]", ["a", "b", 3]),
        ('$."key with space"[0]', ["key with space", 0]),
        ('$."quote\\"d".x', ['quote"d', "x"]),
        ("$[last]", [-1]),
        ("$[last-2].k", [-3, "k"]),
        ("$ . a [ 1 ]", ["a", 1]),
    ],
)
def test_parse_json_path(path: str, legs: list[str | int]) -> None:
    assert parse_json_path(path) == legs


@pytest.mark.parametrize("path", ["a.b", "$.*", "$[*]", "$**.a", "$[1 to 3]", '$."open', "$[1", "$x"])
def test_parse_json_path_rejects(path: str) -> None:
    with pytest.raises(DecodeError):
        parse_json_path(path)


def test_apply_json_diffs() -> None:
    before: JsonValue = {"a": 1, "b": [10, 20, 30], "c": {"d": "e"}, "list": []}
    diffs = [
        JsonDiff("REPLACE", "$.a", {"new": True}),
        JsonDiff("INSERT", "$.b[1]", 15),
        JsonDiff("INSERT", "$.b[100]", 99),
        JsonDiff("REMOVE", "$.b[0]"),
        JsonDiff("INSERT", "$.c.f", [1]),
        JsonDiff("REMOVE", "$.c.d"),
        JsonDiff("REPLACE", "$.b[last]", "last"),
        JsonDiff("INSERT", "$.list[0]", None),
    ]
    after = apply_json_diffs(before, diffs)
    assert after == {"a": {"new": True}, "b": [15, 20, 30, "last"], "c": {"f": [1]}, "list": [None]}
    assert before == {"a": 1, "b": [10, 20, 30], "c": {"d": "e"}, "list": []}  # input untouched


def test_apply_replace_whole_document() -> None:
    assert apply_json_diffs([1], [JsonDiff("REPLACE", "$", {"x": 1})]) == {"x": 1}


@pytest.mark.parametrize(
    "diff",
    [
        JsonDiff("REPLACE", "$.missing", 1),
        JsonDiff("REPLACE", "$.a[5]", 1),
        JsonDiff("INSERT", "$.a", 1),  # JSON_INSERT never overwrites: MySQL rejects the diff
        JsonDiff("INSERT", "$.x.y", 1),
        JsonDiff("REMOVE", "$.nope"),
        JsonDiff("REMOVE", "$.a[3]"),
        JsonDiff("REMOVE", "$.a.key"),  # member leg on an array: no auto-wrapping
        JsonDiff("REMOVE", "$"),
    ],
)
def test_apply_rejected_diffs(diff: JsonDiff) -> None:
    with pytest.raises(DecodeError, match="cannot apply JSON diff"):
        apply_json_diffs({"a": [1, 2]}, [diff])


def test_decoded_diffs_reconstruct_after_image() -> None:
    before = decode_jsonb(encode({"name": "x", "tags": ["a", "b"], "n": 1}))
    body = encode_diff(0, "$.name", "y") + encode_diff(1, "$.tags[2]", "c") + encode_diff(2, "$.n")
    diffs, _ = decode_json_diff(body, 0, len(body))
    after = apply_json_diffs(before, diffs)
    assert render_json_mysql_text(after) == '{"name": "y", "tags": ["a", "b", "c"]}'
