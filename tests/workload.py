"""A deterministic write workload covering every MariaDB column type, with a model of what it wrote.

Use it to produce binlogs on a private server (``tests.servers``) and to check that decoded rows equal what
was written::

    wl = Workload(seed=1)
    result = wl.run(conn, db, n_transactions=20, statements_per_txn=5)   # conn: pymysql, autocommit=True
    for change in result.changes:        # RowChange, in commit order (= binlog order)
        ...
    assert result.check_server(conn) == []   # table contents on the server equal the model

Value conventions (what the mybinlog decoder delivers; the workload's Python values use the same forms)
------------------------------------------------------------------------------------------------------
=========================================  ===============================================================
column type                                Python value
=========================================  ===============================================================
TINYINT .. BIGINT                          ``int``; UNSIGNED columns as non-negative ``int``
DECIMAL(p, s)                              ``decimal.Decimal`` with exactly ``s`` fractional digits
FLOAT / DOUBLE                             ``float`` (FLOAT: the float32 value widened to float)
BIT(n)                                     ``int`` (big-endian bits)
DATE                                       ``datetime.date``
TIME(fsp)                                  ``datetime.timedelta`` (may be negative, e.g. -00:00:00.5)
DATETIME(fsp)                              naive ``datetime.datetime``
TIMESTAMP(fsp)                             aware ``datetime.datetime`` in UTC
zero / invalid DATE, DATETIME, TIMESTAMP   ``str`` as MySQL prints it: ``'0000-00-00'``,
                                           ``'0000-00-00 00:00:00'`` (+ ``.000`` for fsp 3), ``'2021-00-00'``
YEAR                                       ``int`` (0 for the zero year)
CHAR / VARCHAR / *TEXT                     ``str`` (column charset; MariaDB ``latin1`` is cp1252)
BINARY / VARBINARY / *BLOB                 ``bytes``
ENUM                                       ``str`` (the member)
SET                                        ``frozenset[str]``
JSON                                       parsed Python value; from MariaDB (JSON is a LONGTEXT alias, the
                                           binlog cannot tell) the JSON text as ``str``; normalize() parses
                                           ``str``/``bytes``, so workload JSON is always an object or array
GEOMETRY / POINT                           ``bytes``: 4-byte little-endian SRID + WKB, as stored
UUID, INET6 (MariaDB data types)           ``bytes`` (16): the binlog carries them as BINARY(16), in
                                           text order; the workload writes ``uuid.UUID`` / ``IPv6Address``
NULL                                       ``None``
=========================================  ===============================================================

BINARY(n) (and so UUID and INET6): the binlog row image drops trailing zero bytes (an all-zero UUID is
stored with length 0); the decoder pads the value back to ``n`` bytes, and :func:`normalize` pads too.

:func:`normalize` maps any of the accepted representations (decoder output, pymysql ``SELECT`` output,
workload values) of one column type to one canonical comparable form, e.g. FLOAT rounded to 6 significant
digits, CHAR with trailing spaces removed, BINARY(n) padded with zero bytes, SET text ``'a,b'`` ->
``frozenset``, TIMESTAMP naive -> UTC aware, UUID bytes/text -> ``uuid.UUID``, JSON text -> parsed. Compare
``normalize(decoded, t) == normalize(written, t)``.

Model details
-------------
* Tables: ``all_types`` (``id`` INT primary key, ``rev``, one column per type, :data:`ALL_TYPES_COLUMNS`),
  ``composite_pk`` (primary key ``tenant, k, seq``) and ``no_pk`` (no key at all; ``a`` is unique by
  construction and used as the logical key).
* Every UPDATE also sets ``rev = rev + 1``, so no UPDATE leaves a row unchanged (MariaDB logs no row image
  for an unchanged row).
* :attr:`WorkloadResult.changes` lists row changes in binlog order: transactions in commit order; within a
  multi-row INSERT the VALUES order; within an UPDATE/DELETE ascending key order (the order InnoDB visits
  them; ``no_pk`` statements touch one row).
* DDL (ALTER TABLE ADD/DROP COLUMN) runs between transactions every ``ddl_every`` transactions; a row dict
  always has exactly the columns the table had at that moment, in table order. Column names are never
  reused, so :attr:`WorkloadResult.column_types` maps every name that ever existed to its SQL type.
* The workload sets ``time_zone = '+00:00'`` and ``NAMES utf8mb4`` on the connection it is given.
"""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import random
import re
import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ALL_TYPES_COLUMNS",
    "ALL_TYPES_DDL",
    "COMPOSITE_PK_DDL",
    "NO_PK_DDL",
    "TABLES",
    "RowChange",
    "TypeInfo",
    "Workload",
    "WorkloadResult",
    "all_types_ddl",
    "create_schema",
    "extreme_rows",
    "fetch_rows",
    "normalize",
    "normalize_row",
    "parse_type",
    "random_row",
    "random_value",
    "to_sql_param",
]

UTC = dt.UTC

ENUM_MEMBERS = ("small", "medium", "large", "ünïcödé ✓")
ENUM_BIG_MEMBERS = tuple(f"e{i:03d}" for i in range(300))  # > 255 members: 2-byte storage
SET_MEMBERS = ("a", "b", "c", "d", "ß")
SET_BIG_MEMBERS = tuple(f"s{i:02d}" for i in range(64))  # 64 members: 8-byte storage


def _enum(members: Iterable[str]) -> str:
    return ",".join("'" + m.replace("'", "''") + "'" for m in members)


