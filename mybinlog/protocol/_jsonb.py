"""MySQL binary JSON (JSON columns, type 245) and partial JSON updates (sans-IO, pure functions).

MySQL 5.7+ stores a JSON column value in its own binary format: one type byte, then the value. Containers
(objects and arrays) come in a small form (16-bit counts and offsets, documents under 64 KiB) and a large form
(32-bit); keys are sorted by length, then bytewise. Scalars small enough to fit an entry's offset field
(literals, 16-bit integers, and in the large form 32-bit integers) are inlined in the entry. Other values are
addressed by an offset from the start of their container. Strings and OPAQUE values carry a variable-length
size (7 bits per byte, least significant group first, high bit = more bytes follow; at most 5 bytes).

:func:`decode_jsonb` turns a document into Python values:

======================  ==============================================================================
JSON                    Python
======================  ==============================================================================
object / array          ``dict`` (keys in MySQL's stored order) / ``list``
string                  ``str`` (utf8mb4)
int16..int64, uint*     ``int``
double                  ``float``
true / false / null     ``True`` / ``False`` / ``None``
OPAQUE NEWDECIMAL       :class:`decimal.Decimal` (exact, with the stored scale)
OPAQUE DATE             :class:`datetime.date`, or ``'0000-00-00'``-style text for zero/invalid dates
OPAQUE TIME             :class:`datetime.timedelta`
OPAQUE DATETIME/TSTAMP  naive :class:`datetime.datetime`, or ``'0000-00-00 00:00:00.000000'``-style text
other OPAQUE            :class:`JsonOpaque` (MySQL field type code and raw bytes; e.g. BLOB, BIT, GEOMETRY)
======================  ==============================================================================

Zero/invalid temporal values inside JSON are returned as the text MySQL prints for them (always with 6
fraction digits for DATETIME/TIMESTAMP, as MySQL renders JSON temporals) because Python's datetime cannot hold
them; see :mod:`mybinlog.protocol._values` for the same rule on columns. An empty value (0 bytes, which MySQL
writes for a JSON column that holds no document, e.g. after some ALTERs or for NULL-ish partial updates)
decodes to ``None``.

Malformed input always raises :class:`~mybinlog.errors.DecodeError`, never ``IndexError``,
``struct.error``, ``UnicodeDecodeError`` or ``RecursionError``: every offset and size is checked against the
enclosing container, and nesting deeper than :data:`MAX_DEPTH` is rejected (MySQL itself allows 100).

:func:`render_json_mysql_text` produces MySQL's ``CAST(json AS CHAR)`` text. One documented deviation, kept
for agreement with go-mysql's conformance vectors: an OPAQUE value of type VAR_STRING (253) is rendered with
the ``base64:type253:`` envelope like every other non-temporal opaque, whereas recent MySQL servers print it
as a plain string.

Partial updates (``binlog_row_value_options=PARTIAL_JSON``, PARTIAL_UPDATE_ROWS_EVENT, type 39) carry, instead
of the whole after-image of a JSON column, a list of diffs (REPLACE / INSERT / REMOVE at a path) that MySQL
applies to the before-image: :func:`decode_json_diff` reads them and :func:`apply_json_diffs` applies them
with the server's semantics.
"""

from __future__ import annotations

import base64
import datetime
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias

from mybinlog.errors import DecodeError, TruncatedError
from mybinlog.protocol._values import decimal_size, decode_decimal, decode_packed_int

__all__ = [
    "MAX_DEPTH",
    "JsonDiff",
    "JsonOpaque",
    "JsonValue",
    "apply_json_diffs",
    "JsonDiffs",
    "decode_json_diff",
    "decode_json_diff_column",
    "decode_jsonb",
    "decode_opaque",
    "format_mysql_double",
    "parse_json_path",
    "read_varlen",
    "render_json_mysql_text",
]


@dataclass(frozen=True, slots=True)
class JsonOpaque:
    """An OPAQUE JSON value of a MySQL type mybinlog does not convert (BLOB, BIT, GEOMETRY, ...).

    ``type_code`` is the MySQL field type (e.g. 252 for BLOB), ``data`` the raw bytes as MySQL stored them.
    MySQL renders it as ``"base64:type<type_code>:<base64 of data>"``.
    """

    type_code: int
    data: bytes


