"""Encoders: a Python value -> one TabSeparated field of its ClickHouse column. This is where a row event (or a
snapshot's SELECT row) becomes a ClickHouse row: :func:`make_row_encoder` generates one function per table layout,
:func:`make_encoder` encodes one column; :func:`zero_field` is MySQL's implicit default of a column."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import struct
from collections.abc import Callable, Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any

from ...errors import TypeMappingError
from ...protocol import speedups
from .._tsv import tsv_escape as _escape
from ._mapping import _Spec, _spec
from ._values import (
    _DEC_CONTEXT,
    _EPOCH,
    _EPOCH_DATE,
    _UTC,
    NULL_FIELD,
    _as_bytes,
    _as_text,
    _bytes_text,
    _datetime_formatter,
    _ipv4_int,
    _ipv6_packed,
    _ipv6_text,
    _parse_datetime_text,
    _time_text_us,
    _timedelta_us,
    _to_decimal,
    _uuid_text,
    _vector_values,
    f32_repr,
    f32_signed_repr,
)

if TYPE_CHECKING:
    from ...ddl import ColumnDef
    from .._capabilities import Capabilities

__all__ = [
    "Encoder",
    "implicit_default",
    "make_encoder",
    "make_row_encoder",
    "make_rows_encoder",
    "zero_field",
]


Encoder = Callable[[Any], str]


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


def _datetime_encoder(spec: _Spec) -> Encoder:
    """DATETIME (naive wall time, stored as UTC so ClickHouse applies no zone) and TIMESTAMP (UTC)."""
    lo: dt.datetime | None = spec.lo
    hi: dt.datetime | None = spec.hi
    timestamp = spec.kind == "timestamp"
    fmt = _datetime_formatter(spec.fsp)
    zero = NULL_FIELD if spec.nullable else fmt(_EPOCH)
    name = spec.name
    datetime_type = dt.datetime
    cut = 20 + spec.fsp if spec.fsp else 19
    pad = "." + "0" * spec.fsp if spec.fsp else ""
    first = lo if lo is not None else dt.datetime.min
    last = hi if hi is not None else dt.datetime.max

    def encode(v: Any) -> str:
        if v.__class__ is datetime_type and v.tzinfo is None and first <= v <= last:
            text: str = v.isoformat(" ")  # fmt(v), inline: the binlog's usual value
            return text + pad if len(text) == 19 else text[:cut]
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
            if isinstance(v, decimal.Decimal):
                v = format(v, "f")  # fixed notation: str() writes "0E-9"
            else:
                v = _as_text(v) if not isinstance(v, int | float) else str(v)
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


_JSON_SPACE = " \t\n\r"  # JSON's whitespace (MariaDB keeps a document's text as written)


def _json_encoder(spec: _Spec, parsed_json: bool) -> Encoder:
    from ...protocol import render_json_mysql_text

    esc = _escape
    # A JSON null document: MySQL's binlog decodes it to None, as SQL NULL, so every path stores it as NULL when the
    # column is nullable (a SELECT's text `null` too, and MariaDB's), and as the text `null` in a NOT NULL column
    # (where None can only be the document): the initial load, the snapshot and the binlog give the same replica.
    null_document = NULL_FIELD if spec.nullable else "null"

    def encode(v: Any) -> str:
        if v is None:
            return null_document
        if not parsed_json:
            if isinstance(v, bytes | bytearray | memoryview):
                v = _bytes_text(v)
            if type(v) is str:  # JSON text: pymysql, and MariaDB's binlog (JSON is a LONGTEXT alias there)
                if len(v) < 40 and v.strip(_JSON_SPACE) == "null":
                    return null_document
                return esc(v)
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
        return "[" + ",".join(map(f32_signed_repr, _vector_values(v))) + "]"  # -0.0 kept

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
    return _generate(columns, caps, parsed_json, positions)[0]


def make_rows_encoder(
    columns: Sequence[ColumnDef],
    caps: Capabilities,
    *,
    parsed_json: bool = False,
    positions: Sequence[int] | None = None,
) -> Callable[[Sequence[Sequence[Any]]], list[str]]:
    """Like :func:`make_row_encoder`, for a list of rows at once: ``[encode_row(row) for row in rows]`` in one
    generated loop (no call per row). The same fields, the same errors."""
    return _generate(columns, caps, parsed_json, positions)[1]


# the generated sources' code objects: the source names only numbered slots (v0, e0, z0...) of the namespace each
# layout gets, so tables of the same column kinds share one compile (issue 24: 0.5 ms a table, 2,000 tables)
_COMPILED: dict[str, CodeType] = {}
_COMPILED_MAX = 4096


def _generate(
    columns: Sequence[ColumnDef],
    caps: Capabilities,
    parsed_json: bool,
    positions: Sequence[int] | None,
) -> tuple[Callable[[Sequence[Any]], str], Callable[[Sequence[Sequence[Any]]], list[str]]]:
    """The row encoder and the rows encoder of one layout, generated from the same expressions."""
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
        loads.append(f"{v} = row[{int(pos)}]\n")
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
    line = 'f"' + "\\t".join(parts) + '"'
    source = (
        "def encode_row(row):\n"
        + "".join("    " + load for load in loads)
        + f"    return {line}\n"
        + "def encode_rows(rows):\n"
        + "    out = []\n"
        + "    append = out.append\n"
        + "    for row in rows:\n"
        + "".join("        " + load for load in loads)
        + f"        append({line})\n"
        + "    return out\n"
    )
    code = _COMPILED.get(source)
    if code is None:  # compiled once per distinct source: thousands of tables share a few column layouts
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        code = _COMPILED[source] = compile(source, "<mybinlog row encoder>", "exec")
    exec(code, namespace)  # only numbers reach `source`
    fast: Callable[[Sequence[Any]], str] = namespace["encode_row"]
    fast_rows: Callable[[Sequence[Sequence[Any]]], list[str]] = namespace["encode_rows"]
    if speedups is not None:  # the compiled core writes the usual values, hands the rest to the same encoders
        fast_rows = speedups.TsvRows(_tsv_ops(specs, encoders, positions, namespace), fast).encode_rows
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

    def encode_rows(rows: Sequence[Sequence[Any]]) -> list[str]:
        if not isinstance(rows, list | tuple):
            rows = list(rows)  # an iterator: read once, so that a failed row can be encoded again below
        try:
            return fast_rows(rows)
        except (TypeError, ValueError, ArithmeticError, OverflowError, IndexError, struct.error):
            return [encode_row(row) for row in rows]  # raises for the first row that fails, naming the column

    return encode_row, encode_rows


# the compiled core's kinds (mybinlog/protocol/_sp_tsv.c, TsvRows)
_TSV_ZERO, _TSV_INT, _TSV_UINT, _TSV_FLOAT64, _TSV_TEXT, _TSV_DATETIME, _TSV_TIMESTAMP, _TSV_DATE, _TSV_DECIMAL = range(
    1, 10
)
_TSV_CALL = 10


def _fields(v: Any, n: int) -> tuple[int, ...] | None:
    """A range bound's fields for the compiled core: (y, mo, d, h, mi, s, us)[:n]."""
    if v is None:
        return None
    if n == 3:
        return (v.year, v.month, v.day)
    return (v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)