#: (name, SQL type) of every typed column of ``all_types`` (``id`` and ``rev`` come first).
ALL_TYPES_COLUMNS: tuple[tuple[str, str], ...] = (
    ("c_tinyint", "TINYINT"),
    ("c_tinyint_u", "TINYINT UNSIGNED"),
    ("c_smallint", "SMALLINT"),
    ("c_smallint_u", "SMALLINT UNSIGNED"),
    ("c_mediumint", "MEDIUMINT"),
    ("c_mediumint_u", "MEDIUMINT UNSIGNED"),
    ("c_int", "INT"),
    ("c_int_u", "INT UNSIGNED"),
    ("c_bigint", "BIGINT"),
    ("c_bigint_u", "BIGINT UNSIGNED"),
    ("c_int_nn", "INT NOT NULL"),
    ("c_dec_65_30", "DECIMAL(65,30)"),
    ("c_dec_20_10", "DECIMAL(20,10)"),
    ("c_dec_10_2", "DECIMAL(10,2)"),
    ("c_dec_5_0", "DECIMAL(5,0)"),
    ("c_dec_4_4", "DECIMAL(4,4)"),
    ("c_float", "FLOAT"),
    ("c_double", "DOUBLE"),
    ("c_bit1", "BIT(1)"),
    ("c_bit13", "BIT(13)"),
    ("c_bit64", "BIT(64)"),
    ("c_date", "DATE"),
    *((f"c_time{n}", f"TIME({n})") for n in range(7)),
    *((f"c_datetime{n}", f"DATETIME({n})") for n in range(7)),
    *((f"c_timestamp{n}", f"TIMESTAMP({n})") for n in range(7)),
    ("c_year", "YEAR"),
    ("c_char", "CHAR(255)"),
    ("c_char_latin1", "CHAR(10) CHARACTER SET latin1"),
    ("c_varchar_small", "VARCHAR(20)"),
    ("c_varchar", "VARCHAR(300)"),
    ("c_varchar_latin1", "VARCHAR(40) CHARACTER SET latin1"),
    ("c_binary", "BINARY(16)"),
    ("c_varbinary", "VARBINARY(300)"),
    ("c_tinytext", "TINYTEXT"),
    ("c_text", "TEXT"),
    ("c_text_latin1", "TEXT CHARACTER SET latin1"),
    ("c_mediumtext", "MEDIUMTEXT"),
    ("c_longtext", "LONGTEXT"),
    ("c_tinyblob", "TINYBLOB"),
    ("c_blob", "BLOB"),
    ("c_mediumblob", "MEDIUMBLOB"),
    ("c_longblob", "LONGBLOB"),
    ("c_enum", f"ENUM({_enum(ENUM_MEMBERS)})"),
    ("c_enum_big", f"ENUM({_enum(ENUM_BIG_MEMBERS)})"),
    ("c_set", f"SET({_enum(SET_MEMBERS)})"),
    ("c_set_big", f"SET({_enum(SET_BIG_MEMBERS)})"),
    ("c_json", "JSON"),
    ("c_geometry", "GEOMETRY"),
    ("c_point", "POINT"),
    ("c_uuid", "UUID"),
    ("c_inet6", "INET6"),
)

_ALL_TYPES_KEY = (("id", "INT NOT NULL"), ("rev", "INT UNSIGNED NOT NULL"))

#: Oracle MySQL's ``all_types``: MariaDB's data types UUID and INET6 replaced by VECTOR (MySQL 9). The workload
#: writes them in a column order shuffled by its seed (the table map's signedness and charset lists are counted
#: over the columns in order: a YEAR or VECTOR column before the others is where miscounts show).
MYSQL_ALL_TYPES_COLUMNS: tuple[tuple[str, str], ...] = (
    *(c for c in ALL_TYPES_COLUMNS if c[1] not in ("UUID", "INET6")),
    ("c_vector", "VECTOR(3)"),
    ("c_vector_big", "VECTOR(300)"),
)


def _column_ddl(name: str, sql_type: str) -> str:
    null = "" if "NOT NULL" in sql_type.upper() else " NULL DEFAULT NULL"
    return f"`{name}` {sql_type}{null}"


def all_types_ddl(table: str = "all_types", columns: Sequence[tuple[str, str]] = ALL_TYPES_COLUMNS) -> str:
    """CREATE TABLE for the all-types table under another name (or with other typed columns)."""
    cols = [_column_ddl(n, t) for n, t in (*_ALL_TYPES_KEY, *columns)]
    return (
        f"CREATE TABLE `{table}` (\n  " + ",\n  ".join(cols) + ",\n  PRIMARY KEY (`id`)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    )


ALL_TYPES_DDL = all_types_ddl()

_COMPOSITE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("tenant", "SMALLINT UNSIGNED NOT NULL"),
    ("k", "VARCHAR(32) NOT NULL"),
    ("seq", "BIGINT NOT NULL"),
    ("rev", "INT UNSIGNED NOT NULL"),
    ("payload", "JSON"),
    ("amount", "DECIMAL(12,4)"),
    ("flag", "BIT(1)"),
    ("created", "DATETIME(6)"),
)
COMPOSITE_PK_DDL = (
    "CREATE TABLE `composite_pk` (\n  "
    + ",\n  ".join(_column_ddl(n, t) for n, t in _COMPOSITE_COLUMNS)
    + ",\n  PRIMARY KEY (`tenant`, `k`, `seq`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
)

_NO_PK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("a", "INT NOT NULL"),
    ("rev", "INT UNSIGNED NOT NULL"),
    ("b", "VARCHAR(20)"),
    ("c", "DOUBLE"),
    ("d", "DATETIME(3)"),
    ("e", "TEXT"),
)
NO_PK_DDL = (
    "CREATE TABLE `no_pk` (\n  "
    + ",\n  ".join(_column_ddl(n, t) for n, t in _NO_PK_COLUMNS)
    + "\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
)

#: table -> (CREATE TABLE, initial columns, logical key columns)
TABLES: dict[str, tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "all_types": (ALL_TYPES_DDL, (*_ALL_TYPES_KEY, *ALL_TYPES_COLUMNS), ("id",)),
    "composite_pk": (COMPOSITE_PK_DDL, _COMPOSITE_COLUMNS, ("tenant", "k", "seq")),
    "no_pk": (NO_PK_DDL, _NO_PK_COLUMNS, ("a",)),
}


def server_flavor(conn: Any) -> str:
    """"mariadb" or "mysql": the flavour of the server behind a pymysql connection."""
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
    return "mariadb" if "mariadb" in version.lower() else "mysql"


def tables_for(
    flavor: str, seed: int = 0, omit_types: Iterable[str] = ()
) -> dict[str, tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]]:
    """:data:`TABLES` for a server flavour: on MySQL, ``all_types`` has MySQL's types in a seeded random order.
    ``omit_types``: base types (``"vector"``) left out of ``all_types`` on MySQL."""
    if flavor == "mariadb":
        return TABLES
    omit = set(omit_types)
    columns = [c for c in MYSQL_ALL_TYPES_COLUMNS if parse_type(c[1]).base not in omit]
    random.Random(f"columns-{seed}").shuffle(columns)
    tables = dict(TABLES)
    tables["all_types"] = (all_types_ddl("all_types", columns), (*_ALL_TYPES_KEY, *columns), ("id",))
    return tables


def create_schema(
    conn: Any, db: str, tables: Iterable[str] = TABLES, *, seed: int = 0, omit_types: Iterable[str] = ()
) -> None:
    """Create the workload tables in ``db`` (which must exist) on a pymysql connection (the server's flavour
    chooses the all-types columns: :func:`tables_for`)."""
    defs = tables_for(server_flavor(conn), seed, omit_types)
    with conn.cursor() as cur:
        for table in tables:
            cur.execute(f"USE `{db}`")
            cur.execute(defs[table][0])