JsonValue: TypeAlias = (
    "dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | Decimal | datetime.date"
    " | datetime.datetime | datetime.timedelta | JsonOpaque | None"
)

#: Deepest container nesting accepted by :func:`decode_jsonb` (MySQL's own limit is 100).
MAX_DEPTH = 150

# JSONB type bytes
_SMALL_OBJECT = 0x00
_LARGE_OBJECT = 0x01
_SMALL_ARRAY = 0x02
_LARGE_ARRAY = 0x03
_LITERAL = 0x04
_INT16 = 0x05
_UINT16 = 0x06
_INT32 = 0x07
_UINT32 = 0x08
_INT64 = 0x09
_UINT64 = 0x0A
_DOUBLE = 0x0B
_STRING = 0x0C
_OPAQUE = 0x0F

# MySQL field types that OPAQUE values of interest carry
_MYSQL_TYPE_TIMESTAMP = 7
_MYSQL_TYPE_DATE = 10
_MYSQL_TYPE_TIME = 11
_MYSQL_TYPE_DATETIME = 12
_MYSQL_TYPE_NEWDECIMAL = 246

_S_I16 = struct.Struct("<h").unpack_from
_S_U16 = struct.Struct("<H").unpack_from
_S_I32 = struct.Struct("<i").unpack_from
_S_U32 = struct.Struct("<I").unpack_from
_S_I64 = struct.Struct("<q").unpack_from
_S_U64 = struct.Struct("<Q").unpack_from
_S_F64 = struct.Struct("<d").unpack_from
_S_2U16 = struct.Struct("<HH").unpack_from
_S_2U32 = struct.Struct("<II").unpack_from
_S_U32_U16 = struct.Struct("<IH").unpack_from

_SCALAR_SIZES = {_INT16: 2, _UINT16: 2, _INT32: 4, _UINT32: 4, _INT64: 8, _UINT64: 8, _DOUBLE: 8}
_SCALAR_UNPACK: dict[int, Callable[[bytes, int], tuple[int | float]]] = {
    _INT16: _S_I16,
    _UINT16: _S_U16,
    _INT32: _S_I32,
    _UINT32: _S_U32,
    _INT64: _S_I64,
    _UINT64: _S_U64,
    _DOUBLE: _S_F64,
}


class _Malformed(Exception):
    """Internal: raised deep in the parser, turned into DecodeError (with context) at the entry point."""


