"""MySQL/MariaDB column types in ClickHouse: the type mapping, TabSeparated encoders and canonical values.

Everything here is pure Python (no IO) and decided per column from its :class:`~._ddl.ColumnDef` and the
target's :class:`~._target.Capabilities`. docs/types.md has the mapping table and the rules for values that
ClickHouse cannot hold (zero dates, dates outside the range of a ClickHouse type, ...).

* :func:`clickhouse_type`: the ClickHouse type of a column (``Nullable(Decimal(65, 30))``).
* :func:`make_encoder` / :func:`make_row_encoder`: Python value -> one TabSeparated field (already escaped,
  ``\\N`` for NULL). They accept both forms a value reaches the replicator in: the binlog decoder's values
  (docs/source-layer.md, "Values") and what pymysql/asyncmy return for ``SELECT`` (snapshots), so that both
  give identical ClickHouse contents. Binary data comes back as ``str`` decoded with ``surrogateescape``: encode
  the joined line with ``.encode("utf-8", "surrogateescape")`` to get the exact bytes.
* :func:`canonical`: one comparable string per value, from either side (a MySQL value, or the text ClickHouse
  returns), for ``mybinlog verify``; :func:`values_match` compares two of them (floats with a tolerance).
* :func:`zero_field`: the field for MySQL's implicit default of a column (a column missing from a row image).
"""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import re
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ..errors import TypeMappingError

if TYPE_CHECKING:
    from ._ddl import ColumnDef
    from ._target import Capabilities

__all__ = [
    "NULL_FIELD",
    "TypeMappingError",
    "canonical",
    "clickhouse_type",
    "column_kind",
    "make_encoder",
    "make_row_encoder",
    "tsv_field_text",
    "values_match",
    "zero_field",
]

NULL_FIELD = "\\N"
"""The TabSeparated field of NULL."""

Encoder = Callable[[Any], str]
Canonical = Callable[[Any], "str | None"]


# ---------------------------------------------------------------------------------------------------------------
# type names

_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 32, "int": 32, "bigint": 64}
_MEDIUMINT_BITS = 24  # MySQL storage width: an unsigned value read as signed wraps at 2**24
_TEXT = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
_BLOB = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_GEOMETRY = frozenset(
    {
        "geometry",
        "point",
        "linestring",
        "polygon",
        "multipoint",
        "multilinestring",
        "multipolygon",
        "geometrycollection",
    }
)
_ALIASES = {
    "integer": "int",
    "int1": "tinyint",
    "int2": "smallint",
    "int3": "mediumint",
    "middleint": "mediumint",
    "int4": "int",
    "int8": "bigint",
    "bool": "tinyint",
    "boolean": "tinyint",
    "numeric": "decimal",
    "dec": "decimal",
    "fixed": "decimal",
    "real": "double",
    "double precision": "double",
    "float4": "float",
    "float8": "double",
    "nchar": "char",
    "national char": "char",
    "character": "char",
    "nvarchar": "varchar",
    "character varying": "varchar",
    "national varchar": "varchar",
    "long": "mediumtext",
    "long varchar": "mediumtext",
    "long varbinary": "mediumblob",
    "geomcollection": "geometrycollection",
    "serial": "bigint",
}

Kind = Literal[
    "int",
    "decimal",
    "float32",
    "float64",
    "bit",
    "year",
    "date",
    "datetime",
    "timestamp",
    "time",
    "text",
    "binary",
    "enum",
    "set",
    "json",
    "geometry",
    "uuid",
    "inet6",
    "inet4",
    "vector",
]


def _base_name(col: ColumnDef) -> str:
    name = " ".join(col.type_name.lower().split())
    return _ALIASES.get(name, name)


