"""The type mapping: the value family of a MySQL column (:func:`column_kind`), the ClickHouse type it is stored
as (:func:`clickhouse_type`), and everything an encoder needs to know about it (:func:`column_spec`), decided from
the column and the target's capabilities (date ranges, Decimal256, Date32, DateTime64, IP types...)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ...errors import TypeMappingError
from ...source import select_column

if TYPE_CHECKING:
    from ...ddl import ColumnDef
    from .._capabilities import Capabilities

__all__ = ["Kind", "clickhouse_type", "column_kind", "column_spec"]


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


def select_expression(col: ColumnDef) -> str:
    """What a ``SELECT`` of the source names for this column (``mybinlog.source``'s ``select_column``: a VECTOR cast
    to its bytes, which the encoders and :func:`canonical` read)."""
    return select_column(col.name, _base_name(col))


# ---------------------------------------------------------------------------------------------------------------
# ranges of the ClickHouse date/time types (docs/types.md, "Dates ClickHouse cannot hold")


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


def column_spec(col: ColumnDef, caps: Capabilities) -> _Spec:
    """How mybinlog stores this column (kind, ClickHouse type, scale, fsp, ranges...): for the table layout."""
    return _spec(col, caps)