def read_varlen(buf: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """Read a JSONB variable-length size at ``pos``; returns ``(value, new_pos)``.

    7 bits per byte, least significant group first, high bit set when another byte follows; at most 5 bytes
    and at most 2**32 - 1, as MySQL writes it.
    """
    if end is None:
        end = len(buf)
    value = 0
    shift = 0
    for i in range(pos, min(pos + 5, end)):
        b = buf[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value > 0xFFFFFFFF:
                raise DecodeError(
                    f"JSON variable-length size at offset {pos} exceeds 2**32 - 1: corrupt document"
                )
            return value, i + 1
        shift += 7
    if pos + 5 <= end:
        raise DecodeError(
            f"JSON variable-length size at offset {pos} is longer than 5 bytes: corrupt document"
        )
    raise TruncatedError(f"JSON variable-length size at offset {pos} runs past the end of the document")


def _packed_fields(packed: int) -> tuple[int, int, int, int, int, int, int, bool]:
    negative = packed < 0
    if negative:
        packed = -packed
    usec = packed & 0xFFFFFF
    ymdhms = packed >> 24
    ymd = ymdhms >> 17
    hms = ymdhms & 0x1FFFF
    year, month = divmod(ymd >> 5, 13)
    return year, month, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63, usec, negative


def decode_opaque(type_code: int, data: bytes) -> JsonValue:
    """Convert the payload of an OPAQUE JSON value of MySQL field type ``type_code``.

    NEWDECIMAL (246) payloads are precision, scale, then the DECIMAL bytes; DATE (10), TIME (11), DATETIME
    (12) and TIMESTAMP (7) payloads are MySQL's 8-byte little-endian "packed" temporal. Anything else is
    returned as :class:`JsonOpaque`.
    """
    if type_code == _MYSQL_TYPE_NEWDECIMAL:
        if len(data) < 2:
            raise DecodeError(
                f"JSON OPAQUE DECIMAL has {len(data)} bytes but needs at least 2 (precision and scale): "
                "corrupt document"
            )
        precision, scale = data[0], data[1]
        need = decimal_size(precision, scale)
        if len(data) < 2 + need:
            raise DecodeError(
                f"JSON OPAQUE DECIMAL({precision},{scale}) needs {need} value bytes but has {len(data) - 2}: "
                "corrupt document"
            )
        return decode_decimal(data, 2, precision, scale)[0]
    if type_code in (_MYSQL_TYPE_DATE, _MYSQL_TYPE_TIME, _MYSQL_TYPE_DATETIME, _MYSQL_TYPE_TIMESTAMP):
        if len(data) < 8:
            raise DecodeError(
                f"JSON OPAQUE temporal of MySQL type {type_code} has {len(data)} bytes but needs 8: "
                "corrupt document"
            )
        packed = _S_I64(data, 0)[0]
        if type_code == _MYSQL_TYPE_TIME:
            # packed TIME: (hour << 12 | minute << 6 | second) << 24 | microseconds, negated for negative
            # times; the hour field has 10 bits (up to 838)
            magnitude = -packed if packed < 0 else packed
            hms = magnitude >> 24
            seconds = ((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 63) * 60 + (hms & 63)
            if packed < 0:
                return datetime.timedelta(0, -seconds, -(magnitude & 0xFFFFFF))
            return datetime.timedelta(0, seconds, magnitude & 0xFFFFFF)
        year, month, day, hour, minute, second, usec, negative = _packed_fields(packed)
        if type_code == _MYSQL_TYPE_DATE:
            if year and month and day:
                try:
                    return datetime.date(year, month, day)
                except ValueError:
                    pass
            return f"{year:04d}-{month:02d}-{day:02d}"
        if year and month and day and not negative:
            try:
                return datetime.datetime(year, month, day, hour, minute, second, usec)
            except ValueError:
                pass
        return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}.{usec:06d}"
    return JsonOpaque(type_code, bytes(data))


def _parse_value(data: bytes, type_byte: int, pos: int, end: int, depth: int) -> JsonValue:
    """Parse the value of type ``type_byte`` whose payload starts at ``pos``; ``end`` bounds it."""
    if type_byte <= _LARGE_ARRAY:
        if depth >= MAX_DEPTH:
            raise _Malformed(f"containers are nested deeper than {MAX_DEPTH} levels")
        return _parse_container(data, type_byte, pos, end, depth + 1)
    if type_byte == _STRING:
        length, start = read_varlen(data, pos, end)
        stop = start + length
        if stop > end:
            raise _Malformed(f"string of {length} bytes at offset {start} runs past its container")
        return data[start:stop].decode("utf-8")
    size = _SCALAR_SIZES.get(type_byte)
    if size is not None:
        if pos + size > end:
            raise _Malformed(f"{size}-byte number at offset {pos} runs past its container")
        return _SCALAR_UNPACK[type_byte](data, pos)[0]
    if type_byte == _LITERAL:
        if pos >= end:
            raise _Malformed(f"literal at offset {pos} runs past its container")
        return _literal(data[pos], pos)
    if type_byte == _OPAQUE:
        if pos >= end:
            raise _Malformed(f"OPAQUE value at offset {pos} runs past its container")
        type_code = data[pos]
        length, start = read_varlen(data, pos + 1, end)
        stop = start + length
        if stop > end:
            raise _Malformed(f"OPAQUE value of {length} bytes at offset {start} runs past its container")
        return decode_opaque(type_code, data[start:stop])
    raise _Malformed(f"unknown JSON value type 0x{type_byte:02x} at offset {pos - 1}")


def _literal(v: int, pos: int) -> bool | None:
    if v == 0x00:
        return None
    if v == 0x01:
        return True
    if v == 0x02:
        return False
    raise _Malformed(f"unknown JSON literal 0x{v:02x} at offset {pos}")


def _parse_container(data: bytes, type_byte: int, pos: int, end: int, depth: int) -> JsonValue:
    large = type_byte & 1
    is_object = type_byte <= _LARGE_OBJECT
    if large:
        if pos + 8 > end:
            raise _Malformed(f"large container header at offset {pos} runs past the document")
        count, size = _S_2U32(data, pos)
        offset_size = 4
    else:
        if pos + 4 > end:
            raise _Malformed(f"small container header at offset {pos} runs past the document")
        count, size = _S_2U16(data, pos)
        offset_size = 2
    if size > end - pos:
        raise _Malformed(f"container at offset {pos} claims {size} bytes but only {end - pos} remain")
    cend = pos + size
    value_entry = 1 + offset_size
    key_entry = offset_size + 2 if is_object else 0
    header = 2 * offset_size + count * (key_entry + value_entry)
    if header > size:
        raise _Malformed(
            f"container at offset {pos} has {count} entries, which do not fit in its {size} bytes"
        )
    entry = pos + 2 * offset_size
    if is_object:
        keys: list[str] = []
        key_unpack = _S_U32_U16 if large else _S_2U16
        for _ in range(count):
            key_off, key_len = key_unpack(data, entry)
            key_stop = key_off + key_len
            if key_off < header or key_stop > size:
                raise _Malformed(f"object key at offset {pos + key_off} lies outside its object")
            keys.append(data[pos + key_off : pos + key_stop].decode("utf-8"))
            entry += key_entry
        obj: dict[str, JsonValue] = {}
        for key in keys:
            obj[key] = _parse_entry(data, entry, pos, size, cend, large, depth)
            entry += value_entry
        return obj
    arr: list[JsonValue] = []
    append = arr.append
    for _ in range(count):
        append(_parse_entry(data, entry, pos, size, cend, large, depth))
        entry += value_entry
    return arr


def _parse_entry(
    data: bytes, entry: int, base: int, size: int, cend: int, large: int, depth: int
) -> JsonValue:
    t = data[entry]
    # inlined values: literals and 16-bit integers always, 32-bit integers in large containers
    if t == _LITERAL:
        return _literal(data[entry + 1], entry + 1)
    if t == _INT16:
        return _S_I16(data, entry + 1)[0]  # type: ignore[no-any-return]
    if t == _UINT16:
        return _S_U16(data, entry + 1)[0]  # type: ignore[no-any-return]
    if large:
        if t == _INT32:
            return _S_I32(data, entry + 1)[0]  # type: ignore[no-any-return]
        if t == _UINT32:
            return _S_U32(data, entry + 1)[0]  # type: ignore[no-any-return]
        offset = _S_U32(data, entry + 1)[0]
    else:
        offset = _S_U16(data, entry + 1)[0]
    if offset >= size:
        raise _Malformed(
            f"value offset {offset} at offset {entry + 1} lies outside its {size}-byte container"
        )
    return _parse_value(data, t, base + offset, cend, depth)


def decode_jsonb(data: bytes | bytearray | memoryview) -> JsonValue:
    """Decode a whole MySQL binary JSON document (leading type byte included) into Python values.

    Empty input (0 bytes) returns ``None``. Malformed input raises :class:`DecodeError`.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    n = len(data)
    if n == 0:
        return None
    try:
        return _parse_value(data, data[0], 1, n, 0)
    except DecodeError as exc:
        raise DecodeError(f"malformed MySQL binary JSON document ({n} bytes): {exc.message}") from exc
    except _Malformed as exc:
        raise DecodeError(f"malformed MySQL binary JSON document ({n} bytes): {exc}") from None
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"malformed MySQL binary JSON document ({n} bytes): a string or key is not valid UTF-8 "
            f"({exc.reason})"
        ) from None
    except RecursionError:
        raise DecodeError(
            f"malformed MySQL binary JSON document ({n} bytes): nested too deeply for the Python stack"
        ) from None
    except (IndexError, struct.error) as exc:  # an entry table that runs off the end of the data
        raise DecodeError(
            f"malformed MySQL binary JSON document ({n} bytes): an entry runs past the end of the data "
            f"({exc})"
        ) from None


# ----------------------------------------------------------------------------------------------------
# Rendering as MySQL text
# ----------------------------------------------------------------------------------------------------

_DOUBLE_WIDTH = 34  # MY_GCVT_MAX_FIELD_WIDTH = DBL_DIG + 4 + max(5, MAX_DECPT_FOR_F_FORMAT)
_MAX_DECPT_FOR_F = 15  # DBL_DIG


def format_mysql_double(value: float) -> str:
    """Format a double the way MySQL prints JSON doubles (``my_gcvt`` with shortest round-trip digits).

    Plain notation for decimal exponents -14..15 (``0.00001``, ``999999999999999.9``), scientific otherwise
    (``1e-16``, ``1e15``, ``1.2345678901234568e16``); integral values in plain notation get ``.0`` (``1.0``).
    """
    if value != value or value in (float("inf"), float("-inf")):
        return repr(value)  # MySQL JSON cannot hold these; keep them visible rather than fail
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign = "-"
        text = text[1:]
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    decpt = len(int_part) + exponent  # value = 0.<digits> * 10**decpt
    stripped = digits.lstrip("0")
    decpt -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    if not digits:
        digits, decpt = "0", 1
    n = len(digits)
    if decpt <= 0:
        f_len = n - decpt + 2
    elif decpt < n:
        f_len = n + 1
    else:
        f_len = decpt
    width = _DOUBLE_WIDTH - (1 if sign else 0)
    if f_len <= width and decpt > -_MAX_DECPT_FOR_F and (decpt <= _MAX_DECPT_FOR_F or n > decpt):
        if decpt <= 0:
            out = "0." + "0" * -decpt + digits
        elif decpt < n:
            out = digits[:decpt] + "." + digits[decpt:]
        else:
            out = digits + "0" * (decpt - n) + ".0"
    else:
        out = digits[0] + ("." + digits[1:] if n > 1 else "") + "e" + str(decpt - 1)
    return sign + out


_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"})


def _quote(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


def _mysql_key_order(key: str) -> tuple[int, bytes]:
    raw = key.encode("utf-8")
    return len(raw), raw


def _render(value: JsonValue, out: Callable[[str], object], comma: str, colon: str) -> None:
    # bool before int (bool is an int); datetime before date (datetime is a date)
    if value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, str):
        out(_quote(value))
    elif isinstance(value, int):
        out(str(value))
    elif isinstance(value, float):
        out(format_mysql_double(value))
    elif isinstance(value, dict):
        out("{")
        first = True
        for key in sorted(value, key=_mysql_key_order):
            if not first:
                out(comma)
            first = False
            out(_quote(key))
            out(colon)
            _render(value[key], out, comma, colon)
        out("}")
    elif isinstance(value, list):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(comma)
            _render(item, out, comma, colon)
        out("]")
    elif isinstance(value, Decimal):
        out(format(value, "f"))
    elif isinstance(value, datetime.datetime):
        out(
            f'"{value.year:04d}-{value.month:02d}-{value.day:02d} '
            f'{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"'
        )
    elif isinstance(value, datetime.date):
        out(f'"{value.year:04d}-{value.month:02d}-{value.day:02d}"')
    elif isinstance(value, datetime.timedelta):
        total = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
        sign = "-" if total < 0 else ""
        seconds, usec = divmod(abs(total), 1_000_000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        out(f'"{sign}{hour:02d}:{minute:02d}:{second:02d}.{usec:06d}"')
    elif isinstance(value, JsonOpaque):
        out(_quote(f"base64:type{value.type_code}:{base64.b64encode(value.data).decode('ascii')}"))
    else:
        raise TypeError(f"cannot render {type(value).__name__} as MySQL JSON text: not a decoded JSON value")


def render_json_mysql_text(value: JsonValue, *, compact: bool = False) -> str:
    """Render a decoded JSON value as MySQL's ``CAST(json AS CHAR)`` text.

    Object keys are printed in MySQL's order (by UTF-8 length, then bytewise), separators are ``", "`` and
    ``": "`` like MySQL (``compact=True`` drops the spaces, as go-mysql's renderer does), doubles are printed
    as MySQL prints them (:func:`format_mysql_double`), decimals unquoted, temporals quoted with 6 fraction
    digits, and other OPAQUE values as ``"base64:type<N>:<data>"``.
    """
    parts: list[str] = []
    if compact:
        _render(value, parts.append, ",", ":")
    else:
        _render(value, parts.append, ", ", ": ")
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------
# Partial JSON updates
# ----------------------------------------------------------------------------------------------------

_OPERATIONS = ("REPLACE", "INSERT", "REMOVE")


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One change of a partial JSON update.

    ``operation`` is ``'REPLACE'``, ``'INSERT'`` or ``'REMOVE'``; ``path`` is the MySQL JSON path text as
    logged (``$.a.b[3]``, ``$."key with spaces"``); ``value`` is the new value (``None`` for REMOVE, and also
    for a JSON ``null``: tell them apart by ``operation``).
    """

    operation: str
    path: str
    value: JsonValue = None


class JsonDiffs(list[JsonDiff]):
    """The diffs of one JSON column in the after image of a PARTIAL_UPDATE_ROWS event: a ``list`` of
    :class:`JsonDiff`, and a type of its own so that a consumer can tell a column updated in place from a column
    written whole. Empty: the column was left as it was (MySQL marks every JSON column of such an update partial,
    changed or not), which is not the document ``[]``; apply it with :func:`apply_json_diffs` to the before image's
    document."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"JsonDiffs({list.__repr__(self)})"


def decode_json_diff(buf: bytes, pos: int, end: int) -> tuple[JsonDiffs, int]:
    """Decode the diffs of one JSON column of a PARTIAL_UPDATE_ROWS_EVENT, from ``pos`` up to ``end``.

    ``[pos, end)`` holds the diffs only: in the row image they follow a 4-byte little-endian length, which the
    caller reads to find ``end`` (or use :func:`decode_json_diff_column`). Each diff is an operation byte
    (0 REPLACE, 1 INSERT, 2 REMOVE), a length-encoded path length and the path text, then, unless REMOVE, a
    length-encoded value length and a binary JSON value. Returns ``(diffs, end)``.
    """
    if end > len(buf):
        raise TruncatedError(
            f"JSON diff list at offset {pos} claims {end - pos} bytes but only {len(buf) - pos} remain: "
            "the row image is truncated"
        )
    diffs = JsonDiffs()
    while pos < end:
        op = buf[pos]
        if op > 2:
            raise DecodeError(
                f"JSON diff at offset {pos} has operation {op}, but MySQL writes only 0 (REPLACE), "
                "1 (INSERT) and 2 (REMOVE): corrupt partial update"
            )
        path_len, pos = _diff_length(buf, pos + 1, end, "path")
        path_end = pos + path_len
        try:
            path = buf[pos:path_end].decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError(
                f"JSON diff path at offset {pos} is not valid UTF-8: corrupt partial update"
            ) from None
        pos = path_end
        if op == 2:
            diffs.append(JsonDiff("REMOVE", path, None))
            continue
        value_len, pos = _diff_length(buf, pos, end, "value")
        value_end = pos + value_len
        diffs.append(JsonDiff(_OPERATIONS[op], path, decode_jsonb(buf[pos:value_end])))
        pos = value_end
    return diffs, end


def _diff_length(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    if pos >= end:
        raise DecodeError(f"JSON diff {what} length at offset {pos} is missing: corrupt partial update")
    length, new_pos = decode_packed_int(buf[:end], pos)
    if length is None or new_pos + length > end:
        raise DecodeError(
            f"JSON diff {what} length at offset {pos} ({length}) runs past the end of the diff list: corrupt "
            "partial update"
        )
    return length, new_pos


def decode_json_diff_column(buf: bytes, pos: int) -> tuple[JsonDiffs, int]:
    """Decode a partial JSON column value: a 4-byte little-endian length, then the diffs."""
    if pos + 4 > len(buf):
        raise TruncatedError(f"JSON diff list length at offset {pos} runs past the end of the row image")
    length = _S_U32(buf, pos)[0]
    return decode_json_diff(buf, pos + 4, pos + 4 + length)


# A path leg: a member name (str) or an array index (int; negative counts from the end: [last] = -1,
# [last-2] = -3).
_PathLeg = str | int


def parse_json_path(path: str) -> list[_PathLeg]:
    """Parse a MySQL JSON path of ``$``, ``.member``, ``."quoted member"``, ``[N]``, ``[last]``, ``[last-N]``.

    Wildcards and ranges are rejected: MySQL never logs them in partial updates.
    """
    text = path.strip()
    if not text.startswith("$"):
        raise DecodeError(f"JSON path {path!r} does not start with '$': corrupt partial update")
    legs: list[_PathLeg] = []
    i = 1
    n = len(text)
    decoder = json.JSONDecoder()
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == ".":
            i += 1
            while i < n and text[i].isspace():
                i += 1
            if i < n and text[i] == '"':
                try:
                    name, i = decoder.raw_decode(text, i)
                except ValueError:
                    raise DecodeError(f"JSON path {path!r} has a badly quoted member name") from None
                legs.append(str(name))
            else:
                start = i
                while i < n and text[i] not in ".[" and not text[i].isspace():
                    i += 1
                name = text[start:i]
                if not name or name == "*":
                    raise DecodeError(
                        f"JSON path {path!r} has an empty or wildcard member: not supported here"
                    )
                legs.append(name)
        elif c == "[":
            close = text.find("]", i)
            if close < 0:
                raise DecodeError(f"JSON path {path!r} has an unclosed '['")
            inner = "".join(text[i + 1 : close].split())
            i = close + 1
            if inner.isdigit():
                legs.append(int(inner))
            elif inner == "last":
                legs.append(-1)
            elif inner.startswith("last-") and inner[5:].isdigit():
                legs.append(-1 - int(inner[5:]))
            else:
                raise DecodeError(f"JSON path {path!r} has an unsupported array leg [{inner}]")
        else:
            raise DecodeError(f"JSON path {path!r} has an unexpected character {c!r} at position {i}")
    return legs


def _copy(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _array_index(leg: int, size: int) -> int | None:
    """Resolve an array leg against an array of ``size`` elements; None when it addresses no element."""
    idx = leg if leg >= 0 else size + leg
    return idx if 0 <= idx < size else None


def _seek(doc: JsonValue, legs: Sequence[_PathLeg]) -> JsonValue:
    """Follow ``legs`` exactly (no auto-wrapping); raise LookupError when the path does not exist."""
    node = doc
    for leg in legs:
        if isinstance(node, dict) and isinstance(leg, str):
            node = node[leg]
        elif isinstance(node, list) and isinstance(leg, int):
            idx = _array_index(leg, len(node))
            if idx is None:
                raise LookupError(leg)
            node = node[idx]
        else:
            raise LookupError(leg)  # noqa: TRY004 - a missing path, not a caller's type error
    return node


def _apply_one(doc: JsonValue, diff: JsonDiff) -> JsonValue:
    legs = parse_json_path(diff.path)
    if not legs:
        if diff.operation == "REPLACE":
            return _copy(diff.value)
        raise LookupError("$")
    parent = _seek(doc, legs[:-1])
    last = legs[-1]
    op = diff.operation
    if op == "REPLACE":
        if isinstance(parent, dict) and isinstance(last, str) and last in parent:
            parent[last] = _copy(diff.value)
            return doc
        if isinstance(parent, list) and isinstance(last, int):
            idx = _array_index(last, len(parent))
            if idx is not None:
                parent[idx] = _copy(diff.value)
                return doc
        raise LookupError(last)
    if op == "INSERT":
        if isinstance(parent, dict) and isinstance(last, str) and last not in parent:
            parent[last] = _copy(diff.value)
            return doc
        if isinstance(parent, list) and isinstance(last, int):
            size = len(parent)
            idx = last if last >= 0 else max(size + last, 0)
            parent.insert(min(idx, size), _copy(diff.value))
            return doc
        raise LookupError(last)
    if op == "REMOVE":
        if isinstance(parent, dict) and isinstance(last, str) and last in parent:
            del parent[last]
            return doc
        if isinstance(parent, list) and isinstance(last, int):
            idx = _array_index(last, len(parent))
            if idx is not None:
                del parent[idx]
                return doc
        raise LookupError(last)
    raise DecodeError(f"unknown JSON diff operation {op!r}: expected REPLACE, INSERT or REMOVE")


def apply_json_diffs(doc: JsonValue, diffs: Sequence[JsonDiff]) -> JsonValue:
    """Apply partial-update diffs to a decoded JSON document; return the new document (``doc`` is unchanged).

    Semantics follow the server's ``apply_json_diff``: REPLACE needs an existing value at the path; INSERT
    adds a member that does not exist yet, or inserts into an array at the index (appending past the end);
    REMOVE needs an existing member or element. Paths are followed exactly, without auto-wrapping. A diff that
    cannot be applied raises :class:`DecodeError`: the before-image does not match the diffs (e.g. it is not
    the full before-image; log with binlog_row_image=FULL).
    """
    result = _copy(doc)
    for diff in diffs:
        try:
            result = _apply_one(result, diff)
        except LookupError:
            raise DecodeError(
                f"cannot apply JSON diff {diff.operation} {diff.path}: the path does not exist in the "
                "before-image (or already exists, for INSERT); the before-image does not match the partial "
                "update, which happens when it is not the full before-image (use binlog_row_image=FULL)"
            ) from None
    return result