def column_kind(col: ColumnDef) -> Kind:
    """The value family of a column (``"int"``, ``"decimal"``, ``"datetime"``, ``"text"``, ...)."""
    name = _base_name(col)
    if name in _INT_BITS:
        return "int"
    if name == "decimal":
        return "decimal"
    if name == "float":
        return "float32"
    if name == "double":
        return "float64"
    if name in ("bit", "year", "date", "datetime", "timestamp", "time", "enum", "set", "json"):
        return cast(Kind, name)
    if name in _TEXT:
        return "text"
    if name in _BLOB:
        return "binary"
    if name in _GEOMETRY:
        return "geometry"
    if name in ("uuid", "inet6", "inet4", "vector"):
        return cast(Kind, name)
    raise TypeMappingError(
        f"column `{col.name}` has type {col.raw_type or col.type_name!r}, which mybinlog cannot map to ClickHouse"
    )


# ---------------------------------------------------------------------------------------------------------------
# ranges of the ClickHouse date/time types (docs/types.md, "Dates ClickHouse cannot hold")

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_UTC = dt.UTC
# Date and DateTime: ClickHouse 18.16's date table ends with 2105 (later versions reach 2149-06-06 / 2106-02-07);
# the conservative bound is used for every version (Date/DateTime are only chosen for servers without
# Date32/DateTime64 anyway).
_DATE_RANGE = (dt.date(1970, 1, 1), dt.date(2105, 12, 31))
_DATETIME_RANGE = (dt.datetime(1970, 1, 1), dt.datetime(2105, 12, 31, 23, 59, 59))
_MAX_US = dt.time(23, 59, 59, 999999)


def _date32_range(caps: Capabilities) -> tuple[dt.date | None, dt.date | None]:
    version = tuple(caps.version[:2])
    if version >= (26, 9):  # [0000-01-01, 9999-12-31] (ClickHouse PR 111534): every MySQL date
        return None, None
    if version >= (22, 8):
        return dt.date(1900, 1, 1), dt.date(2299, 12, 31)
    return dt.date(1925, 1, 1), dt.date(2283, 11, 11)


def _datetime64_range(caps: Capabilities) -> tuple[dt.datetime | None, dt.datetime | None]:
    version = tuple(caps.version[:2])
    if version >= (26, 9):  # [0000-01-01, 9999-12-31] (ClickHouse PR 107907): every MySQL datetime
        return None, None
    if version >= (22, 8):
        return dt.datetime(1900, 1, 1), dt.datetime(2299, 12, 31, 23, 59, 59, 999999)
    if version >= (21, 4):
        return dt.datetime(1925, 1, 1), dt.datetime(2283, 11, 11, 23, 59, 59, 999999)
    return _DATETIME_RANGE[0], dt.datetime.combine(_DATETIME_RANGE[1].date(), _MAX_US)


def _precise_floats(caps: Capabilities) -> bool:
    """Whether ClickHouse parses floats in input formats exactly (precise_float_parsing default since 26.7)."""
    return tuple(caps.version[:2]) >= (26, 7)


# ---------------------------------------------------------------------------------------------------------------
# the mapping


@dataclass(frozen=True)
class _Spec:
    """Everything an encoder needs about one column."""

    name: str
    kind: Kind
    ch: str  # ClickHouse type without Nullable
    nullable: bool  # the MySQL column admits NULL
    can_be_nullable: bool = True  # Nullable(T) is possible (not for Array)
    bits: int = 0  # int: width; bit: width
    unsigned: bool = False
    precision: int = 0
    scale: int = 0
    fsp: int = 0
    length: int = 0  # binary(n): n; vector: dimensions
    char: bool = False  # CHAR: trailing spaces are not part of the value
    values: tuple[str, ...] = ()
    as_string: bool = False  # decimal/datetime/timestamp stored as String (old servers)
    as_fixed: bool = False  # inet6 as FixedString(16) / inet4 as UInt32 (old servers)
    lo: Any = None  # date/datetime range of the ClickHouse type (None: no limit)
    hi: Any = None


