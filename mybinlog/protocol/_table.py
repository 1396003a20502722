"""TABLE_MAP parsing and per-table compiled row decoders.

A :class:`TableMap` is parsed once per distinct TABLE_MAP body (the decoder caches it by its raw bytes, so the
table-map event that precedes every rows event costs a dict lookup). Row images are decoded by a Python function
generated for the table's exact column layout: no per-column dispatch, no per-row dict, one tuple per row.
"""

from __future__ import annotations

import codecs
import datetime
import struct
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Protocol

from ..errors import DecodeError
from ._accel import speedups
from ._constants import (
    CHARACTER_TYPES,
    MISSING,
    NUMERIC_TYPES,
    ColumnType,
    OptionalMetadata,
    collation_codec,
)
from ._jsonb import decode_json_diff, decode_jsonb
from ._reader import read_packed_int
from ._values import (
    _EPOCH,
    _FRAC_TO_USEC,
    _FSP_BYTES,
    _decimal_layout,
    datetime2_decoder,
    decimal_decoder,
    decode_date,
    decode_datetime2,
    decode_datetime_old,
    decode_decimal,
    decode_time2,
    decode_time_old,
    decode_timestamp2,
    decode_timestamp_old,
    timestamp2_decoder,
)

__all__ = ["ColumnInfo", "TableMap", "parse_table_map_body", "table_names_or_none"]


class _RowImages(Protocol):
    """What the row decoders read of a rows event (:class:`~._events.RowsEvent`, which builds on this module: the
    events hold their :class:`TableMap`)."""

    @property
    def _image_mode(self) -> int: ...
    @property
    def present(self) -> int: ...
    @property
    def present_after(self) -> int: ...
    @property
    def body(self) -> bytes: ...
    @property
    def rows_start(self) -> int: ...
    @property
    def rows_end(self) -> int: ...
    @property
    def type_code(self) -> int: ...
    @property
    def type_name(self) -> str: ...
    @property
    def file(self) -> str | None: ...
    @property
    def offset(self) -> int | None: ...


_TYPE_NAMES = {t.value: t.name.lower() for t in ColumnType}


class ColumnInfo:
    """What the binlog says about one column (names and charsets only with binlog_row_metadata=FULL)."""

    __slots__ = (
        "charset",
        "enum_values",
        "geometry_type",
        "index",
        "length",
        "meta",
        "name",
        "nullable",
        "primary_key",
        "real_type",
        "set_values",
        "type",
        "unsigned",
        "vector_dimension",
        "visible",
    )

    def __init__(self, index: int, type_code: int, meta: int, nullable: bool) -> None:
        self.index = index
        self.type = type_code  # as written in the table map (ENUM/SET appear as STRING there)
        self.meta = meta
        self.nullable = nullable
        self.real_type = type_code
        self.length = 0  # max length in bytes (strings), pack length (enum/set/blob), precision...
        self.name: str | None = None
        self.unsigned: bool | None = None
        self.charset: int | None = None
        self.enum_values: tuple[str, ...] | None = None
        self.set_values: tuple[str, ...] | None = None
        self.geometry_type: int | None = None
        self.primary_key = False
        self.visible = True
        self.vector_dimension: int | None = None  # VECTOR(n): n, from optional metadata (MySQL 9)
        if type_code == ColumnType.STRING:
            b0, b1 = meta >> 8, meta & 0xFF
            if (b0 & 0x30) != 0x30:
                self.length = b1 | (((b0 & 0x30) ^ 0x30) << 4)
                self.real_type = b0 | 0x30
            else:
                self.length = b1
                self.real_type = b0
            if self.real_type not in (ColumnType.ENUM, ColumnType.SET, ColumnType.STRING):
                self.real_type = ColumnType.STRING
        elif type_code in (ColumnType.ENUM, ColumnType.SET):
            self.length = meta & 0xFF
        else:
            self.length = meta

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.real_type, str(self.real_type))

    def __repr__(self) -> str:
        return f"ColumnInfo({self.index}, {self.name!r}, {self.type_name}, meta={self.meta})"


# Metadata bytes per column type in TABLE_MAP.
_META_LEN = {
    ColumnType.FLOAT: 1,
    ColumnType.DOUBLE: 1,
    ColumnType.BLOB: 1,
    ColumnType.TINY_BLOB: 1,
    ColumnType.MEDIUM_BLOB: 1,
    ColumnType.LONG_BLOB: 1,
    ColumnType.GEOMETRY: 1,
    ColumnType.JSON: 1,
    ColumnType.VECTOR: 1,
    ColumnType.TIMESTAMP2: 1,
    ColumnType.DATETIME2: 1,
    ColumnType.TIME2: 1,
    ColumnType.VARCHAR: 2,
    ColumnType.VAR_STRING: 2,
    ColumnType.BIT: 2,
    ColumnType.NEWDECIMAL: 2,
    ColumnType.STRING: 2,
    ColumnType.ENUM: 2,
    ColumnType.SET: 2,
}
_BIG_ENDIAN_META = frozenset(
    {ColumnType.NEWDECIMAL, ColumnType.STRING, ColumnType.ENUM, ColumnType.SET, ColumnType.BIT}
)