# --- type parsing ---


@dataclass(frozen=True)
class TypeInfo:
    """A parsed SQL column type: ``base`` lower-case (``int``, ``decimal``, ``varchar``...), ``args`` inside
    the parentheses (numbers as int, ENUM/SET members as str), ``unsigned``, ``charset`` (``latin1`` or
    ``utf8mb4``), ``nullable``."""

    base: str
    args: tuple[Any, ...]
    unsigned: bool
    charset: str
    nullable: bool

    @property
    def fsp(self) -> int:
        return int(self.args[0]) if self.args else 0

    @property
    def length(self) -> int:
        return int(self.args[0]) if self.args else 1


_TYPE_RE = re.compile(r"^\s*(\w+)\s*(?:\((.*?)\))?(.*)$", re.S)
_MEMBER_RE = re.compile(r"'((?:[^']|'')*)'")


def parse_type(sql_type: str) -> TypeInfo:
    """Parse ``"DECIMAL(10,2)"``, ``"INT UNSIGNED NOT NULL"``, ``"SET('a','b')"``, ``"CHAR(10) CHARACTER SET
    latin1"`` ... (case-insensitive)."""
    if sql_type.lstrip().lower().startswith(("enum", "set")):
        base, _, rest = sql_type.strip().partition("(")
        body, _, tail = rest.rpartition(")")
        members = tuple(m.replace("''", "'") for m in _MEMBER_RE.findall(body))
        return TypeInfo(base.lower().strip(), members, False, "utf8mb4", "not null" not in tail.lower())
    match = _TYPE_RE.match(sql_type)
    if match is None:
        raise ValueError(f"cannot parse SQL type {sql_type!r}")
    base = match.group(1).lower()
    args: tuple[Any, ...] = ()
    if match.group(2):
        args = tuple(int(a) for a in match.group(2).split(","))
    tail = match.group(3).lower()
    charset = "latin1" if "latin1" in tail else "utf8mb4"
    if base in ("binary", "varbinary") or base.endswith("blob"):
        charset = "binary"
    aliases = {
        "integer": "int",
        "bool": "tinyint",
        "boolean": "tinyint",
        "numeric": "decimal",
        "real": "double",
    }
    base = aliases.get(base, base)
    return TypeInfo(base, args, "unsigned" in tail, charset, "not null" not in tail)


_INT_BYTES = {"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 8}
_TEXT_MAX = {"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}
_BLOB_MAX = {"tinyblob": 255, "blob": 65535, "mediumblob": 16777215, "longblob": 4294967295}
_DEC_CTX = decimal.Context(prec=200)


def _int_range(info: TypeInfo) -> tuple[int, int]:
    bits = 8 * _INT_BYTES[info.base]
    if info.unsigned:
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


# --- normalization ---

_DATE_RE = re.compile(r"^(-?\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{0,6}))?)?$")
_TIME_RE = re.compile(r"^(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d{0,6}))?$")


def _date_text(value: str, with_time: bool, fsp: int) -> Any:
    """Parse MySQL date/datetime text; valid dates become objects, zero/invalid ones canonical text."""
    m = _DATE_RE.match(value.strip())
    if m is None:
        return value
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hour, minute, second = (int(m.group(i) or 0) for i in (4, 5, 6))
    micro = int((m.group(7) or "").ljust(6, "0"))
    try:
        if not with_time:
            return dt.date(year, month, day)
        return dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        pass
    text = f"{year:04d}-{month:02d}-{day:02d}"
    if with_time:
        text += f" {hour:02d}:{minute:02d}:{second:02d}"
        if fsp:
            text += "." + f"{micro:06d}"[:fsp]
    return text


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"expected bytes, got {type(value).__name__}")


def normalize(value: Any, column_type: str | TypeInfo) -> Any:
    """Canonical comparable form of ``value`` for a column of ``column_type`` (see the module docstring)."""
    if value is None:
        return None
    info = parse_type(column_type) if isinstance(column_type, str) else column_type
    base = info.base
    if base in _INT_BYTES or base == "year":
        return int(value)
    if base == "decimal":
        scale = info.args[1] if len(info.args) > 1 else 0
        return decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-scale), context=_DEC_CTX)
    if base == "float":
        f32 = struct.unpack("<f", struct.pack("<f", float(value)))[0]
        return float(format(f32, ".6g"))
    if base == "double":
        return float(format(float(value), ".15g"))
    if base == "bit":
        if isinstance(value, bytes | bytearray):
            return int.from_bytes(value, "big")
        return int(value)
    if base == "date":
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        return _date_text(str(value), False, 0)
    if base in ("datetime", "timestamp"):
        if isinstance(value, str | bytes):
            value = _date_text(value.decode() if isinstance(value, bytes) else value, True, info.fsp)
            if isinstance(value, str):
                return value
        if isinstance(value, int | float) and base == "timestamp":
            if value == 0:
                return _date_text("0000-00-00 00:00:00", True, info.fsp)
            value = dt.datetime.fromtimestamp(value, UTC)
        if not isinstance(value, dt.datetime):
            raise TypeError(f"expected datetime for {base}, got {type(value).__name__}")
        if base == "timestamp":
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if value.tzinfo is None else value
    if base == "time":
        if isinstance(value, dt.timedelta):
            return value
        if isinstance(value, dt.time):
            return dt.timedelta(
                hours=value.hour, minutes=value.minute, seconds=value.second, microseconds=value.microsecond
            )
        m = _TIME_RE.match(str(value))
        if m is None:
            raise ValueError(f"not a TIME value: {value!r}")
        delta = dt.timedelta(
            hours=int(m.group(2)),
            minutes=int(m.group(3)),
            seconds=int(m.group(4)),
            microseconds=int((m.group(5) or "").ljust(6, "0")),
        )
        return -delta if m.group(1) else delta
    if base in ("char", "varchar") or base in _TEXT_MAX:
        text = value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)
        return text.rstrip(" ") if base == "char" else text
    if base == "binary":
        raw = _as_bytes(value)
        return raw.ljust(info.length, b"\0")
    if base == "varbinary" or base in _BLOB_MAX or base in ("geometry", "point", "linestring", "polygon"):
        return _as_bytes(value)
    if base == "enum":
        if isinstance(value, int):
            return info.args[value - 1] if value > 0 else ""
        return value.decode("utf-8") if isinstance(value, bytes) else str(value)
    if base == "set":
        if isinstance(value, int):
            return frozenset(m for i, m in enumerate(info.args) if value >> i & 1)
        if isinstance(value, bytes | str):
            text = value.decode("utf-8") if isinstance(value, bytes) else value
            return frozenset(text.split(",")) if text else frozenset()
        return frozenset(value)
    if base == "vector":
        # the float32 values, -0.0 kept apart from 0.0 (as (value, sign) pairs)
        if isinstance(value, bytes | bytearray | memoryview):
            data = bytes(value)
            floats = struct.unpack(f"<{len(data) // 4}f", data)
        elif isinstance(value, str):
            floats = tuple(float(x) for x in json.loads(value))
        else:
            floats = tuple(struct.unpack("<f", struct.pack("<f", float(x)))[0] for x in value)
        return tuple((f, math.copysign(1.0, f)) for f in floats)
    if base == "json":
        if isinstance(value, bytes | bytearray | str):
            return json.loads(value)
        return value
    if base == "uuid":
        if isinstance(value, uuid.UUID):
            return value
        if isinstance(value, bytes | bytearray) and len(value) <= 16:
            return uuid.UUID(bytes=bytes(value).ljust(16, b"\0"))
        return uuid.UUID(value.decode() if isinstance(value, bytes) else str(value))
    if base == "inet6":
        if isinstance(value, bytes | bytearray) and len(value) <= 16:
            return ipaddress.IPv6Address(bytes(value).ljust(16, b"\0"))
        if isinstance(value, ipaddress.IPv4Address):
            return ipaddress.IPv6Address(f"::ffff:{value}")
        text = value.decode() if isinstance(value, bytes) else str(value)
        if "." in text and ":" not in text:
            text = f"::ffff:{text}"
        return ipaddress.IPv6Address(text)
    raise ValueError(f"normalize() does not know column type {column_type!r}")