def _spec(col: ColumnDef, caps: Capabilities) -> _Spec:
    kind = column_kind(col)
    name = _base_name(col)

    def make(ch: str, **options: Any) -> _Spec:
        return _Spec(name=col.name, kind=kind, ch=ch, nullable=bool(col.nullable), **options)

    if kind == "int":
        bits = _INT_BITS[name]
        storage = _MEDIUMINT_BITS if name == "mediumint" else bits
        return make(f"{'U' if col.unsigned else ''}Int{bits}", bits=storage, unsigned=bool(col.unsigned))
    if kind == "decimal":
        precision = col.length if col.length is not None else 10
        scale = col.scale if col.scale is not None else 0
        if precision > 38 and not caps.decimal256:
            return make("String", precision=precision, scale=scale, as_string=True)
        return make(f"Decimal({precision}, {scale})", precision=precision, scale=scale)
    if kind in ("float32", "float64"):
        return make("Float32" if kind == "float32" else "Float64")
    if kind == "bit":
        return make("UInt64", bits=col.length or 1)
    if kind == "year":
        return make("UInt16")
    if kind == "date":
        if caps.date32:
            lo, hi = _date32_range(caps)
            return make("Date32", lo=lo, hi=hi)
        return make("Date", lo=_DATE_RANGE[0], hi=_DATE_RANGE[1])
    if kind in ("datetime", "timestamp"):
        fsp = col.fsp or 0
        if caps.datetime64:
            lo_dt, hi_dt = _datetime64_range(caps)
            return make(f"DateTime64({fsp}, 'UTC')", fsp=fsp, lo=lo_dt, hi=hi_dt)
        if fsp == 0:
            return make("DateTime('UTC')", lo=_DATETIME_RANGE[0], hi=_DATETIME_RANGE[1])
        return make("String", fsp=fsp, as_string=True)
    if kind == "time":
        return make("Int64", fsp=col.fsp or 0)
    if kind == "text":
        return make("String", char=name == "char")
    if kind == "binary":
        return make("String", length=(col.length or 1) if name == "binary" else 0)
    if kind in ("enum", "set"):
        return make("String", values=tuple(col.values))
    if kind in ("json", "geometry"):
        return make("String")
    if kind == "uuid":
        return make("UUID")
    if kind == "inet6":
        if tuple(caps.version[:2]) >= _IP_TYPES:
            return make("IPv6")
        return make("FixedString(16)", as_fixed=True)
    if kind == "inet4":
        if tuple(caps.version[:2]) >= _IP_TYPES:
            return make("IPv4")
        return make("UInt32", as_fixed=True)
    # vector: Array cannot be inside Nullable; a NULL vector is stored as [] (MySQL vectors are never empty)
    return make("Array(Float32)", length=col.length or 0, can_be_nullable=False)


_IP_TYPES = (19, 3)  # the IPv4 / IPv6 domain types


def clickhouse_type(col: ColumnDef, caps: Capabilities, *, key: bool = False) -> str:
    """The ClickHouse type of a MySQL column, e.g. ``Nullable(Decimal(65, 30))`` or ``DateTime64(6, 'UTC')``.

    Nullable columns become ``Nullable(T)`` unless ``key`` (sorting-key columns cannot be Nullable; MySQL key
    columns are NOT NULL anyway). Raises :class:`TypeMappingError` for a type mybinlog does not know.
    """
    spec = _spec(col, caps)
    if spec.nullable and spec.can_be_nullable and not key:
        return f"Nullable({spec.ch})"
    return spec.ch


# ---------------------------------------------------------------------------------------------------------------
# TabSeparated escaping


def _escape(text: str) -> str:
    """Escape one TabSeparated field (backslash, tab, newline, CR, NUL, backspace, form feed)."""
    if text.isprintable() and "\\" not in text:
        return text
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    for raw, esc in _ESCAPES:
        if raw in text:
            text = text.replace(raw, esc)
    return text


