"""Debezium's JSON messages for row changes and DDL, as pure functions (no I/O, no Kafka client).

What a Debezium MySQL connector with its defaults writes through Kafka Connect's JSON converter with
``schemas.enable=false``:

* key: the primary key columns as a JSON object (``{"id":1004}``), ``None`` for a table without a primary key;
* value: ``{"before":…,"after":…,"source":{…},"op":"c|u|d|r","ts_ms":…,"transaction":null}``;
* a tombstone (same key, value ``None``) after each delete, so that log compaction can drop the key;
* an update that changes the primary key becomes a delete (header ``__debezium.newkey``), its tombstone and a create
  (header ``__debezium.oldkey``), as Debezium does;
* DDL: a message for the schema change topic (``<prefix>``) keyed by ``{"databaseName": …}``.

Column values take Debezium's forms for ``decimal.handling.mode=precise``, ``time.precision.mode=
adaptive_time_microseconds``, ``binary.handling.mode=bytes`` and ``bigint.unsigned.handling.mode=long``; the table of
docs/kafka.md ("Value types") lists every MySQL type with its form and what differs from Debezium.

The table model is duck-typed (:class:`TableLike`, :class:`ColumnLike`): :class:`mybinlog.ddl.TableDef` fits.
Rows are what mybinlog's decoder gives (tuples in column order; :data:`~mybinlog.protocol.MISSING` for a column a
minimal row image left out, which is left out of the message too).

API (wired by the Kafka sink): :class:`SourceInfo`, :class:`Message`, :class:`TableEncoder`
(``key``, ``row``, ``change``, ``encode``), :func:`truncate`, :func:`schema_change`, :func:`topic_name`,
:func:`encode_decimal`.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import struct
import uuid
from binascii import b2a_base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, NamedTuple, Protocol

from ..errors import ConfigurationError
from ..protocol import MISSING, render_json_mysql_text

__all__ = [
    "ColumnLike",
    "Message",
    "SourceInfo",
    "TableEncoder",
    "TableLike",
    "column_encoder",
    "column_text",
    "encode_decimal",
    "schema_change",
    "topic_name",
    "truncate",
]

Op = Literal["c", "u", "d", "r"]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)  # DATETIME is a wall time: Debezium reads it as UTC
_MICROSECOND, _MILLISECOND = dt.timedelta(microseconds=1), dt.timedelta(milliseconds=1)
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True).encode
_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
# the text of MySQL charsets in Python codecs (a text value the decoder left as bytes)
_CODECS = {"latin1": "cp1252", "ascii": "ascii", "binary": "latin-1", "ucs2": "utf-16-be", "utf16": "utf-16-be",
           "utf32": "utf-32-be", "cp1251": "cp1251", "gbk": "gbk", "big5": "big5", "sjis": "shift_jis"}  # fmt: skip


class ColumnLike(Protocol):
    """What the encoder reads of a column (:class:`mybinlog.ddl.ColumnDef` has it all)."""

    name: str
    type_name: str
    unsigned: bool
    length: int | None
    scale: int | None
    fsp: int | None
    values: tuple[str, ...]
    nullable: bool
    charset: str | None
    auto_increment: bool
    generated: str | None
    raw_type: str


class TableLike(Protocol):
    schema: str
    name: str
    columns: list[Any]  # ColumnLike
    primary_key: list[str]
    charset: str | None


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Debezium's ``source`` block: where a change comes from.

    ``name``: the logical server name (Debezium's ``topic.prefix``); ``server_id``, ``file``, ``pos``: the binlog
    position of the change's event (``pos`` of the transaction's start, as Debezium); ``gtid``: the transaction's
    GTID (``None`` without GTIDs); ``ts_ms``: the change's time in the source (binlog header, milliseconds);
    ``snapshot``: ``"false"`` for the binlog, ``"true"`` for a row of the initial load, ``"last"`` for its last row;
    ``row``: the row's index in its rows event; ``thread``/``query``: optional.
    """

    name: str
    db: str
    table: str | None
    server_id: int = 0
    file: str = ""
    pos: int = 0
    gtid: str | None = None
    ts_ms: int = 0
    snapshot: str = "false"
    row: int = 0
    thread: int | None = None
    query: str | None = None
    version: str = "mybinlog"

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "connector": "mysql",
            "name": self.name,
            "ts_ms": self.ts_ms,
            "snapshot": self.snapshot,
            "db": self.db,
            "sequence": None,
            "table": self.table,
            "server_id": self.server_id,
            "gtid": self.gtid,
            "file": self.file,
            "pos": self.pos,
            "row": self.row,
            "thread": self.thread,
            "query": self.query,
        }

    def parts(self) -> tuple[str, str]:
        """:meth:`as_json` as JSON text cut around the value of ``row`` (which changes from row to row of a
        transaction, when nothing else does): ``head + str(row) + tail`` is the ``source`` object's text."""
        whole = self.as_json()
        tail = {"thread": whole.pop("thread"), "query": whole.pop("query")}
        del whole["row"]
        return _DUMPS(whole)[:-1] + ',"row":', "," + _DUMPS(tail)[1:]