def _tsv_ops(
    specs: Sequence[_Spec], encoders: Sequence[Encoder], positions: Sequence[int], namespace: dict[str, Any]
) -> tuple[tuple[Any, ...], ...]:
    """The compiled rows encoder's column instructions: the kinds whose usual value it writes itself (the same
    text as the generated code and the encoders above), every other column through its encoder."""
    ops: list[tuple[Any, ...]] = []
    for i, (spec, enc, pos) in enumerate(zip(specs, encoders, positions, strict=True)):
        if pos < 0:
            ops.append((_TSV_ZERO, -1, False, None, namespace[f"z{i}"]))
            continue
        kind: str = spec.kind
        arg: Any = None
        if kind == "int":
            code = _TSV_UINT if spec.unsigned else _TSV_INT
        elif kind == "float64":
            code = _TSV_FLOAT64
        elif kind == "text" and not spec.char:
            code = _TSV_TEXT
        elif kind in ("datetime", "timestamp"):
            code = _TSV_TIMESTAMP if kind == "timestamp" else _TSV_DATETIME
            first = spec.lo if spec.lo is not None else dt.datetime.min
            last = spec.hi if spec.hi is not None else dt.datetime.max
            arg = (spec.fsp, _fields(first, 7), _fields(last, 7))
        elif kind == "date":
            code = _TSV_DATE
            arg = (0, _fields(spec.lo, 3), _fields(spec.hi, 3))
        elif kind == "decimal":
            code = _TSV_DECIMAL
            arg = spec.scale
        else:
            code = _TSV_CALL
        ops.append((code, pos, spec.nullable, enc, arg))
    return tuple(ops)


# ---------------------------------------------------------------------------------------------------------------
# implicit defaults


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