def normalize_row(row: Mapping[str, Any], types: Mapping[str, str]) -> dict[str, Any]:
    """``normalize`` every value of a row dict; ``types`` maps column name -> SQL type."""
    return {name: normalize(value, types[name]) for name, value in row.items()}


# --- SQL parameters ---


def _time_text(value: dt.timedelta) -> str:
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    seconds, frac = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}.{frac:06d}"


def to_sql_param(value: Any, column_type: str | TypeInfo) -> Any:
    """A pymysql parameter that stores ``value`` (workload form) exactly in a column of ``column_type``."""
    if value is None:
        return None
    info = parse_type(column_type) if isinstance(column_type, str) else column_type
    if info.base == "json":
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dt.timedelta):
        return _time_text(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, frozenset | set):
        return ",".join(sorted(value))
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, uuid.UUID | ipaddress.IPv6Address | ipaddress.IPv4Address):
        return str(value)
    if info.base == "vector":
        return struct.pack(f"<{len(value)}f", *value)
    return value


# --- random values ---

_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,;:!?'\"\\%/()[]{}<>=+*&^$#@~`|"
_LATIN1_EXTRA = "äöüÄÖÜßéèêçñáíóúÿ¡¿°±µ§©®«»½¼¾ÆØÅæøå"
_UNICODE_EXTRA = "日本語中文한국어Ωπ∑€₿—…→✓😀🎉🐍👍🏽𝄞"  # includes 4-byte characters


def _random_text(
    rng: random.Random, max_chars: int, max_bytes: int, charset: str, *, char_col: bool = False
) -> str:
    alphabet = _ASCII + (_LATIN1_EXTRA if charset == "latin1" else _LATIN1_EXTRA + _UNICODE_EXTRA)
    n = rng.choice((0, rng.randint(0, min(max_chars, 12)), rng.randint(0, max_chars)))
    chars = [rng.choice(alphabet) for _ in range(n)]
    text = "".join(chars)
    encoding = "latin-1" if charset == "latin1" else "utf-8"
    while len(text.encode(encoding)) > max_bytes:
        text = text[: len(text) // 2]
    if char_col:
        text = text.rstrip(" ")  # CHAR drops trailing spaces on retrieval and in the binlog
    return text


def _fill_text(rng: random.Random, n_bytes: int, charset: str) -> str:
    """A text of exactly ``n_bytes`` encoded bytes (multi-byte characters mixed in)."""
    pieces: list[str] = []
    size = 0
    multi = "é" if charset == "latin1" else "é✓😀"
    encoding = "latin-1" if charset == "latin1" else "utf-8"
    while size < n_bytes:
        ch = rng.choice(multi) if rng.random() < 0.1 else rng.choice(_ASCII[:62])
        width = len(ch.encode(encoding))
        if size + width > n_bytes:
            ch, width = "x", 1
        pieces.append(ch)
        size += width
    return "".join(pieces)


def _wkb_point(x: float, y: float) -> bytes:
    return b"\x01" + struct.pack("<Idd", 1, x, y)


def _random_geometry(rng: random.Random, point_only: bool) -> bytes:
    srid = rng.choice((0, 0, 4326))

    def coord() -> float:
        return rng.randint(-180_000, 180_000) / 1000

    kind = 1 if point_only else rng.choice((1, 2, 3))
    if kind == 1:
        wkb = _wkb_point(coord(), coord())
    elif kind == 2:
        n = rng.randint(2, 5)
        wkb = (
            b"\x01"
            + struct.pack("<II", 2, n)
            + b"".join(struct.pack("<dd", coord(), coord()) for _ in range(n))
        )
    else:
        x, y, d = coord(), coord(), rng.randint(1, 1000) / 100
        ring = [(x, y), (x + d, y), (x + d, y + d), (x, y + d), (x, y)]
        wkb = b"\x01" + struct.pack("<III", 3, 1, len(ring)) + b"".join(struct.pack("<dd", *p) for p in ring)
    return struct.pack("<I", srid) + wkb


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kinds = ("int", "str", "bool", "null", "float") if depth >= 3 else ("int", "str", "bool", "list", "dict")
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice((0, -1, rng.randint(-(2**63), 2**64 - 1), rng.randint(-1000, 1000)))
    if kind == "str":
        return _random_text(rng, 20, 80, "utf8mb4")
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "float":
        return rng.randint(-(10**6), 10**6) / 64
    if kind == "list":
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {
        f"k{i}_{_random_text(rng, 4, 16, 'utf8mb4')}": _random_json(rng, depth + 1)
        for i in range(rng.randint(0, 4))
    }


def _random_decimal(rng: random.Random, precision: int, scale: int) -> decimal.Decimal:
    int_digits = precision - scale
    ip = rng.choice((0, rng.randint(0, 10**int_digits - 1), 10**int_digits - 1)) if int_digits else 0
    fp = rng.randint(0, 10**scale - 1) if scale else 0
    sign = "-" if rng.random() < 0.4 and (ip or fp) else ""
    text = f"{sign}{ip}" + (f".{fp:0{scale}d}" if scale else "")
    return decimal.Decimal(text)


_DATETIME_MIN = dt.datetime(1000, 1, 1)
_DATETIME_MAX = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
_TIMESTAMP_MIN = dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
_TIMESTAMP_MAX = dt.datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC)
_TIME_MAX_US = (838 * 3600 + 59 * 60 + 59) * 1_000_000