class Message(NamedTuple):
    """One Kafka record: ``value`` is ``None`` for a tombstone; ``key`` is ``None`` for a table without a key.
    (A named tuple: a frozen dataclass took a third of a row's encoding time to build.)"""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


def topic_name(prefix: str, database: str, table: str, pattern: str = "{prefix}.{database}.{table}") -> str:
    """The topic of a table: Debezium's ``<prefix>.<database>.<table>`` by default; ``pattern`` may reorder or
    drop the parts (``"cdc_{table}"``). Characters Kafka does not allow in a topic name (anything but
    ``[a-zA-Z0-9._-]``) become ``_``, as Debezium does."""
    name = pattern.format(prefix=prefix, database=database, table=table)
    out = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "_" for ch in name)
    if not out or len(out) > 249 or out in (".", ".."):
        raise ConfigurationError(f"topic name {name!r} is not a valid Kafka topic name (1..249 of [a-zA-Z0-9._-])")
    return out


# -- values -------------------------------------------------------------------------------------------------------


def encode_decimal(value: Decimal | int | str, scale: int) -> str:
    """Debezium's ``decimal.handling.mode=precise``: base64 of the unscaled value as big-endian two's complement in
    the fewest bytes (Java's ``BigInteger.toByteArray``); the scale is in the schema, not the value."""
    number = value if type(value) is Decimal else Decimal(value)
    unscaled = int(number.scaleb(scale).to_integral_value())
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return b2a_base64(unscaled.to_bytes(bits // 8 + 1, "big", signed=True), newline=False).decode("ascii")


def _b64(value: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _f32(value: float) -> float:
    """The shortest decimal that is the same float32 (what Java prints for a float)."""
    packed = struct.pack("<f", value)
    for digits in range(1, 10):
        short = float(f"{value:.{digits}g}")
        try:
            if struct.pack("<f", short) == packed:
                return short
        except OverflowError:  # near FLT_MAX a short decimal rounds past the float32 range: more digits
            continue
    return value


def _zero(column: ColumnLike, epoch: Any) -> Callable[[Any], Any]:
    # MySQL's zero dates ('0000-00-00...', as text from the decoder): null when the column allows it, else the epoch
    fallback = None if column.nullable else epoch
    return lambda _value: fallback


def column_encoder(column: ColumnLike, *, bigint_unsigned: str = "long") -> Callable[[Any], Any]:
    """The function that turns one decoded value of ``column`` into its Debezium JSON form (``None`` stays null)."""
    kind = column.type_name
    if kind in _INT_BITS:
        bits = _INT_BITS[kind]
        if not column.unsigned:
            return int
        if kind == "bigint":
            if bigint_unsigned == "precise":  # Decimal(20, 0)
                return lambda v: encode_decimal(v % (1 << 64), 0)
            # long: the 64 bits as a signed Java long (values >= 2**63 come out negative, as in Debezium)
            return lambda v: v - (1 << 64) if v >= 1 << 63 else (v + (1 << 64) if v < -(1 << 63) else v)
        return lambda v: v + (1 << bits) if v < 0 else v  # a decoder without signedness metadata wraps
    if kind == "decimal":
        scale = column.scale or 0
        return lambda v: encode_decimal(v, scale)
    if kind == "float":
        return _f32
    if kind == "double":
        return float
    if kind == "bit":
        width = column.length or 1
        if width == 1:
            return bool
        size = (width + 7) // 8
        return lambda v: _b64(int(v).to_bytes(size, "little"))  # io.debezium.data.Bits: little-endian
    if kind == "year":
        return int
    if kind == "date":
        zero = _zero(column, 0)
        return lambda v: zero(v) if isinstance(v, str) else (v - _EPOCH_DATE).days
    if kind == "datetime":
        zero = _zero(column, 0)
        micros = (column.fsp or 0) > 3

        def datetime_value(v: Any) -> Any:
            if isinstance(v, str):
                return zero(v)
            if v.tzinfo is not None:
                v = v.replace(tzinfo=None)
            return (v - _EPOCH) // (_MICROSECOND if micros else _MILLISECOND)

        return datetime_value
    if kind == "timestamp":
        zero = _zero(column, "1970-01-01T00:00:00Z")
        fsp = column.fsp or 0

        def timestamp_value(v: Any) -> Any:
            if isinstance(v, str):
                return zero(v)
            if v.tzinfo is not None:
                v = v.astimezone(dt.UTC)
            text = v.strftime("%Y-%m-%dT%H:%M:%S")
            if fsp:
                text += f".{v.microsecond:06d}"[: fsp + 1]
            return text + "Z"

        return timestamp_value
    if kind == "time":
        return lambda v: (v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds
    if kind == "json":
        return lambda v: v if isinstance(v, str) else render_json_mysql_text(v, compact=True)
    if kind == "enum":
        members = column.values
        return lambda v: (members[v - 1] if 0 < v <= len(members) else "") if isinstance(v, int) else _text(v, column)
    if kind == "set":
        members = column.values

        def set_value(v: Any) -> str:
            if isinstance(v, int):
                return ",".join(m for i, m in enumerate(members) if v >> i & 1)
            if isinstance(v, (set, frozenset)):
                return ",".join(m for m in members if m in v)
            return _text(v, column)

        return set_value
    if kind in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
        return lambda v: _text(v, column)
    if kind == "binary":
        width = column.length or 1
        return lambda v: _b64(bytes(v).ljust(width, b"\0"))  # MySQL returns BINARY(n) padded with zero bytes
    if kind in ("varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
        return _b64
    if kind in ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
                "geometrycollection"):  # fmt: skip
        return lambda v: {"wkb": _b64(bytes(v)[4:]), "srid": int.from_bytes(bytes(v)[:4], "little")}
    if kind == "uuid":
        return lambda v: str(uuid.UUID(bytes=bytes(v).ljust(16, b"\0"))) if not isinstance(v, str) else v
    if kind == "inet6":
        return lambda v: str(ipaddress.IPv6Address(bytes(v).ljust(16, b"\0"))) if not isinstance(v, str) else v
    if kind == "inet4":
        return lambda v: str(ipaddress.IPv4Address(v)) if not isinstance(v, str) else v
    if kind == "vector":
        return lambda v: [_f32(x) for x in v]
    return lambda v: _b64(v) if isinstance(v, (bytes, bytearray, memoryview)) else v


def _text(value: Any, column: ColumnLike) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        codec = _CODECS.get((column.charset or "utf8mb4").lower(), "utf-8")
        return bytes(value).decode(codec, "replace")
    return str(value)


# -- rows -----------------------------------------------------------------------------------------------------------
# Messages are assembled as JSON text from pre-encoded parts (field names, the source block of a transaction) and one
# text function per column: the same bytes as json.dumps of the objects (TableEncoder.row, SourceInfo.as_json, with
# _DUMPS's settings: ensure_ascii=False, no spaces, NaN allowed), 4-5 times faster.
# tests/unit/kafka/test_kafka_envelope.py compares both over every column type.

_STR = json.encoder.encode_basestring  # _DUMPS's string encoder (ensure_ascii=False), in C
_INT = int.__repr__
_FLOAT = float.__repr__


_SPECIAL_FLOATS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # as _DUMPS writes them


def _float_text(value: float) -> str:
    text = _FLOAT(value)
    return text if text[-1] not in "nf" else _SPECIAL_FLOATS[text]  # a finite float's repr ends with a digit


def _json_text(value: Any) -> str:
    """``_DUMPS(value)``, with the common types first."""
    kind = type(value)
    if kind is str:
        return _STR(value)
    if kind is int:
        return _INT(value)
    if kind is float:
        return _float_text(value)
    return _DUMPS(value)


def _double_text(value: Any) -> str:
    return _float_text(value if type(value) is float else float(value))


def _int_text(value: Any) -> str:
    return _INT(value) if type(value) is int else _INT(int(value))


_TEXT_KINDS = frozenset(("char", "varchar", "tinytext", "text", "mediumtext", "longtext"))


def _compile_row(
    columns: Sequence[ColumnLike], texts: Sequence[Callable[[Any], str]], *, key: bool = False
) -> Callable[[Any], Any]:
    """One function per table that writes a row image (a mapping) as the JSON text of ``TableEncoder.row`` (``key``:
    the key's columns as the UTF-8 of ``TableEncoder.key``), the loop over the columns unrolled, integers and strings
    written inline. The generated source holds only local names (``n0``, ``p0``, ``t0``...): the columns' names and
    functions are bound through its namespace, never pasted into the code."""
    env: dict[str, Any] = {"MISSING": MISSING, "_INT": _INT, "_STR": _STR, "_FLOAT": _FLOAT, "_DT": dt.datetime,
                           "_EPOCH": _EPOCH}  # fmt: skip
    lines = ["def row_text(values):", "    get = values.get", "    parts = []", "    add = parts.append"]
    for i, (column, text) in enumerate(zip(columns, texts, strict=True)):
        prefix = _STR(column.name) + ":"
        env.update({f"n{i}": column.name, f"p{i}": prefix, f"z{i}": prefix + "null", f"t{i}": text})
        if text is _int_text:
            inline = f"(_INT(v) if type(v) is int else t{i}(v))"
        elif column.type_name in _TEXT_KINDS:
            inline = f"(_STR(v) if type(v) is str else t{i}(v))"
        elif text is _double_text:  # a finite float: its repr (v - v is nan for nan and the infinities)
            inline = f"(_FLOAT(v) if type(v) is float and v - v == 0.0 else t{i}(v))"
        elif column.type_name == "datetime":  # a naive datetime: ms or us since the epoch, as datetime_value
            env[f"u{i}"] = _MICROSECOND if (column.fsp or 0) > 3 else _MILLISECOND
            inline = f"(_INT((v - _EPOCH) // u{i}) if type(v) is _DT and v.tzinfo is None else t{i}(v))"
        else:
            inline = f"t{i}(v)"
        if key:  # a key column is never left out of an image
            lines += [f"    v = get(n{i})", f"    add(z{i} if v is None else p{i} + {inline})"]
        else:
            lines += [
                f"    v = get(n{i}, MISSING)",
                "    if v is None:",
                f"        add(z{i})",
                "    elif v is not MISSING:",
                f"        add(p{i} + {inline})",
            ]
    lines.append("    return ('{' + ','.join(parts) + '}')" + (".encode()" if key else ""))
    exec(compile("\n".join(lines), "<mybinlog.kafka row encoder>", "exec"), env)
    function: Callable[[Any], Any] = env["row_text"]
    return function


def column_text(column: ColumnLike, *, bigint_unsigned: str = "long") -> Callable[[Any], str]:
    """The function that turns one decoded value (not None) of ``column`` into the JSON text of its Debezium form:
    ``_DUMPS(column_encoder(column)(value))``, without the detour through a Python object where the type allows."""
    encode = column_encoder(column, bigint_unsigned=bigint_unsigned)
    if encode is int:  # signed integers, YEAR
        return _int_text
    if column.type_name in _TEXT_KINDS:
        return lambda v: _STR(v) if type(v) is str else _STR(_text(v, column))
    if encode is float:  # DOUBLE
        return _double_text
    if column.type_name == "decimal":  # base64: nothing to escape
        scale = column.scale or 0
        return lambda v: f'"{encode_decimal(v, scale)}"'
    return lambda v: _json_text(encode(v))


def _no_key(values: Mapping[str, Any]) -> None:
    return None


class TableEncoder:
    """The messages of one table (build one per table version: after a DDL, build a new one).

    ``tombstones``: a tombstone after each delete (Debezium's ``tombstones.on.delete``, on by default).
    ``bigint_unsigned``: ``"long"`` (Debezium's default) or ``"precise"``.

    :meth:`change` takes row images as sequences in column order and a :class:`SourceInfo`; :meth:`encode` (the
    sink's) takes them as mappings (column name -> value) and the source block as :meth:`SourceInfo.parts`, made
    once per transaction.
    """

    def __init__(self, table: TableLike, *, tombstones: bool = True, bigint_unsigned: str = "long") -> None:
        if bigint_unsigned not in ("long", "precise"):
            raise ConfigurationError(f"bigint_unsigned must be 'long' or 'precise', not {bigint_unsigned!r}")
        self.table = table
        self.tombstones = tombstones
        self.names = [c.name for c in table.columns]
        self.encoders = [column_encoder(c, bigint_unsigned=bigint_unsigned) for c in table.columns]
        lower = [n.lower() for n in self.names]
        self.key_index = [lower.index(k.lower()) for k in table.primary_key]
        self._source: tuple[tuple[Any, ...], tuple[str, str]] = ((), ("", ""))  # change(): the last source block
        # the compiled row and key functions (JSON text of row() and key())
        texts = [column_text(c, bigint_unsigned=bigint_unsigned) for c in table.columns]
        self._text: Callable[[Mapping[str, Any]], str] = _compile_row(table.columns, texts)
        self._key: Callable[[Mapping[str, Any]], bytes | None] = (
            _compile_row([table.columns[i] for i in self.key_index], [texts[i] for i in self.key_index], key=True)
            if self.key_index
            else _no_key
        )

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        """One row image as Debezium's ``before``/``after`` object (columns a minimal image left out are absent)."""
        out: dict[str, Any] = {}
        for name, encode, value in zip(self.names, self.encoders, values, strict=False):
            if value is None:
                out[name] = None
            elif value is not MISSING:
                out[name] = encode(value)
        return out

    def key_json(self, values: Sequence[Any]) -> dict[str, Any] | None:
        if not self.key_index:
            return None
        names, encoders = self.names, self.encoders
        return {names[i]: (None if values[i] is None else encoders[i](values[i])) for i in self.key_index}

    def key(self, values: Sequence[Any]) -> bytes | None:
        """The message key: the primary key columns as a JSON object; ``None`` without a primary key."""
        return self._key(dict(zip(self.names, values, strict=False)))

    def change(
        self,
        op: Op,
        before: Sequence[Any] | None,
        after: Sequence[Any] | None,
        source: SourceInfo,
        ts_ms: int,
    ) -> list[Message]:
        """The messages of one row change, in order: one message; for a delete also its tombstone; for an update
        of the primary key a delete, its tombstone and a create (with Debezium's ``__debezium.*key`` headers)."""
        names = self.names
        # consecutive rows of one transaction or snapshot share their source block but for `row`: encoded once
        ident = (source.name, source.db, source.table, source.server_id, source.file, source.pos, source.gtid,
                 source.ts_ms, source.snapshot, source.thread, source.query, source.version)  # fmt: skip
        if ident != self._source[0]:
            self._source = (ident, source.parts())
        return self.encode(
            op,
            None if before is None else dict(zip(names, before, strict=False)),
            None if after is None else dict(zip(names, after, strict=False)),
            self._source[1],
            source.row,
            ts_ms,
        )

    def encode(
        self,
        op: Op,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any] | None,
        source: tuple[str, str],
        row: int,
        ts_ms: int,
    ) -> list[Message]:
        """:meth:`change` with row images as mappings (a column absent from one, or :data:`MISSING`, is left out)
        and ``source`` as :meth:`SourceInfo.parts` with the row's index ``row``."""
        if op == "c" or op == "r":  # the common case in one piece
            assert after is not None
            value = (
                f'{{"before":null,"after":{self._text(after)},"source":{source[0]}{row}{source[1]},"op":"{op}",'
                f'"ts_ms":{ts_ms},"transaction":null}}'
            )
            return [Message(self._key(after), value.encode())]
        src = f"{source[0]}{row}{source[1]}"
        end = f',"ts_ms":{ts_ms},"transaction":null}}'
        tail = f'{src},"op":"{op}"{end}'
        assert before is not None
        if op == "d":
            key = self._key(before)
            value = f'{{"before":{self._text(before)},"after":null,"source":{tail}'
            if self.tombstones and key is not None:
                return [Message(key, value.encode()), Message(key, None)]
            return [Message(key, value.encode())]
        assert after is not None
        old, new = self._key(before), self._key(after)
        if old == new:
            value = f'{{"before":{self._text(before)},"after":{self._text(after)},"source":{tail}'
            return [Message(new, value.encode())]
        assert old is not None
        assert new is not None
        deleted = f'{{"before":{self._text(before)},"after":null,"source":{src},"op":"d"{end}'
        created = f'{{"before":null,"after":{self._text(after)},"source":{src},"op":"c"{end}'
        out = [Message(old, deleted.encode(), (("__debezium.newkey", new),))]
        if self.tombstones:
            out.append(Message(old, None))
        out.append(Message(new, created.encode(), (("__debezium.oldkey", old),)))
        return out


def truncate(source: SourceInfo, ts_ms: int) -> Message:
    """Debezium's truncate event (``op: "t"``) for the table's topic: no key (it is about the whole table),
    ``before`` and ``after`` null (Kafka Connect's JSON converter writes the envelope's null fields)."""
    tail = f',"op":"t","ts_ms":{ts_ms},"transaction":null}}'
    return Message(None, f'{{"before":null,"after":null,"source":{_DUMPS(source.as_json())}{tail}'.encode())


# -- DDL ------------------------------------------------------------------------------------------------------------

# java.sql.Types of Debezium's table model
_JDBC = {"bit": -7, "tinyint": -6, "smallint": 5, "mediumint": 4, "int": 4, "bigint": -5, "float": 7, "double": 8,
         "decimal": 3, "char": 1, "varchar": 12, "tinytext": 12, "text": 12, "mediumtext": 12, "longtext": 12,
         "enum": 1, "set": 1, "binary": -2, "varbinary": -3, "tinyblob": 2004, "blob": 2004, "mediumblob": 2004,
         "longblob": 2004, "date": 91, "time": 92, "datetime": 93, "timestamp": 2014, "year": 4,
         "json": 1111}  # fmt: skip


def _column_change(column: ColumnLike, position: int) -> dict[str, Any]:
    kind = column.type_name
    return {
        "name": column.name,
        "jdbcType": _JDBC.get(kind, 1111),
        "nativeType": None,
        "typeName": (kind + (" UNSIGNED" if column.unsigned else "")).upper(),
        "typeExpression": (kind + (" UNSIGNED" if column.unsigned else "")).upper(),
        "charsetName": column.charset,
        "length": column.fsp if kind in ("time", "datetime", "timestamp") else column.length,
        "scale": column.scale,
        "position": position,
        "optional": column.nullable,
        "autoIncremented": column.auto_increment,
        "generated": column.auto_increment or column.generated is not None,
    }


def schema_change(
    source: SourceInfo,
    database: str,
    ddl: str,
    *,
    table: TableLike | None = None,
    change: Literal["CREATE", "ALTER", "DROP"] | None = None,
) -> Message:
    """The message of one DDL statement for the schema change topic (named ``<prefix>``, as Debezium's): key
    ``{"databaseName": database}``; value ``source``, ``databaseName``, ``schemaName`` (null), ``ddl`` and
    ``tableChanges`` (the table after the change when ``table`` and ``change`` are given, else ``[]``)."""
    changes: list[dict[str, Any]] = []
    if table is not None and change is not None:
        described: dict[str, Any] = {
            "defaultCharsetName": table.charset,
            "primaryKeyColumnNames": list(table.primary_key),
            "columns": [_column_change(c, i) for i, c in enumerate(table.columns, 1)],
            "attributes": [],
        }
        changes.append({"type": change, "id": f'"{table.schema}"."{table.name}"', "table": described})
    value = {"source": source.as_json(), "databaseName": database, "schemaName": None, "ddl": ddl,
             "tableChanges": changes}  # fmt: skip
    return Message(_DUMPS({"databaseName": database}).encode(), _DUMPS(value).encode())