class TableMap:
    """A table as described by a TABLE_MAP event, with compiled row decoders."""

    __slots__ = (
        "_decoders",
        "_programs",
        "_type_names",
        "column_count",
        "column_names",
        "columns",
        "has_full_metadata",
        "name",
        "primary_key",
        "primary_key_prefixes",
        "schema",
        "table_flags",
    )

    def __init__(
        self,
        schema: str,
        name: str,
        columns: list[ColumnInfo],
        table_flags: int,
        primary_key: list[tuple[int, int]] | None = None,
    ) -> None:
        self.schema = schema
        self.name = name
        self.columns = tuple(columns)
        self.column_count = len(columns)
        self.column_names: tuple[str | None, ...] = tuple(c.name for c in columns)
        # key order as declared (PRIMARY KEY (b, a) -> (1, 0)); prefix length 0 = whole column
        if primary_key is None:
            primary_key = [(c.index, 0) for c in columns if c.primary_key]
        self.primary_key: tuple[int, ...] = tuple(idx for idx, _ in primary_key)
        self.primary_key_prefixes: tuple[int, ...] = tuple(prefix for _, prefix in primary_key)
        self.has_full_metadata = all(c.name is not None for c in columns) and bool(columns)
        self.table_flags = table_flags
        self._decoders: dict[tuple[int, int, int], Callable[[bytes, int, int], list[Any]]] = {}
        self._programs: dict[tuple[int, int, int], Any] = {}  # the compiled core's RowProgram per layout, or None
        self._type_names: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return f"TableMap({self.schema!r}.{self.name!r}, {self.column_count} columns)"

    @property
    def column_type_names(self) -> tuple[str, ...]:
        """Lower-case type names of the columns (``ColumnInfo.type_name``), computed once."""
        names = self._type_names
        if names is None:
            names = self._type_names = tuple(c.type_name for c in self.columns)
        return names

    # -- row decoding -------------------------------------------------------------------------------------
    def render_rows_json(self, event: _RowImages) -> bytes | None:
        """The event's rows as the JSON Lines renderer writes them (UTF-8, rows separated by commas), rendered by
        the compiled core straight from the row images; None when the rows must be decoded first (no compiled
        core, a value that is not plain, a damaged image: decoding then gives the values, or raises)."""
        program = _row_program(self, (event._image_mode, event.present, event.present_after))
        if program is None:
            return None
        out: bytes | None = program.render_json(event.body, event.rows_start, event.rows_end)
        return out

    def decode_rows(self, event: _RowImages) -> list[Any]:
        mode = event._image_mode
        key = (mode, event.present, event.present_after)
        fn = self._decoders.get(key)
        try:
            if fn is None:
                fn = self._decoders[key] = _compile(self, *key)
            return fn(event.body, event.rows_start, event.rows_end)
        except DecodeError as exc:
            where = f"`{self.schema}`.`{self.name}`"
            if where not in exc.message:  # name the table: the value decoders do not know it
                exc.message = f"cannot decode rows of {where} ({event.type_name}): {exc.message}"
                exc.args = (exc.message,)
            if exc.type_code is None:
                exc.type_code = event.type_code
            exc.for_table(self.schema, self.name)
            raise exc.locate(file=event.file, offset=event.offset) from None
        except (IndexError, struct.error, ValueError, UnicodeDecodeError, OverflowError, KeyError) as exc:
            raise DecodeError(
                f"cannot decode rows of `{self.schema}`.`{self.name}` ({event.type_name}): {exc!r}; "
                "the row image does not match the table map (corrupt data or an unsupported column type)",
                file=event.file,
                offset=event.offset,
                type_code=event.type_code,
                schema=self.schema,
                table=self.name,
            ) from exc


def parse_table_map_body(body: bytes, pos: int, *, mariadb: bool = False) -> tuple[TableMap, int]:
    """Parse a TABLE_MAP body from after the table id and return (TableMap, end).

    ``mariadb`` selects MariaDB's column classes in the optional metadata (its charset list includes GEOMETRY,
    MySQL's includes VECTOR instead; both signedness lists include YEAR: see ``SIGNEDNESS_TYPES``). A
    :class:`DecodeError` raised after the schema and table names were read carries them (``schema``, ``table``).
    """
    table_flags, schema, name, pos = _table_names(body, pos)
    try:
        return _parse_columns(body, pos, table_flags, schema, name, mariadb), len(body)
    except DecodeError as exc:
        raise exc.for_table(schema, name) from None


def _table_names(body: bytes, pos: int) -> tuple[int, str, str, int]:
    """(table flags, schema, table name, position after them) of a TABLE_MAP body."""
    table_flags = body[pos] | body[pos + 1] << 8
    pos += 2
    n = body[pos]
    schema = body[pos + 1 : pos + 1 + n].decode("utf-8", "replace")
    pos += n + 2
    n = body[pos]
    name = body[pos + 1 : pos + 1 + n].decode("utf-8", "replace")
    pos += n + 2
    return table_flags, schema, name, pos


def table_names_or_none(body: bytes, pos: int = 0) -> tuple[str, str] | None:
    """The (schema, table) of a TABLE_MAP body (from after the table id), or None when even they are corrupt."""
    try:
        _flags, schema, name, _pos = _table_names(body, pos)
    except IndexError:
        return None
    return schema, name


def _parse_columns(body: bytes, pos: int, table_flags: int, schema: str, name: str, mariadb: bool) -> TableMap:
    count, pos = read_packed_int(body, pos)
    types = body[pos : pos + count]
    if len(types) != count:
        raise DecodeError("TABLE_MAP event is truncated in its column types")
    pos += count
    meta_len, pos = read_packed_int(body, pos)
    meta_end = pos + meta_len
    metas: list[int] = []
    for t in types:
        ml = _META_LEN.get(t, 0)  # type: ignore[call-overload]
        if ml == 0:
            metas.append(0)
        elif ml == 1:
            metas.append(body[pos])
        elif t in _BIG_ENDIAN_META:
            metas.append(body[pos] << 8 | body[pos + 1])
        else:
            metas.append(body[pos] | body[pos + 1] << 8)
        pos += ml
    if pos != meta_end:
        raise DecodeError(
            f"TABLE_MAP metadata of `{schema}`.`{name}` has {meta_len} bytes but the column types need "
            f"{pos - (meta_end - meta_len)}: unknown column type in {list(types)}"
        )
    nb = (count + 7) // 8
    nulls = int.from_bytes(body[pos : pos + nb], "little")
    pos += nb
    columns = [ColumnInfo(i, types[i], metas[i], bool(nulls >> i & 1)) for i in range(count)]
    primary_key = None
    if pos < len(body):
        primary_key = _parse_optional_metadata(body, pos, len(body), columns, mariadb)
    return TableMap(schema, name, columns, table_flags, primary_key)


# Which columns each list of the optional metadata counts, by the column's type in the table map (ENUM and SET
# appear there as STRING; ``real_type`` tells them apart). A list's entries belong, in column order, to the columns
# of its class only, so one column counted differently shifts every later column's signedness or charset.
#
# SIGNEDNESS, one bit per column: both servers count the integers, FLOAT, DOUBLE, DECIMAL/NEWDECIMAL and YEAR
# (MySQL 8.0+: has_signedess_information_type() in sql/field_common_properties.h, YEAR being a TINYINT with sign
# modifiers; live MySQL 9.7 writes YEAR's bit set; MariaDB: every Field_num, YEAR included). BIT is not counted.
SIGNEDNESS_TYPES = NUMERIC_TYPES | {ColumnType.YEAR}
# DEFAULT_CHARSET / COLUMN_CHARSET, one collation per column: CHAR, VARCHAR and BLOB/TEXT on both servers (binary
# ones with collation 63); MySQL (is_character_type() of the field's real type) also counts VECTOR (9.0+: a BLOB
# underneath, collation 63) but not GEOMETRY or JSON; MariaDB also counts GEOMETRY (a BLOB underneath) and has no
# VECTOR type code (its VECTOR is a binary VARCHAR). ENUM and SET have their own lists (ENUM_AND_SET_*_CHARSET).
MYSQL_CHARSET_TYPES = CHARACTER_TYPES | {ColumnType.VECTOR}
MARIADB_CHARSET_TYPES = CHARACTER_TYPES | {ColumnType.GEOMETRY}