def _truncate_us(micro: int, fsp: int) -> int:
    unit: int = 10 ** (6 - fsp)
    return micro - micro % unit


def _random_time(rng: random.Random, fsp: int) -> dt.timedelta:
    choice = rng.random()
    if choice < 0.08 and fsp:
        return dt.timedelta(microseconds=-_truncate_us(500_000, fsp))  # -00:00:00.5
    if choice < 0.15:
        return dt.timedelta(0)
    micros = (
        rng.randint(-_TIME_MAX_US, _TIME_MAX_US)
        if choice < 0.6
        else rng.randint(-86_400_000_000, 86_400_000_000)
    )
    seconds = micros // 1_000_000
    frac = _truncate_us(rng.randint(0, 999_999), fsp)
    total = seconds * 1_000_000 + (frac if seconds >= 0 else -frac)
    return dt.timedelta(microseconds=total)


def _random_datetime(rng: random.Random, lo: dt.datetime, hi: dt.datetime, fsp: int) -> dt.datetime:
    span = int((hi - lo).total_seconds())
    value = lo + dt.timedelta(seconds=rng.randint(0, span))
    return value.replace(microsecond=_truncate_us(rng.randint(0, 999_999), fsp))


def random_value(rng: random.Random, column_type: str | TypeInfo, *, large: bool = True) -> Any:
    """A random non-NULL value (workload form) for a column of ``column_type``.

    ``large`` allows occasional values above 64 KiB in MEDIUM/LONG text and blob columns.
    """
    info = parse_type(column_type) if isinstance(column_type, str) else column_type
    base = info.base
    if base in _INT_BYTES:
        lo, hi = _int_range(info)
        return rng.choice(
            (
                lo,
                hi,
                0,
                max(lo, -1),
                1,
                rng.randint(lo, hi),
                rng.randint(lo, hi),
                rng.randint(-100, 100) if lo else rng.randint(0, 200),
            )
        )
    if base == "decimal":
        return _random_decimal(rng, info.args[0], info.args[1] if len(info.args) > 1 else 0)
    if base == "float":
        return float(rng.randint(-999, 999) * 2.0 ** rng.randint(-4, 20))
    if base == "double":
        return float(format(rng.uniform(-1e9, 1e9) * 10.0 ** rng.randint(-200, 200), ".15g"))
    if base == "bit":
        bits = info.length
        return rng.choice((0, 2**bits - 1, rng.getrandbits(bits)))
    if base == "date":
        r = rng.random()
        if r < 0.03:
            return "0000-00-00"
        if r < 0.05:
            return f"{rng.randint(1000, 9999):04d}-00-00"
        return _random_datetime(rng, _DATETIME_MIN, _DATETIME_MAX, 0).date()
    if base == "time":
        return _random_time(rng, info.fsp)
    if base == "datetime":
        if rng.random() < 0.03:
            return "0000-00-00 00:00:00"
        return _random_datetime(rng, _DATETIME_MIN, _DATETIME_MAX, info.fsp)
    if base == "timestamp":
        if rng.random() < 0.03:
            return "0000-00-00 00:00:00"
        return _random_datetime(rng, _TIMESTAMP_MIN, _TIMESTAMP_MAX.replace(microsecond=0), info.fsp)
    if base == "year":
        return rng.choice((0, 1901, 2155, rng.randint(1901, 2155), rng.randint(1901, 2155)))
    if base in ("char", "varchar"):
        max_bytes = 4 * info.length if info.charset != "latin1" else info.length
        return _random_text(rng, info.length, max_bytes, info.charset, char_col=base == "char")
    if base in _TEXT_MAX:
        if large and base in ("mediumtext", "longtext") and rng.random() < 0.04:
            return _fill_text(rng, 70_000, info.charset)
        limit = min(_TEXT_MAX[base], 3000)
        return _random_text(rng, rng.choice((20, limit)), _TEXT_MAX[base], info.charset)
    if base in ("binary", "varbinary"):
        return rng.randbytes(rng.choice((0, rng.randint(0, info.length), info.length)))
    if base in _BLOB_MAX:
        if large and base in ("mediumblob", "longblob") and rng.random() < 0.04:
            return rng.randbytes(70_000)
        return rng.randbytes(rng.randint(0, min(_BLOB_MAX[base], 3000)))
    if base == "enum":
        return rng.choice(info.args)
    if base == "set":
        return frozenset(m for m in info.args if rng.random() < 0.3)
    if base == "json":
        # top level always an object or array: a str would be ambiguous with JSON text in normalize()
        doc = _random_json(rng)
        return doc if isinstance(doc, dict | list) else [doc]
    if base in ("geometry", "point"):
        return _random_geometry(rng, point_only=base == "point")
    if base == "vector":
        return [
            rng.choice((0.0, -0.0, 1.5, -2.25, 3.4e38, -1e-38, float(rng.randint(-99, 99)) / 8))
            for _ in range(info.args[0] if info.args else 2048)
        ]
    if base == "uuid":
        # MariaDB rejects some non-RFC variant/version combinations: write RFC 4122 UUIDs v1, v4, v7
        bits = rng.getrandbits(128) & ~(0xF000 << 64) & ~(0xC000 << 48)
        return uuid.UUID(int=bits | rng.choice((1, 4, 7)) << 76 | 0x8000 << 48)
    if base == "inet6":
        if rng.random() < 0.3:
            return ipaddress.IPv6Address(f"::ffff:{ipaddress.IPv4Address(rng.getrandbits(32))}")
        return ipaddress.IPv6Address(rng.getrandbits(128))
    raise ValueError(f"random_value() does not know column type {column_type!r}")


