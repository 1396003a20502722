"""Canonical values, for ``mybinlog verify``: one comparable string per value from either side (a MySQL value, or
the text ClickHouse returns for it), and :func:`values_match` to compare two of them (floats with a tolerance)."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ._encoders import _encoder, _guarded
from ._mapping import _precise_floats, _Spec, _spec, column_kind
from ._values import (
    _DEC_CONTEXT,
    _EPOCH,
    _EPOCH_DATE,
    _bytes_text,
    _datetime_formatter,
    _f32,
    _ipv6_text,
    _parse_datetime_text,
    _vector_values,
    f32_signed_repr,
    tsv_field_text,
)

if TYPE_CHECKING:
    from ...ddl import ColumnDef
    from .._capabilities import Capabilities

__all__ = ["Canonical", "canonical", "values_match"]


Canonical = Callable[[Any], "str | None"]


# ---------------------------------------------------------------------------------------------------------------
# canonical values (verify)


def _canon_int(text: str) -> str:
    return str(int(text))


def _clickhouse_canonical(spec: _Spec) -> Callable[[str], str | None]:
    """ClickHouse's (unescaped) text of a value -> canonical string."""
    kind = spec.kind
    if kind in ("int", "bit", "year", "time"):
        return _canon_int
    if kind == "decimal":
        quantum = decimal.Decimal(1).scaleb(-spec.scale)

        def canon_decimal(text: str) -> str:
            d = decimal.Decimal(text)
            if not d:
                d = decimal.Decimal(0)
            return format(d.quantize(quantum, context=_DEC_CONTEXT), "f")

        return canon_decimal
    if kind == "float32":
        return lambda text: _canon_float(_f32(float(text)), 6)
    if kind == "float64":
        return lambda text: _canon_float(float(text), 15)
    if kind == "date":

        def canon_date(text: str) -> str:
            if text.startswith("0000-00-00"):
                return _EPOCH_DATE.isoformat()  # 18.16 prints the epoch Date as zeros
            return dt.date.fromisoformat(text[:10]).isoformat()

        return canon_date
    if kind in ("datetime", "timestamp"):
        fmt = _datetime_formatter(spec.fsp)

        def canon_datetime(text: str) -> str:
            if text.startswith("0000-00-00"):
                return fmt(_EPOCH)  # 18.16 prints the epoch DateTime as zeros
            parsed = _parse_datetime_text(text)
            if parsed is None:
                raise ValueError(f"not a date and time: {text!r}")
            return fmt(parsed)

        return canon_datetime
    if kind == "binary" or kind == "geometry":
        return lambda text: text.encode("utf-8", "surrogateescape").hex()
    if kind == "uuid":
        return lambda text: str(uuid.UUID(text))
    if kind == "inet6":
        if spec.as_fixed:
            return lambda text: _ipv6_text(text.encode("utf-8", "surrogateescape").ljust(16, b"\0"))
        return lambda text: _ipv6_text(ipaddress.IPv6Address(text).packed)
    if kind == "inet4":
        if spec.as_fixed:
            return lambda text: str(ipaddress.IPv4Address(int(text)))
        return lambda text: str(ipaddress.IPv4Address(text))
    if kind == "vector":

        def canon_vector(text: str) -> str | None:
            values = _vector_values(text)
            if not values:
                return None  # a NULL vector is stored as []
            return "[" + ",".join(map(f32_signed_repr, values)) + "]"  # -0 kept

        return canon_vector
    if kind == "text" and spec.char:
        return lambda text: text.rstrip(" ")
    return lambda text: text  # text, enum, set, json; decimal/datetime as String use the branches above


def _canon_float(value: float, digits: int) -> str:
    if value == 0.0:
        return "0"
    return format(value, f".{digits}g")


def canonical(col: ColumnDef, caps: Capabilities, *, side: Literal["source", "clickhouse"] = "source") -> Canonical:
    """One comparable string per value of this column (None for NULL); see docs/types.md, "Canonical values".

    ``side="source"``: a value as the binlog decoder or pymysql/asyncmy gives it (anything :func:`make_encoder`
    accepts); it is mapped by the same rules as the encoder (zero dates, clamping, ...). ``side="clickhouse"``:
    the text ClickHouse returns for the column (``Target.query``: unescaped ``str``, binary data
    surrogate-escaped; ``bytes`` accepted too). Both give the same string for the same stored value.
    """
    spec = _spec(col, caps)
    from_clickhouse = _clickhouse_canonical(spec)
    if side == "clickhouse":

        def canon_clickhouse(value: Any) -> str | None:
            if value is None:
                return None
            if isinstance(value, bytes | bytearray | memoryview):
                value = _bytes_text(value)
            return from_clickhouse(value)

        return canon_clickhouse
    if side != "source":
        raise ValueError(f"side must be 'source' or 'clickhouse', not {side!r}")
    encode = _guarded(spec, _encoder(spec, False))

    def canon_source(value: Any) -> str | None:
        text = tsv_field_text(encode(value))
        return None if text is None else from_clickhouse(text)

    return canon_source


def values_match(col: ColumnDef, caps: Capabilities) -> Callable[[str | None, str | None], bool]:
    """Whether two canonical strings of this column denote the same value.

    Equality, except for floats on ClickHouse before 26.7, which parses floats from text with a fast algorithm
    that can be off in the last bits (18.16: one double in five): there FLOAT/DOUBLE (and VECTOR elements) match
    within a relative 2e-5 / 2e-14 (the canonical strings have 6 / 15 significant digits).
    """
    kind = column_kind(col)
    if kind not in ("float32", "float64", "vector") or _precise_floats(caps):
        return _equal
    tolerance = 2e-14 if kind == "float64" else 2e-5

    def close(a: float, b: float) -> bool:
        if a == 0.0 and b == 0.0 and kind == "vector":
            return math.copysign(1.0, a) == math.copysign(1.0, b)  # a vector keeps the sign of a zero
        return a == b or abs(a - b) <= tolerance * max(abs(a), abs(b))

    def match(a: str | None, b: str | None) -> bool:
        if a == b:
            return True
        if a is None or b is None:
            return False
        if kind == "vector":
            xs, ys = json.loads(a, parse_int=float), json.loads(b, parse_int=float)
            return len(xs) == len(ys) and all(close(float(x), float(y)) for x, y in zip(xs, ys, strict=True))
        return close(float(a), float(b))

    return match


def _equal(a: str | None, b: str | None) -> bool:
    return a == b