_ESCAPES = (("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"), ("\0", "\\0"), ("\b", "\\b"), ("\f", "\\f"))
_UNESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "0": "\0", "a": "\a", "v": "\v", "e": "\x1b"}
_UNESCAPE_RE = re.compile(r"\\(x[0-9A-Fa-f]{2}|.)", re.DOTALL)


def _unescape_one(match: re.Match[str]) -> str:
    seq = match.group(1)
    if len(seq) == 3:  # \xHH: one byte
        return bytes((int(seq[1:], 16),)).decode("utf-8", "surrogateescape")
    return _UNESCAPES.get(seq, seq)


def tsv_field_text(field: str) -> str | None:
    """The value of one TabSeparated field (``None`` for ``\\N``); binary data stays surrogate-escaped."""
    if field == NULL_FIELD:
        return None
    if "\\" in field:
        return _UNESCAPE_RE.sub(_unescape_one, field)
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
        parsed = json.loads(value)
        if not isinstance(parsed, list):
            raise TypeError(f"not a VECTOR text: {value[:50]!r}")
        return [float(x) for x in parsed]
    return [float(x) for x in value]


# ---------------------------------------------------------------------------------------------------------------
# encoders


def _int_encoder(spec: _Spec) -> Encoder:
    wrap = 1 << spec.bits

    if spec.unsigned:

        def encode_unsigned(v: Any) -> str:
            if v is None:
                return NULL_FIELD
            if type(v) is not int:
                v = _coerce_int(v)
            if v < 0:  # read as signed (a binlog without signedness metadata)
                v += wrap
            return str(v)

        return encode_unsigned

    def encode_signed(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is int:
            return str(v)
        return str(_coerce_int(v))

    return encode_signed


def _coerce_int(v: Any) -> int:
    if isinstance(v, bytes | bytearray):
        text = v.decode("ascii").strip()
        return int(text)
    if isinstance(v, str):
        return int(v.strip())
    if isinstance(v, decimal.Decimal | float):
        if v != int(v):
            raise ValueError(f"{v!r} is not an integer")
        return int(v)
    return int(v)


def _bit_encoder(spec: _Spec) -> Encoder:
    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is int:
            return str(v)
        if isinstance(v, bytes | bytearray | memoryview):
            return str(int.from_bytes(v, "big"))  # pymysql: the bits as big-endian bytes
        return str(_coerce_int(v))

    return encode


def _decimal_encoder(spec: _Spec) -> Encoder:
    scale = spec.scale
    quantum = decimal.Decimal(1).scaleb(-scale)
    zero = format(decimal.Decimal(0).quantize(quantum), "f")
    ctx = _DEC_CONTEXT
    decimal_type = decimal.Decimal

    def slow(d: decimal.Decimal) -> str:
        if not d:
            return zero  # no "-0.00"
        return format(d.quantize(quantum, context=ctx), "f")

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is not decimal_type:
            return slow(_to_decimal(v))
        # fast path: str() is plain notation with exactly `scale` digits for the values MySQL delivers
        text = str(v)
        dot = text.find(".")
        if "E" not in text and (len(text) - dot - 1 == scale if dot >= 0 else scale == 0) and (text[0] != "-" or v):
            return text
        return slow(v)

    return encode


def _float32_encoder(spec: _Spec) -> Encoder:
    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        return f32_repr(v if type(v) is float else float(v))

    return encode


def _float64_encoder(spec: _Spec) -> Encoder:
    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is float:
            return repr(v)
        return repr(float(v))

    return encode


def _year_encoder(spec: _Spec) -> Encoder:
    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is int:
            return str(v)
        if isinstance(v, dt.date):
            return str(v.year)
        return str(_coerce_int(v))

    return encode


def _date_encoder(spec: _Spec) -> Encoder:
    lo: dt.date | None = spec.lo
    hi: dt.date | None = spec.hi
    lo_text = lo.isoformat() if lo is not None else ""
    hi_text = hi.isoformat() if hi is not None else ""
    zero = NULL_FIELD if spec.nullable else _EPOCH_DATE.isoformat()

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is not dt.date:
            if isinstance(v, dt.datetime):
                v = v.date()
            elif isinstance(v, str | bytes | bytearray):
                parsed = _parse_datetime_text(_as_text(v))
                if parsed is None:
                    return zero
                v = parsed.date()
            elif not isinstance(v, dt.date):
                raise TypeError(f"column `{spec.name}`: cannot store {type(v).__name__} {v!r:.60} as a DATE")
        if lo is not None:
            if v < lo:
                return lo_text
            if v > hi:
                return hi_text
        text: str = v.isoformat()
        return text

    return encode


def _datetime_formatter(fsp: int) -> Callable[[dt.datetime], str]:
    """Naive datetime -> ``YYYY-MM-DD HH:MM:SS[.fraction]`` with exactly ``fsp`` fraction digits."""
    if fsp == 0:

        def seconds(v: dt.datetime) -> str:
            return str(v)[:19]

        return seconds
    cut = 20 + fsp
    pad = "." + "0" * fsp

    def fraction(v: dt.datetime) -> str:
        text = str(v)  # the microseconds are left out when they are 0
        return text + pad if len(text) == 19 else text[:cut]

    return fraction


def _datetime_encoder(spec: _Spec) -> Encoder:
    """DATETIME (naive wall time, stored as UTC so ClickHouse applies no zone) and TIMESTAMP (UTC)."""
    lo: dt.datetime | None = spec.lo
    hi: dt.datetime | None = spec.hi
    timestamp = spec.kind == "timestamp"
    fmt = _datetime_formatter(spec.fsp)
    zero = NULL_FIELD if spec.nullable else fmt(_EPOCH)
    name = spec.name

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is not dt.datetime:
            if isinstance(v, str | bytes | bytearray):
                parsed = _parse_datetime_text(_as_text(v))
                if parsed is None:
                    return zero
                v = parsed
            elif isinstance(v, dt.datetime):  # a subclass (pandas.Timestamp...): its str() differs
                v = dt.datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, v.tzinfo)
            elif isinstance(v, dt.date):
                v = dt.datetime(v.year, v.month, v.day)
            elif timestamp and isinstance(v, int | float | decimal.Decimal):
                if not v:
                    return zero
                v = dt.datetime.fromtimestamp(float(v), _UTC)
            else:
                raise TypeError(f"column `{name}`: cannot store {type(v).__name__} {v!r:.60} as a date and time")
        if v.tzinfo is not None:
            # TIMESTAMP from the binlog: aware UTC. A DATETIME is a wall time: its zone is dropped, not applied.
            v = v.astimezone(_UTC).replace(tzinfo=None) if timestamp else v.replace(tzinfo=None)
        if lo is not None:
            if v < lo:
                v = lo
            elif v > hi:
                v = hi
        return fmt(v)

    return encode


