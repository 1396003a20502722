"""Chunks of a table: key ranges, the SQL that selects them, and how they are written down (pure logic, no IO).

A chunk is a half-open range of the chunking key ``(lower, upper]``: ``lower`` is exclusive, ``upper`` inclusive,
``None`` means unbounded. The first chunk of a table has no lower bound and the last no upper bound, so every key
that exists at any moment -- including keys inserted after the plan was made, below the old minimum or above the
old maximum -- belongs to exactly one chunk. Keys are compared by MySQL itself (``ORDER BY`` and ``>`` use the
column's collation), so a boundary read from the server separates rows the same way when a chunk is read.

Composite keys compare as row values, ``(a, b) > (x, y)``, written out as
``a >= x AND (a > x OR (a = x AND b > y))``: MariaDB does not use an index for row-constructor comparisons, and
the leading ``a >= x`` gives its range optimizer a bound on the first key column.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigurationError
from ..source import quote_mysql_ident

__all__ = [
    "DENSE_THRESHOLD",
    "INTEGER_TYPES",
    "ORDERED_TYPES",
    "Chunk",
    "KeyValue",
    "TablePlan",
    "balance",
    "chunk_predicate",
    "decode_key",
    "encode_key",
    "even_boundaries",
    "key_at_most",
    "key_greater",
    "parse_key_range",
    "sql_literal",
]

KeyValue = tuple[Any, ...]

#: A table whose integer key has at least this many rows per key value (count / (max - min + 1)) is split into
#: even key ranges; below it (gaps, a few outliers far away) boundaries are sampled from the data.
DENSE_THRESHOLD = 0.5

#: MySQL base types of key columns the planner can split on (others: one chunk per table, see docs/snapshot.md).
INTEGER_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year"})
ORDERED_TYPES = INTEGER_TYPES | frozenset(
    {
        "decimal",
        "date",
        "datetime",
        "timestamp",
        "time",
        "char",
        "varchar",
        "binary",
        "varbinary",
        "tinytext",
        "text",
        "mediumtext",
        "longtext",
        "tinyblob",
        "blob",
        "mediumblob",
        "longblob",
        "uuid",
        "inet4",
        "inet6",
    }
)


@dataclass(frozen=True)
class Chunk:
    """One unit of work: the rows of ``table`` whose key is in ``(lower, upper]``.

    ``ordinal`` numbers the chunks of a whole snapshot (all tables) from 0; ``index`` numbers them within the
    table. ``estimated_rows`` comes from the plan (exact for sampled boundaries, proportional for even ranges).
    """

    ordinal: int
    table: str
    index: int
    lower: KeyValue | None
    upper: KeyValue | None
    estimated_rows: int = 0

    @property
    def label(self) -> str:
        return f"{self.table}#{self.index}"

    def to_json(self) -> dict[str, Any]:
        return {
            "ordinal": self.ordinal,
            "table": self.table,
            "index": self.index,
            "lower": None if self.lower is None else encode_key(self.lower),
            "upper": None if self.upper is None else encode_key(self.upper),
            "estimated_rows": self.estimated_rows,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Chunk:
        return cls(
            ordinal=int(obj["ordinal"]),
            table=str(obj["table"]),
            index=int(obj["index"]),
            lower=None if obj.get("lower") is None else decode_key(obj["lower"]),
            upper=None if obj.get("upper") is None else decode_key(obj["upper"]),
            estimated_rows=int(obj.get("estimated_rows", 0)),
        )


@dataclass
class TablePlan:
    """How one table is split. ``key``: the chunking key columns ([] = the whole table in one chunk);
    ``key_source``: ``primary``, ``unique`` (a NOT NULL unique key of a table without primary key) or ``none``;
    ``method``: ``even`` (integer key, dense), ``sampled`` (boundaries read from the key) or ``single``."""

    table: str
    key: list[str]
    key_source: str
    method: str
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def estimated_rows(self) -> int:
        return sum(c.estimated_rows for c in self.chunks)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "key": list(self.key),
            "key_source": self.key_source,
            "method": self.method,
            "chunks": [c.to_json() for c in self.chunks],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> TablePlan:
        return cls(
            table=str(obj["table"]),
            key=[str(k) for k in obj["key"]],
            key_source=str(obj["key_source"]),
            method=str(obj["method"]),
            chunks=[Chunk.from_json(c) for c in obj["chunks"]],
        )


# --- key values written down (the plan is stored as JSON for resuming) ----------------------------------------


def _encode_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if abs(value) < 1 << 53 else {"i": str(value)}
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return {"b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, decimal.Decimal):
        return {"d": str(value)}
    if isinstance(value, dt.datetime):
        return {"T": value.isoformat()}
    if isinstance(value, dt.date):
        return {"D": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"t": str(value // dt.timedelta(microseconds=1))}
    if isinstance(value, float) and math.isfinite(value):
        return {"f": repr(value)}
    raise ConfigurationError(f"cannot record a key value of type {type(value).__name__} in a snapshot plan")


def _decode_value(obj: Any) -> Any:
    if obj is None or isinstance(obj, int | str):
        return obj
    if isinstance(obj, dict) and len(obj) == 1:
        ((tag, text),) = obj.items()
        if tag == "i":
            return int(text)
        if tag == "b":
            return base64.b64decode(text)
        if tag == "d":
            return decimal.Decimal(text)
        if tag == "T":
            return dt.datetime.fromisoformat(text)
        if tag == "D":
            return dt.date.fromisoformat(text)
        if tag == "t":
            return dt.timedelta(microseconds=int(text))
        if tag == "f":
            return float(text)
    raise ConfigurationError(f"malformed key value {obj!r} in a snapshot plan")


def encode_key(key: KeyValue) -> list[Any]:
    """A key tuple as JSON-compatible data that :func:`decode_key` turns back into equal Python values."""
    return [_encode_value(v) for v in key]


def decode_key(data: Sequence[Any]) -> KeyValue:
    return tuple(_decode_value(v) for v in data)


# --- predicates ---------------------------------------------------------------------------------------------

#: MySQL character set -> Python codec, to write a string key value as a hex literal in the column's charset.
_CODECS = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "latin1": "cp1252",
    "ascii": "ascii",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "cp1250": "cp1250",
    "cp1251": "cp1251",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "latin2": "iso8859-2",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "greek": "iso8859-7",
    "hebrew": "iso8859-8",
    "koi8r": "koi8-r",
    "koi8u": "koi8-u",
    "sjis": "shift_jis",
    "cp932": "cp932",
    "ujis": "euc-jp",
    "eucjpms": "euc-jp",
    "gbk": "gbk",
    "gb2312": "gb2312",
    "gb18030": "gb18030",
    "big5": "big5",
    "euckr": "euc-kr",
}


def sql_literal(value: Any, charset: str | None = None) -> str:
    """``value`` (as the MySQL client library returned it) as a SQL literal that compares like the column.

    Strings become ``_charset X'hex'`` in the column's own character set: the literal is coercible, so the
    comparison uses the column's collation, no character is ever escaped (whatever ``sql_mode``), and the column
    is never converted (which would disable its index). Bytes become ``X'hex'``.
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | decimal.Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'" if value else "''"
    if isinstance(value, str):
        cs = (charset or "utf8mb4").lower()
        codec = _CODECS.get(cs)
        if codec is None:
            cs, codec = "utf8mb4", "utf-8"
        try:
            raw = value.encode(codec)
        except UnicodeEncodeError:
            cs, raw = "utf8mb4", value.encode("utf-8", "surrogatepass")
        introducer = "utf8" if cs == "utf8mb3" else cs  # MySQL 5.7 knows no _utf8mb3
        return f"_{introducer} X'{raw.hex()}'" if raw else f"_{introducer}''"
    if isinstance(value, dt.datetime):
        return "'" + value.replace(tzinfo=None).isoformat(sep=" ") + "'"
    if isinstance(value, dt.date):
        return f"'{value.isoformat()}'"
    if isinstance(value, dt.timedelta):
        micros = value // dt.timedelta(microseconds=1)
        sign = "-" if micros < 0 else ""
        micros = abs(micros)
        seconds, us = divmod(micros, 1_000_000)
        hours, rest = divmod(seconds, 3600)
        minutes, secs = divmod(rest, 60)
        return f"'{sign}{hours:02d}:{minutes:02d}:{secs:02d}.{us:06d}'"
    raise ConfigurationError(f"cannot write a key value of type {type(value).__name__} as SQL")