def random_row(
    rng: random.Random,
    columns: Sequence[tuple[str, str]] = ALL_TYPES_COLUMNS,
    *,
    null_probability: float = 0.1,
    large: bool = True,
) -> dict[str, Any]:
    """Random values for ``columns`` (default: the typed columns of ``all_types``, without ``id``/``rev``);
    nullable columns are NULL with ``null_probability``."""
    row: dict[str, Any] = {}
    for name, sql_type in columns:
        info = parse_type(sql_type)
        if info.nullable and rng.random() < null_probability:
            row[name] = None
        else:
            row[name] = random_value(rng, info, large=large)
    return row


def _extreme_value(info: TypeInfo, which: Literal["min", "max"], flavor: str = "mariadb") -> Any:
    base, hi = info.base, which == "max"
    if base in _INT_BYTES:
        return _int_range(info)[1 if hi else 0]
    if base == "decimal":
        p, s = info.args[0], (info.args[1] if len(info.args) > 1 else 0)
        text = "9" * (p - s) + ("." + "9" * s if s else "")
        return decimal.Decimal(text if hi else "-" + text)
    if base == "float":
        return 1e38 if hi else -1e38
    if base == "double":
        return 1.5e308 if hi else -1.5e308
    if base == "bit":
        return 2**info.length - 1 if hi else 0
    if base == "date":
        return dt.date(9999, 12, 31) if hi else dt.date(1000, 1, 1)
    if base == "time":
        # MariaDB's TIME reaches 838:59:59.999999, MySQL's stops at 838:59:59.000000
        micros = _TIME_MAX_US + (_truncate_us(999_999, info.fsp) if flavor == "mariadb" else 0)
        return dt.timedelta(microseconds=micros if hi else -micros)
    if base == "datetime":
        return _DATETIME_MAX.replace(microsecond=_truncate_us(999_999, info.fsp)) if hi else _DATETIME_MIN
    if base == "timestamp":
        return _TIMESTAMP_MAX.replace(microsecond=_truncate_us(999_999, info.fsp)) if hi else _TIMESTAMP_MIN
    if base == "year":
        return 2155 if hi else 1901
    if base in ("char", "varchar"):
        if not hi:
            return ""
        return ("ÿ" if info.charset == "latin1" else "😀") * info.length
    if base in ("binary", "varbinary"):
        return b"\xff" * info.length if hi else b""
    if base in _TEXT_MAX:
        return _fill_text(random.Random(1), min(_TEXT_MAX[base], 70_000), info.charset) if hi else ""
    if base in _BLOB_MAX:
        return b"\xfe" * min(_BLOB_MAX[base], 70_000) if hi else b""
    if base == "enum":
        return info.args[-1] if hi else info.args[0]
    if base == "set":
        return frozenset(info.args) if hi else frozenset()
    if base == "json":
        return {"nested": [[[{"deep": "✓" * 50, "n": 2**64 - 1}]]], "list": list(range(100))} if hi else {}
    if base == "geometry":
        return (
            _random_geometry(random.Random(7), point_only=False)
            if hi
            else struct.pack("<I", 0) + _wkb_point(0, 0)
        )
    if base == "point":
        return (
            struct.pack("<I", 4326) + _wkb_point(-180.0, 90.0)
            if hi
            else struct.pack("<I", 0) + _wkb_point(0, 0)
        )
    if base == "vector":
        return [3.4028234663852886e38] * info.args[0] if hi else [-0.0] * info.args[0]
    if base == "uuid":
        return uuid.UUID(int=2**128 - 1) if hi else uuid.UUID(int=0)
    if base == "inet6":
        return ipaddress.IPv6Address(2**128 - 1) if hi else ipaddress.IPv6Address(0)
    raise ValueError(f"no extreme value for {info}")


def extreme_rows(
    columns: Sequence[tuple[str, str]] = ALL_TYPES_COLUMNS, flavor: str = "mariadb"
) -> list[dict[str, Any]]:
    """Four rows: every column at its minimum, at its maximum, all NULL (NOT NULL columns at their minimum),
    and zero dates / zero timestamps with everything else NULL."""
    rows: list[dict[str, Any]] = []
    infos = [(name, parse_type(t)) for name, t in columns]
    rows.append({name: _extreme_value(info, "min", flavor) for name, info in infos})
    rows.append({name: _extreme_value(info, "max", flavor) for name, info in infos})
    rows.append({name: None if info.nullable else _extreme_value(info, "min", flavor) for name, info in infos})
    zero: dict[str, Any] = {}
    for name, info in infos:
        if info.base == "date":
            zero[name] = "0000-00-00"
        elif info.base in ("datetime", "timestamp"):
            zero[name] = "0000-00-00 00:00:00"
        elif info.base == "year":
            zero[name] = 0
        elif info.base == "time":
            zero[name] = dt.timedelta(0)
        else:
            zero[name] = None if info.nullable else _extreme_value(info, "min", flavor)
    rows.append(zero)
    return rows


# --- the workload ---


@dataclass(frozen=True)
class RowChange:
    """One row change as the binlog carries it: ``before`` is None for inserts, ``after`` None for deletes."""

    txn: int
    table: str
    kind: Literal["insert", "update", "delete"]
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass
class _Table:
    name: str
    columns: list[tuple[str, str]]
    key: tuple[str, ...]
    rows: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)

    def types(self) -> dict[str, str]:
        return dict(self.columns)


@dataclass
class WorkloadResult:
    """What a :class:`Workload` wrote (cumulative over ``run`` calls)."""

    db: str
    changes: list[RowChange] = field(default_factory=list)
    ddl: list[str] = field(default_factory=list)
    transactions: int = 0
    #: table -> column name -> SQL type, for every column that ever existed
    column_types: dict[str, dict[str, str]] = field(default_factory=dict)
    #: table -> current columns (name, SQL type) in table order
    columns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: table -> logical key columns
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: table -> key tuple -> row dict: the expected final table contents
    final: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = field(default_factory=dict)

    def written(self, table: str) -> list[dict[str, Any]]:
        """After-images of the inserts and updates of ``table``, in binlog order."""
        return [c.after for c in self.changes if c.table == table and c.after is not None]

    def expected_contents(self, table: str) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The normalized expected contents of ``table``: key -> normalized row."""
        types = self.column_types[table]
        return {key: normalize_row(row, types) for key, row in self.final[table].items()}

    def server_contents(self, conn: Any, table: str) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The normalized contents of ``table`` read from the server over ``conn`` (pymysql)."""
        types = self.column_types[table]
        out: dict[tuple[Any, ...], dict[str, Any]] = {}
        for row in fetch_rows(conn, self.db, table):
            norm = normalize_row(row, types)
            out[tuple(norm[k] for k in self.keys[table])] = norm
        return out

    def check_server(self, conn: Any) -> list[str]:
        """Differences between the model and the server's tables (empty list: they are equal)."""
        problems: list[str] = []
        for table in self.final:
            expected = self.expected_contents(table)
            actual = self.server_contents(conn, table)
            for key in sorted(set(expected) | set(actual), key=repr):
                exp, act = expected.get(key), actual.get(key)
                if exp is None or act is None:
                    problems.append(f"{table}{key}: expected {'absent' if exp is None else 'present'} row")
                elif exp != act:
                    diff = {
                        c: (exp.get(c), act.get(c)) for c in set(exp) | set(act) if exp.get(c) != act.get(c)
                    }
                    problems.append(f"{table}{key}: (expected, actual) {diff!r}"[:2000])
                elif list(exp) != list(act):
                    problems.append(f"{table}{key}: column order {list(exp)} != {list(act)}")
        return problems