def _parse_optional_metadata(
    body: bytes, pos: int, end: int, columns: list[ColumnInfo], mariadb: bool
) -> list[tuple[int, int]] | None:
    """Apply the optional metadata fields to ``columns``; returns the primary key as (index, prefix) pairs in
    key order when the metadata has one."""
    character_types = MARIADB_CHARSET_TYPES if mariadb else MYSQL_CHARSET_TYPES
    numeric = [c for c in columns if c.real_type in SIGNEDNESS_TYPES]
    character = [c for c in columns if c.real_type in character_types]
    primary_key: list[tuple[int, int]] | None = None
    enum_set = [c for c in columns if c.real_type in (ColumnType.ENUM, ColumnType.SET)]
    while pos < end:
        kind = body[pos]
        length, pos = read_packed_int(body, pos + 1)
        stop = pos + length
        if stop > end:
            raise DecodeError("TABLE_MAP optional metadata field runs past the end of the event")
        if kind == OptionalMetadata.SIGNEDNESS:
            for k, c in enumerate(numeric):
                c.unsigned = bool(body[pos + k // 8] & (0x80 >> (k % 8)))
        elif kind in (OptionalMetadata.DEFAULT_CHARSET, OptionalMetadata.ENUM_AND_SET_DEFAULT_CHARSET):
            targets = character if kind == OptionalMetadata.DEFAULT_CHARSET else enum_set
            default, p = read_packed_int(body, pos)
            for c in targets:
                c.charset = default
            while p < stop:
                idx, p = read_packed_int(body, p)
                coll, p = read_packed_int(body, p)
                if idx < len(targets):
                    targets[idx].charset = coll
        elif kind in (OptionalMetadata.COLUMN_CHARSET, OptionalMetadata.ENUM_AND_SET_COLUMN_CHARSET):
            targets = character if kind == OptionalMetadata.COLUMN_CHARSET else enum_set
            p = pos
            for c in targets:
                if p >= stop:
                    break
                c.charset, p = read_packed_int(body, p)
        elif kind == OptionalMetadata.COLUMN_NAME:
            p = pos
            for c in columns:
                if p >= stop:
                    break
                n, p = read_packed_int(body, p)
                c.name = body[p : p + n].decode("utf-8", "replace")
                p += n
        elif kind in (OptionalMetadata.SET_STR_VALUE, OptionalMetadata.ENUM_STR_VALUE):
            want = ColumnType.SET if kind == OptionalMetadata.SET_STR_VALUE else ColumnType.ENUM
            p = pos
            for c in columns:
                if c.real_type != want:
                    continue
                if p >= stop:
                    break
                count, p = read_packed_int(body, p)
                values_raw = []
                for _ in range(count):
                    n, p = read_packed_int(body, p)
                    values_raw.append(body[p : p + n])
                    p += n
                values = tuple(v.decode(collation_codec(c.charset) or "utf-8", "replace") for v in values_raw)
                if want == ColumnType.SET:
                    c.set_values = values
                else:
                    c.enum_values = values
        elif kind == OptionalMetadata.GEOMETRY_TYPE:
            p = pos
            for c in columns:
                if c.real_type == ColumnType.GEOMETRY and p < stop:
                    c.geometry_type, p = read_packed_int(body, p)
        elif kind in (OptionalMetadata.SIMPLE_PRIMARY_KEY, OptionalMetadata.PRIMARY_KEY_WITH_PREFIX):
            p = pos
            primary_key = []
            while p < stop:
                idx, p = read_packed_int(body, p)
                prefix = 0
                if kind == OptionalMetadata.PRIMARY_KEY_WITH_PREFIX:
                    prefix, p = read_packed_int(body, p)
                if idx < len(columns):
                    columns[idx].primary_key = True
                    primary_key.append((idx, prefix))
        elif kind == OptionalMetadata.COLUMN_VISIBILITY:
            for k, c in enumerate(columns):
                if pos + k // 8 < stop:
                    c.visible = bool(body[pos + k // 8] & (0x80 >> (k % 8)))
        elif kind == OptionalMetadata.VECTOR_DIMENSIONALITY:
            p = pos
            for c in columns:
                if c.real_type == ColumnType.VECTOR and p < stop:
                    c.vector_dimension, p = read_packed_int(body, p)
        # other (future) fields are type-length-value: skipped by their length
        pos = stop
    return primary_key


# ---------------------------------------------------------------------------------------------------------
# Row decoder compiler
#
# One Python function per (table, image layout), generated as source and compiled once. Each row image is a
# NULL bitmap followed by the non-NULL values. The generated code has two branches per image:
#
# - no NULL in the row (the common case): straight-line code; runs of adjacent little-endian fixed-width
#   columns (integers, FLOAT, DOUBLE, YEAR) are read by one precompiled struct.Struct, and DECIMAL, DATETIME2
#   and TIMESTAMP2 are decoded inline;
# - otherwise: the same per-column code, each column guarded by its NULL bit.
#
# Every inline shortcut checks that its bytes are present and falls back to the value functions of _values
# (which raise the precise TruncatedError/DecodeError) for anything unusual: truncated images, invalid
# DECIMAL digit groups, zero or invalid dates.
# ---------------------------------------------------------------------------------------------------------

_STRUCTS: dict[tuple[int, bool], str] = {
    (ColumnType.SHORT, False): "<h",
    (ColumnType.SHORT, True): "<H",
    (ColumnType.LONG, False): "<i",
    (ColumnType.LONG, True): "<I",
    (ColumnType.LONGLONG, False): "<q",
    (ColumnType.LONGLONG, True): "<Q",
    (ColumnType.FLOAT, False): "<f",
    (ColumnType.DOUBLE, False): "<d",
}

# little-endian fixed-width columns that can share one struct.Struct: (type, unsigned) -> format character
_FUSABLE: dict[tuple[int, bool], str] = {
    (ColumnType.TINY, False): "b",
    (ColumnType.TINY, True): "B",
    (ColumnType.SHORT, False): "h",
    (ColumnType.SHORT, True): "H",
    (ColumnType.LONG, False): "i",
    (ColumnType.LONG, True): "I",
    (ColumnType.LONGLONG, False): "q",
    (ColumnType.LONGLONG, True): "Q",
    (ColumnType.FLOAT, False): "f",
    (ColumnType.FLOAT, True): "f",
    (ColumnType.DOUBLE, False): "d",
    (ColumnType.DOUBLE, True): "d",
    (ColumnType.YEAR, False): "B",
    (ColumnType.YEAR, True): "B",
}


def _text_or_bytes(data: bytes) -> str | bytes:
    """Charset unknown (no binlog_row_metadata=FULL): UTF-8 text when it decodes, else the raw bytes."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _enum_value(values: tuple[str, ...] | None, index: int) -> str | int:
    if values is None:
        return index
    if index == 0 or index > len(values):
        return ""  # MySQL's empty-string error value
    return values[index - 1]


def _set_value(values: tuple[str, ...] | None, bits: int) -> frozenset[str] | int:
    if values is None:
        return bits
    return frozenset(v for i, v in enumerate(values) if bits >> i & 1)


def _vector(data: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(data) // 4}f", data))


class _Gen:
    def __init__(self) -> None:
        self.ns: dict[str, Any] = {
            "MISSING": MISSING,
            "_from": int.from_bytes,
            "_decimal": decode_decimal,
            "_time2": decode_time2,
            "_datetime2": decode_datetime2,
            "_timestamp2": decode_timestamp2,
            "_date": decode_date,
            "_time_old": decode_time_old,
            "_datetime_old": decode_datetime_old,
            "_timestamp_old": decode_timestamp_old,
            "_jsonb": decode_jsonb,
            "_json_diff": decode_json_diff,
            "_packed": read_packed_int,
            "_text_or_bytes": _text_or_bytes,
            "_enum": _enum_value,
            "_set": _set_value,
            "_vector": _vector,
            "_charmap": codecs.charmap_decode,
            "_D": Decimal,
            "_dt": datetime.datetime,
            "_td": datetime.timedelta,
            "_EPOCH": _EPOCH,
            "DecodeError": DecodeError,
        }
        self._consts: dict[object, str] = {}

    def const(self, value: object, prefix: str = "k") -> str:
        key = (type(value), value) if isinstance(value, (str, bytes, int, tuple)) else id(value)
        name = self._consts.get(key)
        if name is None:
            name = f"_{prefix}{len(self._consts)}"
            self._consts[key] = name
            self.ns[name] = value
        return name

    def unpacker(self, fmt: str) -> str:
        return self.const(struct.Struct(fmt).unpack_from, "s")


_FIELD_FORMATS = {1: "B", 2: "H", 3: "BH", 4: "I"}  # big-endian unsigned fields of 1..4 bytes


def _be_fields(g: _Gen, fields: list[tuple[str, int]], line_prefix: str = "") -> list[str]:
    """Unpack big-endian unsigned fields (name, bytes) at ``pos`` with one struct; 3-byte fields are read as
    1 + 2 bytes and joined."""
    fmt = ">" + "".join(_FIELD_FORMATS[n] for _, n in fields)
    targets: list[str] = []
    joins: list[str] = []
    for name, n in fields:
        if n == 3:
            targets += [f"{name}_h", f"{name}_l"]
            joins.append(f"{name} = {name}_h << 16 | {name}_l")
        else:
            targets.append(name)
    lines = [f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {g.unpacker(fmt)}(buf, pos)"]
    return [line_prefix + line for line in lines + joins]


def _decimal_code(g: _Gen, col: ColumnInfo, var: str) -> list[str]:
    """DECIMAL inline: the digit groups by one struct, sign handling, range checks, one Decimal(str)."""
    precision, scale = col.meta >> 8, col.meta & 0xFF
    call = f"{var}, pos = _decimal(buf, pos, {precision}, {scale})"
    try:
        size, lead_bytes, lead_limit, groups_st, trail_bytes, trail_pow, _ = _decimal_layout(precision, scale)
    except DecodeError:
        return [call]  # invalid metadata: the value function raises when a value is met
    n_groups = groups_st.size // 4 if groups_st is not None else 0
    fields: list[tuple[str, int]] = []
    if lead_bytes:
        fields.append(("d_l", lead_bytes))
    fields += [(f"d_g{i}", 4) for i in range(n_groups)]
    if trail_bytes:
        fields.append(("d_t", trail_bytes))
    first, first_bytes = fields[0]
    top = 1 << (8 * first_bytes - 1)
    checks = []
    if lead_bytes:
        checks.append(f"d_l < {lead_limit}")
    checks += [f"d_g{i} <= 999999999" for i in range(n_groups)]
    if trail_bytes:
        checks.append(f"d_t < {trail_pow}")
    expr = ""
    for name, _n in fields:
        if not expr:
            expr = name
        elif name == "d_t":
            expr = f"({expr}) * {trail_pow} + d_t"
        else:
            expr = f"({expr}) * 1000000000 + {name}"
    negate = [f"{first} ^= {((1 << (8 * first_bytes)) - 1) ^ top}"]  # bytes inverted; the sign bit cleared
    negate += [f"{name} ^= {(1 << (8 * n)) - 1}" for name, n in fields[1:]]
    if scale:
        positive = f"_D(f'{{v}}E-{scale}')"
        negative = f"(_D(f'-{{v}}E-{scale}') if v else _D('0E-{scale}'))"
    else:
        positive = "_D(v)"
        negative = "_D(-v)"
    lines = [f"if pos + {size} <= blen:"]
    lines += _be_fields(g, fields, "    ")
    lines += [
        f"    if {first} & {top}:  # sign bit set: positive",
        f"        {first} ^= {top}",
        "        neg = False",
        "    else:",
        *["        " + line for line in negate],
        "        neg = True",
        f"    if {' and '.join(checks)}:",
        f"        v = {expr}",
        f"        {var} = {negative} if neg else {positive}",
        f"        pos += {size}",
        "    else:  # a digit group out of range: the value function raises the error",
        f"        {call}",
        "else:",
        f"    {call}",
    ]
    return lines


def _fraction(nfrac: int) -> tuple[list[tuple[str, int]], str]:
    """Fields and microseconds expression of a temporal2 fraction of ``nfrac`` bytes."""
    if not nfrac:
        return [], "0"
    mult = _FRAC_TO_USEC[nfrac]
    return [("t_f", nfrac)], "t_f" if mult == 1 else f"t_f * {mult}"


def _datetime2_code(g: _Gen, col: ColumnInfo, var: str) -> list[str]:
    fsp = col.meta
    call = f"{var}, pos = _datetime2(buf, pos, {fsp})"
    if not 0 <= fsp <= 6:
        return [call]
    nfrac = _FSP_BYTES[fsp]
    size = 5 + nfrac
    frac_fields, usec = _fraction(nfrac)
    # 5 bytes: 1 + 17 bits year*13+month, 5 day, 17 hms, stored + 0x8000000000 (the top byte's high bit)
    return [
        f"if pos + {size} <= blen:",
        *_be_fields(g, [("t_h", 1), ("t_l", 4), *frac_fields], "    "),
        "    ym = (t_h - 128) << 10 | t_l >> 22",
        "    hms = t_l & 0x1FFFF",
        "    try:",
        f"        {var} = _dt(ym // 13, ym % 13, t_l >> 17 & 31, hms >> 12, hms >> 6 & 63, hms & 63, {usec})",
        f"        pos += {size}",
        "    except (ValueError, OverflowError):  # zero, invalid or negative: text or the error from _values",
        f"        {call}",
        "else:",
        f"    {call}",
    ]


def _timestamp2_code(g: _Gen, col: ColumnInfo, var: str) -> list[str]:
    fsp = col.meta
    call = f"{var}, pos = _timestamp2(buf, pos, {fsp})"
    if not 0 <= fsp <= 6:
        return [call]
    nfrac = _FSP_BYTES[fsp]
    size = 4 + nfrac
    frac_fields, usec = _fraction(nfrac)
    return [
        f"if pos + {size} <= blen:",
        *_be_fields(g, [("t_s", 4), *frac_fields], "    "),
        "    if t_s:",
        f"        {var} = _EPOCH + _td(0, t_s, {usec})",
        f"        pos += {size}",
        "    else:  # MySQL's zero TIMESTAMP",
        f"        {call}",
        "else:",
        f"    {call}",
    ]


def _column_code(g: _Gen, col: ColumnInfo, var: str, partial_bit: str | None) -> list[str]:
    """Statements that decode one non-NULL value of `col` at `pos` into `var` and advance `pos`."""
    t = col.real_type
    unsigned = bool(col.unsigned)
    if t == ColumnType.TINY:
        if unsigned:
            return [f"{var} = buf[pos]", "pos += 1"]
        return [f"{var} = buf[pos]", "pos += 1", f"if {var} > 127: {var} -= 256"]
    if (t, unsigned) in _STRUCTS or (t in (ColumnType.FLOAT, ColumnType.DOUBLE)):
        fmt = _STRUCTS.get((t, unsigned)) or _STRUCTS[(t, False)]
        size = struct.calcsize(fmt)
        return [f"{var} = {g.unpacker(fmt)}(buf, pos)[0]", f"pos += {size}"]
    if t == ColumnType.INT24:
        return [f"{var} = _from(buf[pos:pos + 3], 'little', signed={not unsigned})", "pos += 3"]
    if t == ColumnType.YEAR:
        return [f"{var} = buf[pos]", "pos += 1", f"if {var}: {var} += 1900"]
    if t == ColumnType.NEWDECIMAL:
        return _decimal_code(g, col, var)
    if t == ColumnType.TIMESTAMP2:
        return _timestamp2_code(g, col, var)
    if t == ColumnType.DATETIME2:
        return _datetime2_code(g, col, var)
    if t == ColumnType.TIME2:
        return [f"{var}, pos = _time2(buf, pos, {col.meta})"]
    if t in (ColumnType.DATE, ColumnType.NEWDATE):
        return [f"{var}, pos = _date(buf, pos)"]
    if t == ColumnType.TIME:
        return [f"{var}, pos = _time_old(buf, pos)"]
    if t == ColumnType.DATETIME:
        return [f"{var}, pos = _datetime_old(buf, pos)"]
    if t == ColumnType.TIMESTAMP:
        return [f"{var}, pos = _timestamp_old(buf, pos)"]
    if t == ColumnType.NULL:
        return [f"{var} = None"]
    if t == ColumnType.BIT:
        nbits = (col.meta & 0xFF) * 8 + (col.meta >> 8)
        nbytes = (nbits + 7) // 8
        return [f"{var} = _from(buf[pos:pos + {nbytes}], 'big')", f"pos += {nbytes}"]
    if t == ColumnType.ENUM:
        n = col.length
        read = "buf[pos]" if n == 1 else f"_from(buf[pos:pos + {n}], 'little')"
        return [f"{var} = _enum({g.const(col.enum_values)}, {read})", f"pos += {n}"]
    if t == ColumnType.SET:
        n = col.length
        return [f"{var} = _set({g.const(col.set_values)}, _from(buf[pos:pos + {n}], 'little'))", f"pos += {n}"]
    if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING):
        lines = ["n = buf[pos]", "pos += 1"] if col.length < 256 else ["n = buf[pos] | buf[pos + 1] << 8", "pos += 2"]
        codec = collation_codec(col.charset) if col.charset is not None else "?"
        if codec is None:
            if t == ColumnType.STRING:  # BINARY(n): the server strips trailing 0x00 padding; restore it
                lines += [f"{var} = buf[pos:pos + n].ljust({col.length}, b'\\x00')", "pos += n"]
            else:
                lines += [f"{var} = buf[pos:pos + n]", "pos += n"]
        elif codec == "?":
            lines += [f"{var} = _text_or_bytes(buf[pos:pos + n])", "pos += n"]
        else:
            lines += [*_decode_text(g, var, codec), "pos += n"]
        return lines
    if t in _BLOBS:
        lb = col.meta
        if lb not in (1, 2, 3, 4):
            raise DecodeError(f"column {col.index} ({col.type_name}) has an invalid length size {lb}")
        if lb == 1:
            lines = ["n = buf[pos]"]
        elif lb == 4:
            lines = [f"n = {g.unpacker('<I')}(buf, pos)[0]"]
        else:
            lines = [f"n = _from(buf[pos:pos + {lb}], 'little')"]
        lines.append(f"pos += {lb}")
        if t == ColumnType.JSON:
            if partial_bit is not None:
                lines += [
                    f"if {partial_bit}:",
                    f"    {var} = _json_diff(buf, pos, pos + n)[0]",
                    "else:",
                    f"    {var} = _jsonb(buf[pos:pos + n])",
                ]
            else:
                lines.append(f"{var} = _jsonb(buf[pos:pos + n])")
        elif t == ColumnType.VECTOR:
            lines.append(f"{var} = _vector(buf[pos:pos + n])")
        elif t == ColumnType.GEOMETRY:
            lines.append(f"{var} = buf[pos:pos + n]")
        else:
            codec = collation_codec(col.charset) if col.charset is not None else None
            if codec is None:
                lines.append(f"{var} = buf[pos:pos + n]")
            else:
                lines += _decode_text(g, var, codec)
        lines.append("pos += n")
        return lines
    raise DecodeError(f"column {col.index} of type {col.type_name} ({col.real_type}) is not supported by this decoder")


def _decode_text(g: _Gen, var: str, codec: str) -> list[str]:
    """Code decoding buf[pos:pos + n] as text in ``codec``. A single-byte codec (latin1 = cp1252, cp1251...) is
    decoded with its table by codecs.charmap_decode, 4x faster than bytes.decode (which looks the codec up and calls
    its Python method per value); a byte without a character is decoded again by the codec, for its own error."""
    table = _byte_table(codec)
    if table is None:
        return [f"{var} = buf[pos:pos + n].decode({codec!r})"]
    return [
        "try:",
        f"    {var} = _charmap(buf[pos:pos + n], None, {g.const(table)})[0]",
        "except UnicodeDecodeError:",
        f"    {var} = buf[pos:pos + n].decode({codec!r})",
    ]


def _fusable(col: ColumnInfo) -> str | None:
    return _FUSABLE.get((col.real_type, bool(col.unsigned)))


def _no_null_code(g: _Gen, cols: list[ColumnInfo], prefix: str, partial_of: dict[int, str]) -> list[str]:
    """Straight-line code for an image without NULLs, fusing runs of fixed-width little-endian columns."""
    lines: list[str] = []
    k = 0
    while k < len(cols):
        run: list[ColumnInfo] = []
        while k + len(run) < len(cols) and _fusable(cols[k + len(run)]) is not None:
            run.append(cols[k + len(run)])
        if len(run) < 2:
            c = cols[k]
            lines += _column_code(g, c, f"{prefix}{c.index}", partial_of.get(c.index))
            k += 1
            continue
        fmt = "<" + "".join(_fusable(c) or "" for c in run)
        size = struct.calcsize(fmt)
        names = [f"{prefix}{c.index}" for c in run]
        lines.append(f"if pos + {size} <= blen:")
        lines.append(f"    {', '.join(names)} = {g.unpacker(fmt)}(buf, pos)")
        lines.append(f"    pos += {size}")
        for c, name in zip(run, names, strict=True):
            if c.real_type == ColumnType.YEAR:
                lines.append(f"    if {name}: {name} += 1900")
        lines.append("else:  # truncated image: column by column, for the precise error")
        for c, name in zip(run, names, strict=True):
            lines += ["    " + line for line in _column_code(g, c, name, None)]
        k += len(run)
    return lines


def _image_code(g: _Gen, table: TableMap, present: int, prefix: str, partial: bool) -> tuple[list[str], str]:
    cols = [c for c in table.columns if present >> c.index & 1]
    nb = (len(cols) + 7) // 8
    lines: list[str] = []
    partial_of: dict[int, str] = {}
    if partial:
        json_cols = [c for c in table.columns if c.real_type == ColumnType.JSON]
        pb = (len(json_cols) + 7) // 8
        lines += [
            "vo, pos = _packed(buf, pos)",
            "if vo & 1:",
            f"    pbits = _from(buf[pos:pos + {pb}], 'little')",
            f"    pos += {pb}",
            "else:",
            "    pbits = 0",
        ]
        for k, c in enumerate(json_cols):
            partial_of[c.index] = f"pbits & {1 << k}"
    if nb == 1:
        lines += ["nb = buf[pos]", "pos += 1"]
    else:
        lines += [f"nb = _from(buf[pos:pos + {nb}], 'little')", f"pos += {nb}"]
    per_column: list[str] = []
    for j, c in enumerate(cols):
        var = f"{prefix}{c.index}"
        body = _column_code(g, c, var, partial_of.get(c.index))
        # the NULL bitmap is authoritative even for NOT NULL columns (it is cheap to test)
        per_column.append(f"if nb & {1 << j}:")
        per_column.append(f"    {var} = None")
        per_column.append("else:")
        per_column += ["    " + b for b in body]
    if cols:
        lines.append("if not nb:")
        lines += ["    " + line for line in _no_null_code(g, cols, prefix, partial_of)]
        lines.append("else:")
        lines += ["    " + line for line in per_column]
    names = [f"{prefix}{c.index}" if present >> c.index & 1 else "MISSING" for c in table.columns]
    tup = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    return lines, tup


def _has_columns(table: TableMap, present: int) -> bool:
    return any(present >> c.index & 1 for c in table.columns)


def _no_columns(buf: bytes, pos: int, end: int) -> list[Any]:
    """The decoder of images without a column (a corrupt rows event): each row would take no bytes, so rows
    bytes can only be an error (instead of an endless loop of empty rows)."""
    if pos < end:
        raise DecodeError(
            f"the row images have no columns (empty column bitmap) but the event has {end - pos} bytes of rows"
        )
    return []


def _compile_python(
    table: TableMap, mode: int, present: int, present_after: int
) -> Callable[[bytes, int, int], list[Any]]:
    if not _has_columns(table, present) and (mode == 0 or not _has_columns(table, present_after)):
        return _no_columns
    g = _Gen()
    src = [
        "def _decode_rows(buf, pos, end):",
        "    out = []",
        "    append = out.append",
        "    blen = len(buf)",
        "    while pos < end:",
    ]
    before, before_tup = _image_code(g, table, present, "b", False)
    src += ["        " + s for s in before]
    if mode == 0:
        src.append(f"        append({before_tup})")
    else:
        after, after_tup = _image_code(g, table, present_after, "a", mode == 2)
        src += ["        " + s for s in after]
        src.append(f"        append(({before_tup}, {after_tup}))")
    src += [
        "    if pos != end:",
        "        raise DecodeError(f'row image overruns its event by {pos - end} bytes')",
        "    return out",
    ]
    code = "\n".join(src)
    ns = g.ns
    kind = ("rows", "update rows", "partial update rows")[mode]
    exec(compile(code, f"<mybinlog {kind} {table.schema}.{table.name} {present:x}/{present_after:x}>", "exec"), ns)
    fn: Callable[[bytes, int, int], list[Any]] = ns["_decode_rows"]
    return fn


def _row_program(table: TableMap, key: tuple[int, int, int]) -> Any:
    """The compiled core's RowProgram of one image layout ``(mode, present, present_after)``, made once per table
    and layout; None without the compiled core or for a layout it does not handle."""
    try:
        return table._programs[key]
    except KeyError:
        program = table._programs[key] = _program(table, *key) if speedups is not None else None
        return program


def _compile(table: TableMap, mode: int, present: int, present_after: int) -> Callable[[bytes, int, int], list[Any]]:
    """The row decoder of one image layout: the compiled core's when it is installed and handles every column,
    else the generated pure-Python one. The compiled decoder gives up on an event it cannot decode exactly
    (returns None); the pure-Python decoder, compiled on first need, then decodes it or raises the error."""
    program = _row_program(table, (mode, present, present_after))
    if program is None:
        return _compile_python(table, mode, present, present_after)
    c_decode = program.decode
    python: list[Callable[[bytes, int, int], list[Any]]] = []

    def _decode_rows(buf: bytes, pos: int, end: int) -> list[Any]:
        rows: list[Any] | None = c_decode(buf, pos, end)
        if rows is not None:
            return rows
        if not python:
            python.append(_compile_python(table, mode, present, present_after))
        return python[0](buf, pos, end)

    return _decode_rows


# -- the compiled core's row programs (mybinlog/protocol/_speedups.h: the OP_* and TEXT_* numbers) ------------
_OP_INT, _OP_UINT, _OP_FLOAT, _OP_DOUBLE, _OP_YEAR, _OP_DECIMAL, _OP_DATETIME2, _OP_TIMESTAMP2 = range(1, 9)
_OP_DATE, _OP_STRING, _OP_BLOB, _OP_ENUM, _OP_CALL, _OP_NULL, _OP_TIME2, _OP_BIT, _OP_SET = range(9, 18)
_TEXT_BYTES, _TEXT_CODEC, _TEXT_UTF8, _TEXT_UTF8_OR_BYTES, _TEXT_CALL, _TEXT_CODEC_ASCII, _TEXT_TABLE = range(7)
_INT_SIZES = {
    ColumnType.TINY: 1,
    ColumnType.SHORT: 2,
    ColumnType.INT24: 3,
    ColumnType.LONG: 4,
    ColumnType.LONGLONG: 8,
}
_BLOBS = frozenset(
    {
        ColumnType.BLOB,
        ColumnType.TINY_BLOB,
        ColumnType.MEDIUM_BLOB,
        ColumnType.LONG_BLOB,
        ColumnType.GEOMETRY,
        ColumnType.JSON,
        ColumnType.VECTOR,
    }
)
_Op = tuple[Any, ...]


def _text_mode(codec: str | None) -> tuple[int, str | tuple[str, str] | None]:
    if codec is None:
        return _TEXT_BYTES, None
    if codec == "utf-8":
        return _TEXT_UTF8, None
    table = _byte_table(codec)
    if table is not None:
        return _TEXT_TABLE, (codec, table)
    return (_TEXT_CODEC_ASCII if _ascii_compatible(codec) else _TEXT_CODEC), codec


_BYTE_TABLES: dict[str, str | None] = {}
_NO_CHAR = "\ufffe"  # a charmap codec's mark for a byte that decodes to nothing


def _byte_table(codec: str) -> str | None:
    """For a single-byte codec (latin1, which MySQL means as cp1252; latin2, cp1251, KOI8, the other ISO 8859 and
    Windows code pages; ascii): the character each of the 256 bytes decodes to, U+FFFE where the codec raises. The
    compiled core decodes such text through the table (a codec call per value is 10x slower). None for any other
    codec: multi-byte (GBK, Shift-JIS...), UTF-16/32, or one this check does not recognize. A codec qualifies when
    it is CPython's latin-1 or ascii decoder, or a charmap codec (a module with a 256-character
    ``decoding_table``), and decoding each byte alone gives the table's character or raises where it has none."""
    if codec in _BYTE_TABLES:
        return _BYTE_TABLES[codec]
    table: str | None = None
    try:
        decode = codecs.lookup(codec).decode
    except LookupError:
        decode = None
    if decode is codecs.latin_1_decode:
        table = bytes(range(256)).decode("latin-1")
    elif decode is codecs.ascii_decode:
        table = bytes(range(128)).decode("ascii") + _NO_CHAR * 128
    elif decode is not None:
        module = sys.modules.get(getattr(decode, "__module__", None) or "")
        candidate = getattr(module, "decoding_table", None)
        if isinstance(candidate, str) and len(candidate) == 256:
            table = candidate
    if table is not None:
        for byte in range(256):
            try:
                char = bytes([byte]).decode(codec)
            except UnicodeDecodeError:
                char = _NO_CHAR
            if char != table[byte]:
                table = None
                break
    _BYTE_TABLES[codec] = table
    return table


_ASCII = bytes(range(128))
_ASCII_COMPATIBLE: dict[str, bool] = {}


def _ascii_compatible(codec: str) -> bool:
    """Whether the codec decodes every ASCII byte to that character, whatever surrounds it (latin1 and the other
    single-byte charsets, GBK, Shift-JIS...; not UTF-16/32): the compiled core then writes ASCII-only text of such a
    column as it is, without decoding it."""
    ok = _ASCII_COMPATIBLE.get(codec)
    if ok is None:
        try:
            ok = _ASCII.decode(codec) == _ASCII.decode("ascii") and codecs.lookup(codec).name not in _STATEFUL
        except (LookupError, UnicodeDecodeError):
            ok = False
        _ASCII_COMPATIBLE[codec] = ok
    return ok


_STATEFUL = frozenset({"utf-7", "hz", "iso2022_jp", "iso2022_jp_1", "iso2022_jp_2", "iso2022_jp_2004", "iso2022_jp_3",
                       "iso2022_jp_ext", "iso2022_kr"})  # fmt: skip


def _call(fn: Callable[[bytes, int], tuple[Any, int]], slot: int) -> _Op:
    return (_OP_CALL, slot, 0, 0, 0, None, fn)


def _column_op(col: ColumnInfo) -> _Op | None:
    """The compiled core's instruction for one column (see _sp_rows.c), or None to keep the table in Python."""
    t = col.real_type
    slot = col.index
    unsigned = bool(col.unsigned)
    size = _INT_SIZES.get(t)  # type: ignore[call-overload]
    if size is not None:
        return (_OP_UINT if unsigned else _OP_INT, slot, size, 0, 0)
    if t == ColumnType.FLOAT:
        return (_OP_FLOAT, slot, 0, 0, 0)
    if t == ColumnType.DOUBLE:
        return (_OP_DOUBLE, slot, 0, 0, 0)
    if t == ColumnType.YEAR:
        return (_OP_YEAR, slot, 0, 0, 0)
    if t == ColumnType.NULL:
        return (_OP_NULL, slot, 0, 0, 0)
    if t == ColumnType.NEWDECIMAL:
        precision, scale = col.meta >> 8, col.meta & 0xFF
        try:
            size, lead_bytes, lead_limit, groups_st, trail_bytes, trail_pow, _ = _decimal_layout(precision, scale)
        except DecodeError:
            return None
        fields: list[tuple[int, int, int]] = []
        if lead_bytes:
            fields.append((lead_bytes, len(str(lead_limit)) - 1, lead_limit))
        fields += [(4, 9, 1_000_000_000)] * (groups_st.size // 4 if groups_st is not None else 0)
        if trail_bytes:
            fields.append((trail_bytes, len(str(trail_pow)) - 1, trail_pow))
        if not 1 <= len(fields) <= 16:
            return None
        return (_OP_DECIMAL, slot, 0, 0, 0, None, decimal_decoder(precision, scale), (size, scale, tuple(fields)))
    if t in (ColumnType.DATETIME2, ColumnType.TIMESTAMP2, ColumnType.TIME2):
        fsp = col.meta
        if not 0 <= fsp <= 6:
            return None
        nfrac = _FSP_BYTES[fsp]
        if t == ColumnType.TIME2:
            return (_OP_TIME2, slot, nfrac, _FRAC_TO_USEC[nfrac], 0)
        if t == ColumnType.DATETIME2:
            return (_OP_DATETIME2, slot, nfrac, _FRAC_TO_USEC[nfrac], 0, None, datetime2_decoder(fsp))
        return (_OP_TIMESTAMP2, slot, nfrac, _FRAC_TO_USEC[nfrac], 0, None, timestamp2_decoder(fsp))
    if t in (ColumnType.DATE, ColumnType.NEWDATE):
        return (_OP_DATE, slot, 0, 0, 0, None, decode_date)
    if t == ColumnType.TIME:
        return _call(decode_time_old, slot)
    if t == ColumnType.DATETIME:
        return _call(decode_datetime_old, slot)
    if t == ColumnType.TIMESTAMP:
        return _call(decode_timestamp_old, slot)
    if t == ColumnType.BIT:
        nbytes = ((col.meta & 0xFF) * 8 + (col.meta >> 8) + 7) // 8
        if 1 <= nbytes <= 8:
            return (_OP_BIT, slot, nbytes, 0, 0)
        return _call(lambda buf, pos: (int.from_bytes(buf[pos : pos + nbytes], "big"), pos + nbytes), slot)
    if t == ColumnType.ENUM:
        n = col.length
        if n in (1, 2):
            return (_OP_ENUM, slot, n, 0, 0, col.enum_values)
        return _call(lambda buf, pos: (_enum_value(col.enum_values, int.from_bytes(buf[pos : pos + n], "little")),
                                       pos + n), slot)  # fmt: skip
    if t == ColumnType.SET:
        n, values = col.length, col.set_values
        if 1 <= n <= 8 and (values is None or len(values) <= 64):
            if values is None:
                return (_OP_SET, slot, n, 0, 0, None)
            # the members' indexes in sorted() order (the JSON Lines renderer writes a SET as its sorted members);
            # None, and rows are decoded before they are written, when two members have the same name
            unique = len(set(values)) == len(values)
            order = tuple(sorted(range(len(values)), key=values.__getitem__)) if unique else None
            return (_OP_SET, slot, n, 0, 0, tuple(values), order)
        return _call(lambda buf, pos: (_set_value(values, int.from_bytes(buf[pos : pos + n], "little")), pos + n),
                     slot)  # fmt: skip
    if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING):
        length_bytes = 1 if col.length < 256 else 2
        if col.charset is None:
            return (_OP_STRING, slot, length_bytes, _TEXT_UTF8_OR_BYTES, 0)
        mode, codec = _text_mode(collation_codec(col.charset))
        pad = col.length if mode == _TEXT_BYTES and t == ColumnType.STRING else 0
        return (_OP_STRING, slot, length_bytes, mode, pad, codec)
    if t in _BLOBS:
        lb = col.meta
        if lb not in (1, 2, 3, 4):
            return None  # the pure-Python compiler raises the error
        if t == ColumnType.JSON:
            return (_OP_BLOB, slot, lb, _TEXT_CALL, 0, decode_jsonb)
        if t == ColumnType.VECTOR:
            return (_OP_BLOB, slot, lb, _TEXT_CALL, 0, _vector)
        if t == ColumnType.GEOMETRY:
            return (_OP_BLOB, slot, lb, _TEXT_BYTES, 0)
        mode, codec = _text_mode(collation_codec(col.charset) if col.charset is not None else None)
        return (_OP_BLOB, slot, lb, mode, 0, codec)
    return None


def _program(table: TableMap, mode: int, present: int, present_after: int) -> Any:
    """A compiled-core RowProgram for this layout, or None (partial JSON updates, a column it does not handle)."""
    if speedups is None or mode == 2:
        return None
    if not _has_columns(table, present) and (mode == 0 or not _has_columns(table, present_after)):
        return None  # no bytes per row: the pure-Python decoder raises (RowProgram.decode would never end)
    images: list[list[_Op]] = []
    for bits in (present, present_after) if mode == 1 else (present,):
        ops: list[_Op] = []
        for col in table.columns:
            if bits >> col.index & 1:
                op = _column_op(col)
                if op is None:
                    return None
                ops.append(op)
        images.append(ops)
    return speedups.RowProgram(table.column_count, MISSING, *images)
