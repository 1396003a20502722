"""Values as text: TabSeparated fields, and the conversions both the encoders and the canonical forms use
(decimals, MySQL date and time text, float32, IP addresses, UUIDs, vectors)."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import re
import struct
import uuid
from collections.abc import Callable
from typing import Any

from .._tsv import _UNESCAPE_RE, _unescape_match

__all__ = ["NULL_FIELD", "f32_repr", "tsv_field_text"]


NULL_FIELD = "\\N"
"""The TabSeparated field of NULL."""


# ---------------------------------------------------------------------------------------------------------------
# TabSeparated fields (escaping: target/_tsv's tsv_escape)


def tsv_field_text(field: str) -> str | None:
    """The value of one TabSeparated field (``None`` for ``\\N``); binary data stays surrogate-escaped.

    Unlike :func:`~mybinlog.clickhouse.tsv_unescape`, ``\\xHH`` escapes stay one surrogate-escaped byte
    each (they are not joined into UTF-8 characters): the field is an encoder's output, compared byte for byte.
    """
    if field == NULL_FIELD:
        return None
    if "\\" in field:
        return _UNESCAPE_RE.sub(_unescape_match, field)
    return field


def _bytes_text(value: bytes | bytearray | memoryview) -> str:
    return bytes(value).decode("utf-8", "surrogateescape")


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    raise TypeError(f"expected bytes, got {type(value).__name__}")


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_text(value)
    raise TypeError(f"expected str, got {type(value).__name__}")


# ---------------------------------------------------------------------------------------------------------------
# value helpers


_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_UTC = dt.UTC


_F32 = struct.Struct("<f")
_FLT_MAX = 3.4028234663852886e38


def _f32(value: float) -> float:
    """``value`` rounded to the nearest float32, as a Python float."""
    try:
        result: float = _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return _FLT_MAX if value > 0 else -_FLT_MAX
    return result


def f32_repr(value: float) -> str:
    """The shortest decimal text that reads back as the float32 nearest to ``value``."""
    f = _f32(value)
    if f == 0.0:
        return "0"
    for digits in (6, 7, 8):
        text = f"{f:.{digits}g}"
        if _f32(float(text)) == f:
            return text
    return f"{f:.9g}"


def f32_signed_repr(value: float) -> str:
    """:func:`f32_repr`, but a negative zero is ``-0``: VECTOR elements are stored bit for bit (MySQL keeps -0.0 in a
    vector, ClickHouse's Float32 too), where FLOAT columns write every zero as ``0``."""
    text = f32_repr(value)
    if text == "0" and math.copysign(1.0, value) < 0:
        return "-0"
    return text


_DEC_CONTEXT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP, Emax=999999, Emin=-999999)
_DATE_TEXT = re.compile(r"\s*(-?\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{0,9}))?)?\s*$")
_TIME_TEXT = re.compile(r"\s*(-)?(?:(\d+) )?(\d+):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?\s*$")


def _to_decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, float):
        return decimal.Decimal(repr(value))
    if isinstance(value, bytes | bytearray):
        value = value.decode("ascii")
    return decimal.Decimal(value if isinstance(value, str) else int(value))


def _parse_datetime_text(text: str) -> dt.datetime | None:
    """MySQL date/datetime text -> datetime; None for zero or invalid dates (``0000-00-00``, ``2021-02-30``)."""
    m = _DATE_TEXT.match(text)
    if m is None:
        raise ValueError(f"not a MySQL date/time text: {text!r}")
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    frac = m.group(7) or ""
    try:
        return dt.datetime(
            year,
            month,
            day,
            int(m.group(4) or 0),
            int(m.group(5) or 0),
            int(m.group(6) or 0),
            int(frac[:6].ljust(6, "0")),
        )
    except ValueError:
        return None


def _time_text_us(text: str) -> int:
    """MySQL TIME text ``[-][D ]HH:MM[:SS[.frac]]`` -> signed microseconds."""
    m = _TIME_TEXT.match(text)
    if m is None:
        raise ValueError(f"not a MySQL TIME text: {text!r}")
    days = int(m.group(2) or 0)
    seconds = (days * 24 + int(m.group(3))) * 3600 + int(m.group(4)) * 60 + int(m.group(5) or 0)
    us = seconds * 1_000_000 + int((m.group(6) or "")[:6].ljust(6, "0"))
    return -us if m.group(1) else us


def _timedelta_us(value: dt.timedelta) -> int:
    return (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds


def _ipv6_text(packed: bytes) -> str:
    """RFC 5952 text of 16 bytes, IPv4-mapped addresses as ``::ffff:a.b.c.d`` (as ClickHouse prints them)."""
    if packed[:12] == b"\0" * 10 + b"\xff\xff":
        return "::ffff:" + ".".join(str(b) for b in packed[12:])
    return ipaddress.IPv6Address(packed).compressed


def _ipv6_packed(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if len(raw) <= 16:
            return raw.ljust(16, b"\0")  # the binlog drops trailing zero bytes of BINARY(16)
        value = raw.decode("ascii")
    if isinstance(value, ipaddress.IPv6Address):
        return value.packed
    if isinstance(value, ipaddress.IPv4Address):
        return b"\0" * 10 + b"\xff\xff" + value.packed
    text = str(value).strip()
    if "." in text and ":" not in text:
        return b"\0" * 10 + b"\xff\xff" + ipaddress.IPv4Address(text).packed
    return ipaddress.IPv6Address(text).packed


def _ipv4_int(value: Any) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if len(raw) <= 4:
            return int.from_bytes(raw.ljust(4, b"\0"), "big")
        value = raw.decode("ascii")
    if isinstance(value, ipaddress.IPv4Address):
        return int(value)
    return int(ipaddress.IPv4Address(str(value).strip()))


def _uuid_text(value: Any) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if len(raw) <= 16:  # MariaDB's UUID travels as BINARY(16) in text order; trailing zero bytes dropped
            h = raw.ljust(16, b"\0").hex()
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        value = raw.decode("ascii")
    return str(uuid.UUID(str(value).strip()))


def _vector_values(value: Any) -> list[float]:
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if len(raw) % 4:
            raise ValueError(f"a VECTOR value has {len(raw)} bytes, not a multiple of 4")
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if isinstance(value, str):
        parsed = json.loads(value, parse_int=float)  # "-0" (ClickHouse's text of a negative zero) stays -0.0
        if not isinstance(parsed, list):
            raise TypeError(f"not a VECTOR text: {value[:50]!r}")
        return [float(x) for x in parsed]
    return [float(x) for x in value]


def _datetime_formatter(fsp: int) -> Callable[[dt.datetime], str]:
    """Naive datetime -> ``YYYY-MM-DD HH:MM:SS[.fraction]`` with exactly ``fsp`` fraction digits."""
    # isoformat(" ") is what str() returns for a datetime, at half its cost (str() looks the method up by name)
    if fsp == 0:

        def seconds(v: dt.datetime) -> str:
            return v.isoformat(" ")[:19]

        return seconds
    cut = 20 + fsp
    pad = "." + "0" * fsp

    def fraction(v: dt.datetime) -> str:
        text = v.isoformat(" ")  # the microseconds are left out when they are 0
        return text + pad if len(text) == 19 else text[:cut]

    return fraction