def key_greater(columns: Sequence[str], values: KeyValue, charsets: Sequence[str | None] | None = None) -> str:
    """SQL for ``(columns) > (values)``."""
    if len(columns) != len(values) or not columns:
        raise ValueError("key columns and values differ in length")
    cs = list(charsets) if charsets is not None else [None] * len(columns)
    c = quote_mysql_ident(columns[0])
    v = sql_literal(values[0], cs[0])
    if len(columns) == 1:
        return f"{c} > {v}"
    rest = key_greater(columns[1:], values[1:], cs[1:])
    return f"{c} >= {v} AND ({c} > {v} OR ({c} = {v} AND {rest}))"


def key_at_most(columns: Sequence[str], values: KeyValue, charsets: Sequence[str | None] | None = None) -> str:
    """SQL for ``(columns) <= (values)``."""
    if len(columns) != len(values) or not columns:
        raise ValueError("key columns and values differ in length")
    cs = list(charsets) if charsets is not None else [None] * len(columns)
    c = quote_mysql_ident(columns[0])
    v = sql_literal(values[0], cs[0])
    if len(columns) == 1:
        return f"{c} <= {v}"
    rest = key_at_most(columns[1:], values[1:], cs[1:])
    return f"{c} <= {v} AND ({c} < {v} OR ({c} = {v} AND {rest}))"