def _time_encoder(spec: _Spec) -> Encoder:
    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is dt.timedelta:
            return str((v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds)
        if isinstance(v, str | bytes | bytearray):
            text = _as_text(v)
            if ":" in text:
                return str(_time_text_us(text))
            return str(int(text))  # already microseconds (ClickHouse's text of the column)
        if isinstance(v, dt.time):
            return str(((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond)
        if isinstance(v, dt.timedelta):
            return str(_timedelta_us(v))
        return str(_coerce_int(v))

    return encode


def _text_encoder(spec: _Spec) -> Encoder:
    char = spec.char
    esc = _escape

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is not str:
            v = _as_text(v) if not isinstance(v, int | float | decimal.Decimal) else str(v)
        if char:
            v = v.rstrip(" ")  # CHAR values are read without trailing spaces
        return esc(v)

    return encode


def _binary_encoder(spec: _Spec) -> Encoder:
    pad = spec.length
    esc = _escape

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        raw = v if type(v) is bytes else _as_bytes(v)
        if pad and len(raw) < pad:
            raw = raw.ljust(pad, b"\0")  # BINARY(n): the binlog drops trailing zero bytes
        return esc(raw.decode("utf-8", "surrogateescape"))

    return encode


def _enum_encoder(spec: _Spec) -> Encoder:
    members = spec.values
    esc = _escape

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if type(v) is str:
            return esc(v)
        if isinstance(v, int):  # an index (a binlog without ENUM labels): 0 is MySQL's '' error value
            return esc(members[v - 1]) if 0 < v <= len(members) else ""
        return esc(_as_text(v))

    return encode


def _set_encoder(spec: _Spec) -> Encoder:
    members = spec.values
    order = {m: i for i, m in enumerate(members)}
    lower = {m.lower(): i for i, m in enumerate(members)}
    esc = _escape

    def position(member: str) -> tuple[int, str]:
        i = order.get(member)
        if i is None:
            i = lower.get(member.lower(), len(members))
        return i, member

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if isinstance(v, str | bytes | bytearray):
            text = _as_text(v)
            if not text:
                return ""
            items: Any = text.split(",")
        elif isinstance(v, int):  # a bitmask (a binlog without SET labels)
            items = [m for i, m in enumerate(members) if v >> i & 1]
        else:
            items = v
        if not items:
            return ""
        return esc(",".join(sorted(items, key=position)))

    return encode


def _json_encoder(spec: _Spec, parsed_json: bool) -> Encoder:
    from ..protocol._jsonb import render_json_mysql_text

    esc = _escape

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        if not parsed_json:
            if type(v) is str:
                return esc(v)  # JSON text: pymysql, and MariaDB's binlog (JSON is a LONGTEXT alias there)
            if isinstance(v, bytes | bytearray | memoryview):
                return esc(_bytes_text(v))
        return esc(render_json_mysql_text(v))  # a parsed document (MySQL binary JSON): MySQL's SELECT text

    return encode


def _geometry_encoder(spec: _Spec) -> Encoder:
    esc = _escape

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        return esc(_bytes_text(v) if not isinstance(v, str) else v)

    return encode


def _uuid_encoder(spec: _Spec) -> Encoder:
    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        return _uuid_text(v)

    return encode


def _inet6_encoder(spec: _Spec) -> Encoder:
    if spec.as_fixed:

        def encode_fixed(v: Any) -> str:
            if v is None:
                return NULL_FIELD
            return _escape(_ipv6_packed(v).decode("utf-8", "surrogateescape"))

        return encode_fixed

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        return _ipv6_text(_ipv6_packed(v))

    return encode


def _inet4_encoder(spec: _Spec) -> Encoder:
    as_int = spec.as_fixed

    def encode(v: Any) -> str:
        if v is None:
            return NULL_FIELD
        n = _ipv4_int(v)
        return str(n) if as_int else str(ipaddress.IPv4Address(n))

    return encode


def _vector_encoder(spec: _Spec) -> Encoder:
    def encode(v: Any) -> str:
        if v is None:
            return "[]"  # Array cannot be Nullable; MySQL vectors are never empty
        return "[" + ",".join(f32_repr(x) for x in _vector_values(v)) + "]"

    return encode


def _encoder(spec: _Spec, parsed_json: bool) -> Encoder:
    kind = spec.kind
    if kind == "int":
        return _int_encoder(spec)
    if kind == "decimal":
        return _decimal_encoder(spec)
    if kind == "float32":
        return _float32_encoder(spec)
    if kind == "float64":
        return _float64_encoder(spec)
    if kind == "bit":
        return _bit_encoder(spec)
    if kind == "year":
        return _year_encoder(spec)
    if kind == "date":
        return _date_encoder(spec)
    if kind in ("datetime", "timestamp"):
        return _datetime_encoder(spec)
    if kind == "time":
        return _time_encoder(spec)
    if kind == "text":
        return _text_encoder(spec)
    if kind == "binary":
        return _binary_encoder(spec)
    if kind == "enum":
        return _enum_encoder(spec)
    if kind == "set":
        return _set_encoder(spec)
    if kind == "json":
        return _json_encoder(spec, parsed_json)
    if kind == "geometry":
        return _geometry_encoder(spec)
    if kind == "uuid":
        return _uuid_encoder(spec)
    if kind == "inet6":
        return _inet6_encoder(spec)
    if kind == "inet4":
        return _inet4_encoder(spec)
    return _vector_encoder(spec)


def _guarded(spec: _Spec, encode: Encoder) -> Encoder:
    """Name the column when a value cannot be encoded (the fast path stays a plain call)."""

    def guarded(v: Any) -> str:
        try:
            return encode(v)
        except (TypeError, ValueError, ArithmeticError, OverflowError, struct.error) as exc:
            raise TypeMappingError(
                f"column `{spec.name}` ({spec.kind} -> {spec.ch}): cannot encode {type(v).__name__} {v!r:.80}: {exc}"
            ) from exc

    return guarded


def make_encoder(col: ColumnDef, caps: Capabilities, *, parsed_json: bool = False) -> Encoder:
    """Python value -> one TabSeparated field for this column (``\\N`` for None); see the module docstring.

    ``parsed_json``: JSON values are parsed documents (MySQL binary JSON decoded from the binlog), so a ``str``
    is a JSON string; by default a ``str`` is JSON text (pymysql; MariaDB, whose JSON is text in the binlog)
    and other values are rendered as MySQL's ``SELECT`` prints them.
    Raises :class:`TypeMappingError` (naming the column) for a value it cannot encode.
    """
    spec = _spec(col, caps)
    return _guarded(spec, _encoder(spec, parsed_json))


_FAST_PATHS = {
    # kind -> expression for a value `{v}` whose type is the usual one; anything else goes to the encoder `{e}`
    "int": "str({v}) if {v}.__class__ is int else {e}({v})",
    "uint": "str({v}) if {v}.__class__ is int and {v} >= 0 else {e}({v})",
    "float64": "repr({v}) if {v}.__class__ is float else {e}({v})",
    "text": "{v} if {v}.__class__ is str and {v}.isprintable() and BACKSLASH not in {v} else {e}({v})",
}


def make_row_encoder(
    columns: Sequence[ColumnDef],
    caps: Capabilities,
    *,
    parsed_json: bool = False,
    positions: Sequence[int] | None = None,
) -> Callable[[Sequence[Any]], str]:
    """A whole row -> its fields joined by tabs (no newline, no meta columns); much faster than per-column calls.

    ``positions[i]``: where the value of ``columns[i]`` is in the row (``-1``: not there, the column gets
    :func:`zero_field`, MySQL's implicit default); default: the row holds the values in ``columns`` order.
    The function is generated once per layout (straight-line code per column, like the binlog decoder's; only
    numbers reach the generated source). A value that cannot be encoded raises :class:`TypeMappingError` naming
    the column.
    """
    specs = [_spec(c, caps) for c in columns]
    encoders = [_encoder(s, parsed_json) for s in specs]
    if positions is None:
        positions = range(len(columns))
    if len(positions) != len(columns):
        raise ValueError(f"{len(positions)} positions for {len(columns)} columns")
    namespace: dict[str, Any] = {"NULL": NULL_FIELD, "BACKSLASH": "\\"}
    parts: list[str] = []
    loads: list[str] = []
    for i, (spec, enc, pos) in enumerate(zip(specs, encoders, positions, strict=True)):
        if pos < 0:
            namespace[f"z{i}"] = zero_field(columns[i], caps)
            parts.append(f"{{z{i}}}")
            continue
        namespace[f"e{i}"] = enc
        v, e = f"v{i}", f"e{i}"
        loads.append(f"    {v} = row[{int(pos)}]\n")
        kind: str = "uint" if spec.kind == "int" and spec.unsigned else spec.kind
        if kind == "text" and spec.char:
            kind = "char"  # trailing spaces: always through the encoder
        template = _FAST_PATHS.get(kind)
        if template is None:
            parts.append(f"{{{e}({v})}}")
            continue
        expr = template.format(v=v, e=e)
        if spec.nullable:
            expr = f"NULL if {v} is None else ({expr})"
        parts.append(f"{{({expr})}}")
    source = "def encode_row(row):\n" + "".join(loads) + '    return f"' + "\\t".join(parts) + '"\n'
    exec(compile(source, "<mybinlog row encoder>", "exec"), namespace)  # only numbers reach `source`
    fast: Callable[[Sequence[Any]], str] = namespace["encode_row"]
    width = max((p for p in positions if p >= 0), default=-1) + 1

    def encode_row(row: Sequence[Any]) -> str:
        try:
            return fast(row)
        except (TypeError, ValueError, ArithmeticError, OverflowError, IndexError, struct.error) as exc:
            if len(row) < width:
                raise TypeMappingError(f"a row has {len(row)} values, the layout needs {width}") from exc
            for spec, enc, pos in zip(specs, encoders, positions, strict=True):
                if pos >= 0:
                    _guarded(spec, enc)(row[pos])  # raises naming the column
            raise

    return encode_row


def column_spec(col: ColumnDef, caps: Capabilities) -> _Spec:
    """How mybinlog stores this column (kind, ClickHouse type, scale, fsp, ranges...): for _chschema."""
    return _spec(col, caps)


def implicit_default(col: ColumnDef, caps: Capabilities) -> Any:
    """MySQL's implicit default of a NOT NULL column without DEFAULT (0, '', first ENUM member, zero date...)."""
    return _implicit_default(_spec(col, caps))


def zero_field(col: ColumnDef, caps: Capabilities) -> str:
    """The field of MySQL's implicit default for the column: NULL when nullable, else 0, '', the first ENUM member,
    the zero date (stored under the zero-date rule), BINARY(n) zero bytes, ..."""
    spec = _spec(col, caps)
    if spec.nullable:
        return _encoder(spec, False)(None)
    return _encoder(spec, False)(_implicit_default(spec))


def _implicit_default(spec: _Spec) -> Any:
    kind = spec.kind
    if kind in ("int", "bit", "year", "float32", "float64"):
        return 0
    if kind == "decimal":
        return decimal.Decimal(0)
    if kind == "date":
        return "0000-00-00"
    if kind in ("datetime", "timestamp"):
        return "0000-00-00 00:00:00"
    if kind == "time":
        return dt.timedelta(0)
    if kind == "enum":
        return spec.values[0] if spec.values else ""
    if kind in ("text", "set", "geometry"):
        return ""
    if kind == "binary":
        return b""
    if kind == "json":
        return "null"
    if kind in ("uuid", "inet6"):
        return b"\0" * 16
    if kind == "inet4":
        return 0
    return []


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
            values = json.loads(text)
            if not values:
                return None  # a NULL vector is stored as []
            return "[" + ",".join(f32_repr(x) for x in values) + "]"

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
        return a == b or abs(a - b) <= tolerance * max(abs(a), abs(b))

    def match(a: str | None, b: str | None) -> bool:
        if a == b:
            return True
        if a is None or b is None:
            return False
        if kind == "vector":
            xs, ys = json.loads(a), json.loads(b)
            return len(xs) == len(ys) and all(close(float(x), float(y)) for x, y in zip(xs, ys, strict=True))
        return close(float(a), float(b))

    return match


def _equal(a: str | None, b: str | None) -> bool:
    return a == b