def fetch_rows(conn: Any, db: str, table: str) -> list[dict[str, Any]]:
    """``SELECT *`` as a list of dicts (column order kept), with session time_zone '+00:00'."""
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(
            "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (db, table),
        )
        # pymysql decodes a VECTOR column as text (and fails): read its bytes
        select = ", ".join(
            f"CAST(`{name}` AS BINARY) AS `{name}`" if str(kind).lower() == "vector" else f"`{name}`"
            for name, kind in cur.fetchall()
        )
        cur.execute(f"SELECT {select} FROM `{db}`.`{table}`")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


_EXTRA_TYPES: tuple[tuple[str, Any], ...] = (
    ("INT", 7),
    ("VARCHAR(20)", "dflt ✓"),
    ("DATETIME(3)", dt.datetime(2001, 2, 3, 4, 5, 6, 789000)),
    ("DECIMAL(10,2)", decimal.Decimal("12.50")),
    ("BIGINT UNSIGNED", 2**64 - 1),
    ("TIMESTAMP(6)", dt.datetime(2020, 2, 29, 12, 0, 0, 1, tzinfo=UTC)),
)


class Workload:
    """A seeded mix of multi-row INSERTs, UPDATEs, DELETEs and ALTER TABLE ADD/DROP COLUMN.

    ``run`` may be called several times; the model (and :attr:`result`) carries over, so a test can write,
    check the binlog, and write more. Everything written is a function of ``seed``.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        tables: Sequence[str] = ("all_types", "composite_pk", "no_pk"),
        null_probability: float = 0.1,
        large_values: bool = True,
        omit_types: Iterable[str] = (),
    ) -> None:
        self.rng = random.Random(seed)
        self.omit_types = tuple(omit_types)
        self.seed = seed
        self.flavor = "mariadb"  # set from the server by create_schema
        self.table_names = tuple(tables)
        self.null_probability = null_probability
        self.large_values = large_values
        self.result: WorkloadResult | None = None
        self._tables: dict[str, _Table] = {}
        self._counter = 0
        self._ddl_step = 0
        self._used_keys: dict[int, set[tuple[Any, ...]]] = {}  # txn -> keys updated/deleted in it

    # -- setup ---

    def create_schema(self, conn: Any, db: str) -> WorkloadResult:
        """Create the tables in ``db`` and start the model."""
        _prepare(conn)
        self.flavor = server_flavor(conn)
        create_schema(conn, db, self.table_names, seed=self.seed, omit_types=self.omit_types)
        self.result = WorkloadResult(db=db)
        defs = tables_for(self.flavor, self.seed, self.omit_types)
        for name in self.table_names:
            _ddl, columns, key = defs[name]
            table = _Table(name, list(columns), key)
            self._tables[name] = table
            self.result.column_types[name] = dict(columns)
            self.result.columns[name] = list(columns)
            self.result.keys[name] = key
            self.result.final[name] = table.rows
            self.result.ddl.append(_ddl)
        return self.result

    # -- running ---

    def run(
        self,
        conn: Any,
        db: str,
        n_transactions: int = 20,
        statements_per_txn: int = 5,
        *,
        ddl_every: int = 7,
        insert_extremes: bool = True,
        max_rows_per_statement: int = 3,
    ) -> WorkloadResult:
        """Write ``n_transactions`` transactions of ``statements_per_txn`` statements each into ``db``.

        The schema is created on the first call. ``insert_extremes`` makes the first transaction insert
        :func:`extreme_rows` into ``all_types``. ``ddl_every`` runs one ALTER TABLE after every that many
        transactions (0: never).
        """
        if self.result is None:
            self.create_schema(conn, db)
        elif self.result.db != db:
            raise ValueError(f"this workload writes to {self.result.db!r}, not {db!r}")
        result = self.result
        assert result is not None
        _prepare(conn)
        with conn.cursor() as cur:
            cur.execute(f"USE `{db}`")
        for i in range(n_transactions):
            txn = result.transactions
            pending: list[tuple[str, list[Any], list[RowChange]]] = []
            if insert_extremes and txn == 0 and "all_types" in self._tables:
                table = self._tables["all_types"]
                rows = []
                typed = [c for c in table.columns if c[0] not in ("id", "rev")]
                for extreme in extreme_rows(typed, self.flavor):
                    rows.append(self._with_key(table, extreme))
                pending.append(self._insert_sql(table, rows, txn))
            for _ in range(statements_per_txn):
                pending.append(self._statement(txn, max_rows_per_statement))
            conn.begin()
            try:
                with conn.cursor() as cur:
                    for sql, params, _changes in pending:
                        cur.execute(sql, params)
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
            for _sql, _params, changes in pending:
                self._apply(changes)
                result.changes.extend(changes)
            result.transactions += 1
            if ddl_every and (i + 1) % ddl_every == 0:
                self._ddl(conn, result)
        return result

    # -- statements ---

    def _next(self) -> int:
        self._counter += 1
        return self._counter

    def _with_key(self, table: _Table, values: dict[str, Any]) -> dict[str, Any]:
        n = self._next()
        row: dict[str, Any] = {}
        for name, _sql_type in table.columns:
            if name == "id":
                row[name] = n
            elif name == "rev":
                row[name] = 0
            elif name == "a" and table.name == "no_pk":
                row[name] = n if self.rng.random() < 0.5 else -n
            elif name == "tenant":
                row[name] = self.rng.choice((0, 1, 2, 65535))
            elif name == "k":
                row[name] = f"k{n:06d}"
            elif name == "seq":
                row[name] = self.rng.choice((n, -n, 2**63 - n, -(2**63) + n))
            else:
                row[name] = values.get(name)
        return row

    def _random_values(self, columns: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return random_row(self.rng, columns, null_probability=self.null_probability, large=self.large_values)

    def _statement(self, txn: int, max_rows: int) -> tuple[str, list[Any], list[RowChange]]:
        table = self._tables[self.rng.choice(self.table_names)]
        kind = self.rng.choices(("insert", "update", "delete"), weights=(5, 3, 2))[0]
        live = sorted(table.rows, key=repr)
        if kind != "insert" and len(live) < 2:
            kind = "insert"
        data_cols = [c for c in table.columns if c[0] not in (*table.key, "id", "rev")]
        if kind == "insert":
            rows = [
                self._with_key(table, self._random_values(data_cols))
                for _ in range(self.rng.randint(1, max_rows))
            ]
            return self._insert_sql(table, rows, txn)
        # rows touched earlier in this transaction are not in the model yet: pick from the committed
        # model only, and never twice within one transaction
        used = self._used_keys.setdefault(txn, set())
        candidates = [k for k in live if k not in used]
        if not candidates:
            rows = [self._with_key(table, self._random_values(data_cols))]
            return self._insert_sql(table, rows, txn)
        n = 1 if table.name == "no_pk" else self.rng.randint(1, min(max_rows, len(candidates)))
        keys = sorted(self.rng.sample(candidates, n))
        used.update(keys)
        where, where_params = _where(table.key, keys)
        if kind == "delete":
            changes = [RowChange(txn, table.name, "delete", dict(table.rows[k]), None) for k in keys]
            return f"DELETE FROM `{table.name}` WHERE {where}", where_params, changes
        chosen = self.rng.sample(data_cols, self.rng.randint(1, min(6, len(data_cols))))
        new_values = self._random_values(chosen)
        sets = ", ".join(f"`{name}` = %s" for name, _ in chosen) + ", `rev` = `rev` + 1"
        params = [to_sql_param(new_values[name], sql_type) for name, sql_type in chosen]
        changes = []
        for k in keys:
            before = table.rows[k]
            after = dict(before)
            after.update(new_values)
            after["rev"] = before["rev"] + 1
            changes.append(RowChange(txn, table.name, "update", dict(before), after))
        return f"UPDATE `{table.name}` SET {sets} WHERE {where}", params + where_params, changes

    def _insert_sql(
        self, table: _Table, rows: list[dict[str, Any]], txn: int
    ) -> tuple[str, list[Any], list[RowChange]]:
        names = [name for name, _ in table.columns]
        placeholders = "(" + ", ".join(["%s"] * len(names)) + ")"
        sql = (
            f"INSERT INTO `{table.name}` ("
            + ", ".join(f"`{n}`" for n in names)
            + ") VALUES "
            + ", ".join([placeholders] * len(rows))
        )
        params = [to_sql_param(row[name], sql_type) for row in rows for name, sql_type in table.columns]
        changes = [RowChange(txn, table.name, "insert", None, dict(row)) for row in rows]
        return sql, params, changes

    def _apply(self, changes: list[RowChange]) -> None:
        for change in changes:
            table = self._tables[change.table]
            if change.before is not None:
                del table.rows[tuple(change.before[k] for k in table.key)]
            if change.after is not None:
                table.rows[tuple(change.after[k] for k in table.key)] = dict(change.after)

    # -- DDL ---

    def _ddl(self, conn: Any, result: WorkloadResult) -> None:
        actions = ("add_all_types", "add_composite", "drop_all_types", "add_no_pk", "drop_composite")
        for _ in range(len(actions)):
            action = actions[self._ddl_step % len(actions)]
            self._ddl_step += 1
            statement = self._ddl_statement(action, conn)
            if statement is not None:
                break
        else:
            return
        sql, table, apply = statement
        with conn.cursor() as cur:
            cur.execute(sql)
        apply()
        result.ddl.append(sql)
        result.columns[table.name] = list(table.columns)
        result.column_types[table.name].update(table.columns)

    def _ddl_statement(self, action: str, conn: Any) -> tuple[str, _Table, Any] | None:
        table_name = {"all": "all_types", "com": "composite_pk", "no_": "no_pk"}[action.split("_", 1)[1][:3]]
        table = self._tables.get(table_name)
        if table is None:
            return None
        if action.startswith("drop"):
            prefix = "extra_" if table_name == "all_types" else "note_"
            extras = [name for name, _ in table.columns if name.startswith(prefix)]
            if not extras:
                return None
            victim = extras[0]

            def drop() -> None:
                table.columns = [c for c in table.columns if c[0] != victim]
                for row in table.rows.values():
                    del row[victim]

            return f"ALTER TABLE `{table_name}` DROP COLUMN `{victim}`", table, drop
        n = self._next()
        if table_name == "all_types":
            sql_type, default = _EXTRA_TYPES[n % len(_EXTRA_TYPES)]
            name = f"extra_{n}"
            default_sql = conn.escape(to_sql_param(default, sql_type))
            after = self.rng.choice((None, "rev", "c_int"))
            position = f" AFTER `{after}`" if after and any(c[0] == after for c in table.columns) else ""
            sql = (
                f"ALTER TABLE `{table_name}` ADD COLUMN `{name}` {sql_type} NULL DEFAULT {default_sql}"
                f"{position}"
            )
        else:
            sql_type, default, position = ("VARCHAR(30)", None, "")
            name = f"note_{n}"
            sql = f"ALTER TABLE `{table_name}` ADD COLUMN `{name}` {sql_type} NULL"
            after = None

        def add() -> None:
            index = len(table.columns)
            if position and after is not None:
                index = [c[0] for c in table.columns].index(after) + 1
            table.columns.insert(index, (name, sql_type))
            for key, row in list(table.rows.items()):
                items = list(row.items())
                items.insert(index, (name, default))
                table.rows[key] = dict(items)

        return sql, table, add


def _where(key: tuple[str, ...], keys: list[tuple[Any, ...]]) -> tuple[str, list[Any]]:
    if len(key) == 1:
        return f"`{key[0]}` IN (" + ", ".join(["%s"] * len(keys)) + ")", [k[0] for k in keys]
    tuple_sql = "(" + ", ".join(["%s"] * len(key)) + ")"
    cols = "(" + ", ".join(f"`{c}`" for c in key) + ")"
    return f"{cols} IN (" + ", ".join([tuple_sql] * len(keys)) + ")", [v for k in keys for v in k]


def _prepare(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("SET NAMES utf8mb4")
        cur.execute("SET time_zone = '+00:00'")
        # MySQL's default sql_mode refuses zero dates (NO_ZERO_DATE, NO_ZERO_IN_DATE); MariaDB's accepts them
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'")
