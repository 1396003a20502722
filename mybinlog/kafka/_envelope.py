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
(``key``, ``row``, ``change``), :func:`schema_change`, :func:`topic_name`, :func:`encode_decimal`.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, Protocol

from ..errors import ConfigurationError
from ..protocol import MISSING, render_json_mysql_text

__all__ = [
    "ColumnLike",
    "Message",
    "SourceInfo",
    "TableEncoder",
    "TableLike",
    "column_encoder",
    "encode_decimal",
    "schema_change",
    "topic_name",
]

Op = Literal["c", "u", "d", "r"]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)  # DATETIME is a wall time: Debezium reads it as UTC
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


@dataclass(frozen=True, slots=True)
class Message:
    """One Kafka record: ``value`` is ``None`` for a tombstone; ``key`` is ``None`` for a table without a key."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = field(default=())


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
    unscaled = int(Decimal(value).scaleb(scale).to_integral_value())
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return base64.b64encode(unscaled.to_bytes(bits // 8 + 1, "big", signed=True)).decode("ascii")


def _b64(value: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _f32(value: float) -> float:
    """The shortest decimal that is the same float32 (what Java prints for a float)."""
    packed = struct.pack("<f", value)
    for digits in range(1, 10):
        short = float(f"{value:.{digits}g}")
        if struct.pack("<f", short) == packed:
            return short
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
            delta = v.replace(tzinfo=None) - _EPOCH
            us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
            return us if micros else us // 1000

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


class TableEncoder:
    """The messages of one table (build one per table version: after a DDL, build a new one).

    ``tombstones``: a tombstone after each delete (Debezium's ``tombstones.on.delete``, on by default).
    ``bigint_unsigned``: ``"long"`` (Debezium's default) or ``"precise"``.
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
        key = self.key_json(values)
        return None if key is None else _DUMPS(key).encode()

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
        if op in ("c", "r"):
            assert after is not None
            return [self._message(op, None, after, source, ts_ms, self.key(after))]
        if op == "d":
            assert before is not None
            key = self.key(before)
            out = [self._message("d", before, None, source, ts_ms, key)]
            if self.tombstones and key is not None:
                out.append(Message(key, None))
            return out
        assert before is not None
        assert after is not None
        old, new = self.key(before), self.key(after)
        if old == new:
            return [self._message("u", before, after, source, ts_ms, new)]
        assert old is not None
        assert new is not None
        out = [self._message("d", before, None, source, ts_ms, old, (("__debezium.newkey", new),))]
        if self.tombstones:
            out.append(Message(old, None))
        out.append(self._message("c", None, after, source, ts_ms, new, (("__debezium.oldkey", old),)))
        return out

    def _message(
        self,
        op: str,
        before: Sequence[Any] | None,
        after: Sequence[Any] | None,
        source: SourceInfo,
        ts_ms: int,
        key: bytes | None,
        headers: tuple[tuple[str, bytes], ...] = (),
    ) -> Message:
        value = {
            "before": None if before is None else self.row(before),
            "after": None if after is None else self.row(after),
            "source": source.as_json(),
            "op": op,
            "ts_ms": ts_ms,
            "transaction": None,
        }
        return Message(key, _DUMPS(value).encode(), headers)


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