def chunk_predicate(columns: Sequence[str], chunk: Chunk, charsets: Sequence[str | None] | None = None) -> str:
    """``(lower, upper]`` of ``chunk`` as SQL; ``"1"`` for an unbounded chunk."""
    parts: list[str] = []
    if chunk.lower is not None:
        parts.append(f"({key_greater(columns, chunk.lower, charsets)})")
    if chunk.upper is not None:
        parts.append(f"({key_at_most(columns, chunk.upper, charsets)})")
    return " AND ".join(parts) if parts else "1"


def even_boundaries(lo: int, hi: int, count: int, chunk_rows: int) -> list[int] | None:
    """Upper (inclusive) boundaries splitting the integer key range ``[lo, hi]`` holding ``count`` rows into
    chunks of about ``chunk_rows`` rows; ``[]`` for one chunk, ``None`` when the key is too sparse for even ranges
    (fewer than :data:`DENSE_THRESHOLD` rows per key value), i.e. boundaries must be sampled."""
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be >= 1")
    if count <= chunk_rows or hi <= lo:
        return []
    span = hi - lo + 1
    if count / span < DENSE_THRESHOLD:
        return None
    n_chunks = math.ceil(count / chunk_rows)
    step = max(1, math.ceil(span / n_chunks))
    bounds = [lo - 1 + step * i for i in range(1, n_chunks)]
    return [b for b in bounds if b < hi]


def parse_key_range(text: str) -> tuple[str | None, str | None]:
    """``"LO:HI"``, ``"LO:"`` or ``":HI"`` (inclusive) -> (LO, HI) as text; ``\\:`` escapes a colon in a value."""
    parts: list[str] = []
    buf = ""
    escaped = False
    for ch in text:
        if escaped:
            buf += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ":":
            parts.append(buf)
            buf = ""
        else:
            buf += ch
    parts.append(buf)
    if len(parts) != 2:
        raise ConfigurationError(
            f"key range {text!r} must be LOW:HIGH (inclusive; either side may be empty, escape ':' as '\\:')"
        )
    lo, hi = parts
    if not lo and not hi:
        raise ConfigurationError("key range ':' names neither a lower nor an upper bound")
    return (lo or None, hi or None)


def balance(chunks: Sequence[Chunk], n_groups: int) -> list[list[Chunk]]:
    """Split ``chunks`` into at most ``n_groups`` groups of similar estimated size (largest first, each into the
    lightest group), each group in plan order."""
    if n_groups < 1:
        raise ValueError("n_groups must be >= 1")
    n_groups = min(n_groups, len(chunks))
    if n_groups == 0:
        return []
    groups: list[list[Chunk]] = [[] for _ in range(n_groups)]
    loads = [0] * n_groups
    for chunk in sorted(chunks, key=lambda c: (-max(c.estimated_rows, 1), c.ordinal)):
        i = loads.index(min(loads))
        groups[i].append(chunk)
        loads[i] += max(chunk.estimated_rows, 1)
    return [sorted(g, key=lambda c: c.ordinal) for g in groups if g]
