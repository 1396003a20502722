"""``mybinlog verify``: compare MySQL/MariaDB tables with their ClickHouse replica.

For every table both sides are read once, in whatever order the servers return rows (the replica while the source
streams, so both servers work at once), and each row is reduced to a 64-bit hash (BLAKE2b) of its canonical form:
:func:`~._types.canonical` maps a MySQL value and ClickHouse's text of the same stored value to one string (here
with inlined fast paths for the usual value forms, see :func:`fast_canonical`). Rows are spread over *buckets* by
their key (or, for a table without a key, by their exact columns), and each side keeps per bucket the number of
rows and the sum of their hashes modulo 2**64: order-independent, duplicate-sensitive, and memory for the buckets
only, never for the rows. The table is equal when every bucket is equal on both sides.

When buckets differ, both sides are read again keeping only the rows of (at most ``max_differences``) differing
buckets, which are matched by key: a key only in MySQL is *missing* in the replica, a key only in ClickHouse is
*extra*, a key held by both with other values is *changed* (with the differing columns), a key ClickHouse returns
more than once after ``FINAL`` is a *duplicate*. Tables without a usable key are compared as multisets of rows.
Tables with FLOAT/DOUBLE columns are confirmed row by row with a tolerance (old ClickHouse versions parse floats
inexactly), drilling further until a real difference is found or every differing bucket was looked at. The
second MySQL read runs in the same ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` as the first, so the source side
is identical; the replica may have moved if replication is running.

MySQL is read through an unbuffered (streaming) cursor with session ``time_zone = '+00:00'``. ClickHouse is read
with ``SELECT ... FROM t FINAL WHERE <alive predicate>``; a large table in slices
``cityHash64(toString(tuple(<key>))) % n = i`` of about ``page_rows`` rows, so memory stays bounded.
See docs/verify.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime as dt
import decimal
import hashlib
import json
import logging
import math
import operator
import sys
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from ..cli import _common as _cli_common
from ..errors import ConfigurationError, MybinlogError
from ..source._dsn import DSN

if TYPE_CHECKING:
    from ._ddl import ColumnDef, TableDef
    from ._source import SourceConnection
    from ._target import Capabilities, Target

__all__ = [
    "ColumnDifference",
    "RowDifference",
    "TableComparer",
    "TableResult",
    "VerifyReport",
    "add_verify_arguments",
    "bucket_count",
    "fast_canonical",
    "row_hash",
    "run_verify",
    "verify",
]

logger = logging.getLogger("mybinlog.verify")

DEFAULT_MAX_DIFFERENCES = 10
DEFAULT_PAGE_ROWS = 200_000
_MASK64 = (1 << 64) - 1
_ROWS_PER_BUCKET = 64
_MIN_BUCKETS = 16
_MAX_BUCKETS = 1 << 16
_SOURCE_BATCH = 5_000
_ER_BAD_DB = 1049  # MySQL: unknown database

Canon = Callable[[Any], "str | None"]
"""One column's canonical form: a value (MySQL driver value or ClickHouse text) -> comparable text, None = NULL."""

DifferenceKind = Literal["missing", "extra", "changed", "duplicate"]
TableStatus = Literal["equal", "different", "missing", "extra", "error"]


# ---------------------------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class ColumnDifference:
    """One column of a row held by both sides with different values (canonical text; None = NULL)."""

    column: str
    source: str | None
    replica: str | None


@dataclass(frozen=True)
class RowDifference:
    """One differing row.

    ``kind``: ``missing`` (in MySQL, not in the replica), ``extra`` (in the replica only), ``changed`` (both hold
    the key; ``columns`` lists what differs) or ``duplicate`` (the replica returns the key ``count`` times after
    FINAL). ``key`` maps the key columns to their canonical values; for tables without a key it holds the whole
    row and ``count`` says how many more copies one side has.
    """

    kind: DifferenceKind
    key: tuple[tuple[str, str | None], ...]
    columns: tuple[ColumnDifference, ...] = ()
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "key": dict(self.key), "count": self.count}
        if self.columns:
            out["columns"] = [dataclasses.asdict(c) for c in self.columns]
        return out


@dataclass
class TableResult:
    """The comparison of one table. ``status``: ``equal``, ``different``, ``missing`` (no such table in the
    replica), ``extra`` (a replica table with no source table), ``error`` (see ``error``)."""

    source_table: str  # "db.table" in MySQL ("" for an extra replica table)
    replica_table: str  # "db.table" in ClickHouse
    status: TableStatus = "equal"
    source_rows: int | None = None
    replica_rows: int | None = None
    source_checksum: str | None = None  # 16 hex digits: sum of row hashes mod 2**64
    replica_checksum: str | None = None
    key: tuple[str, ...] = ()  # the columns rows were matched by; () = compared as a multiset of rows
    replica_duplicates: int = 0  # replica rows after FINAL beyond the number of distinct keys
    schema: list[str] = field(default_factory=list)  # columns missing/extra in the replica (make it different)
    notes: list[str] = field(default_factory=list)  # type mismatches and other remarks (informational)
    differences: list[RowDifference] = field(default_factory=list)
    min_differences: int = 0  # a lower bound on the number of differing keys (rows without a key)
    complete: bool = True  # whether ``differences`` lists every difference
    error: str | None = None
    seconds: float = 0.0

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["key"] = list(self.key)
        out["differences"] = [d.to_dict() for d in self.differences]
        out["seconds"] = round(self.seconds, 3)
        return out


@dataclass
class VerifyReport:
    """What :func:`verify` found. ``equal`` is True when every table is equal; ``exit_code`` is 0 (equal),
    1 (differences) or 2 (an error prevented a complete comparison)."""

    source: str  # user@host:port (never the password)
    replica: str  # the target's description (never the password)
    tables: list[TableResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def equal(self) -> bool:
        return all(t.status == "equal" for t in self.tables)

    @property
    def errors(self) -> list[TableResult]:
        return [t for t in self.tables if t.status == "error"]

    @property
    def exit_code(self) -> int:
        if self.errors:
            return 2
        return 0 if self.equal else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "replica": self.replica,
            "equal": self.equal,
            "tables": [t.to_dict() for t in self.tables],
            "seconds": round(self.seconds, 3),
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        data = self.to_dict()
        text = json.dumps(data, indent=indent, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # replica text that is not UTF-8 (surrogate-escaped bytes): escape everything
            text = json.dumps(data, indent=indent)
        return text

    def render_text(self) -> str:
        lines = [f"source  {self.source}", f"replica {self.replica}", ""]
        width = max([len(_table_label(t)) for t in self.tables] + [10])
        for t in self.tables:
            lines.extend(_render_table(t, width))
        n_diff = sum(1 for t in self.tables if t.status in ("different", "missing", "extra"))
        n_err = len(self.errors)
        rows = sum(t.source_rows or 0 for t in self.tables)
        if not self.tables:
            summary = "no tables to compare"
        elif n_diff == 0 and n_err == 0:
            summary = f"all {len(self.tables)} tables equal"
        else:
            summary = f"{n_diff} of {len(self.tables)} tables differ"
            if n_err:
                summary += f", {n_err} could not be compared"
        lines.append("")
        lines.append(f"{summary} ({rows} source rows, {self.seconds:.1f} s)")
        return "\n".join(lines) + "\n"


def _table_label(t: TableResult) -> str:
    return t.source_table or f"({t.replica_table})"


def _show(value: str | None) -> str:
    if value is None:
        return "NULL"
    if len(value) > 60:
        value = value[:57] + "..."
    return repr(value)


def _show_key(key: Iterable[tuple[str, str | None]]) -> str:
    return ", ".join(f"{name}={_show(value)}" for name, value in key)


_KIND_LABEL = {
    "missing": "missing in replica",
    "extra": "extra in replica",
    "changed": "changed",
    "duplicate": "duplicate in replica",
}


def _render_table(t: TableResult, width: int) -> list[str]:
    label = _table_label(t).ljust(width)
    if t.status == "equal":
        return [f"{label}  equal      {t.source_rows} rows  checksum {t.source_checksum}"]
    if t.status == "error":
        return [f"{label}  ERROR      {t.error}"]
    if t.status == "missing":
        rows = f" (source {t.source_rows} rows)" if t.source_rows is not None else ""
        return [f"{label}  MISSING    not in the replica as {t.replica_table}{rows}"]
    if t.status == "extra":
        rows = f" ({t.replica_rows} rows)" if t.replica_rows is not None else ""
        return [f"{label}  EXTRA      {t.replica_table} exists only in the replica{rows}"]
    lines = [f"{label}  DIFFERENT  source {t.source_rows} rows, replica {t.replica_rows} rows"]
    indent = "    "
    lines.extend(f"{indent}schema: {text}" for text in t.schema)
    if t.replica_duplicates:
        lines.append(
            f"{indent}{t.replica_duplicates} replica row(s) share a key with another row after FINAL "
            "(duplicates the engine did not collapse)"
        )
    if not t.key and t.min_differences:
        lines.append(f"{indent}(no primary key: rows compared as a multiset)")
    for d in t.differences:
        head = f"{indent}{_KIND_LABEL[d.kind]:<21} {_show_key(d.key)}"
        if d.kind == "duplicate" or (not t.key and d.count > 1):
            head += f"  ({d.count} rows)"
        lines.append(head)
        lines.extend(f"{indent}    {c.column}: source {_show(c.source)}, replica {_show(c.replica)}" for c in d.columns)
    if not t.complete:
        lines.append(
            f"{indent}... more differences: at least {t.min_differences} in total (raise --max-differences to see more)"
        )
    lines.extend(f"{indent}note: {text}" for text in t.notes)
    return lines


# ---------------------------------------------------------------------------------------------------------------
# the comparison engine (pure: rows in, buckets and differences out)


def row_hash(row: tuple[str | None, ...]) -> int:
    """64-bit hash of a canonical row: BLAKE2b over an unambiguous encoding (``repr`` of the tuple), so
    ``('a\\tb', None)`` and ``('a', '\\tb')`` or ``'NULL'`` and None never collide by construction."""
    return int.from_bytes(hashlib.blake2b(repr(row).encode("utf-8"), digest_size=8).digest(), "little")


def bucket_count(expected_rows: int) -> int:
    """Buckets for a table of about ``expected_rows`` rows: a power of two near rows/64, from 16 to 65536."""
    want = max(1, expected_rows // _ROWS_PER_BUCKET)
    return max(_MIN_BUCKETS, min(_MAX_BUCKETS, 1 << math.ceil(math.log2(want)) if want > 1 else 1))


Match = Callable[["str | None", "str | None"], bool]
"""Whether two canonical values of one column are the same value (equality, or a tolerance for floats)."""


class TableComparer:
    """Order-independent comparison of two row sets of one table (see the module docstring).

    ``columns``: column names; ``key``: indexes of the key columns (empty: multiset comparison);
    ``source_canon`` / ``replica_canon``: per column, the function from that side's raw value to canonical text.
    ``matchers``: per column, a :data:`Match` for columns whose canonical text may differ for the same value
    (floats read back from old ClickHouse versions), None for exact columns. Buckets of a multiset comparison are
    chosen by the exact columns only, so a row whose float differs in the last bit still meets its counterpart.

    Feed rows with :meth:`add_source` / :meth:`add_replica`; when :meth:`differing_buckets` is not empty, call
    :meth:`start_drill` with the buckets to inspect, feed both sides again, and read :meth:`differences`.
    """

    def __init__(
        self,
        columns: Sequence[str],
        key: Sequence[int],
        source_canon: Sequence[Canon],
        replica_canon: Sequence[Canon],
        *,
        matchers: Sequence[Match | None] | None = None,
        buckets: int = 1024,
    ) -> None:
        if matchers is None:
            matchers = [None] * len(columns)
        if not len(columns) == len(source_canon) == len(replica_canon) == len(matchers):
            raise ValueError("columns, source_canon, replica_canon and matchers must have the same length")
        if buckets < 1:
            raise ValueError("buckets must be >= 1")
        self.columns = tuple(columns)
        self.key = tuple(key)
        self.buckets = buckets
        self.matchers = tuple(matchers)
        self.approximate = any(m is not None for m in self.matchers)
        self._canon = (_row_function(source_canon), _row_function(replica_canon))
        self.counts = ([0] * buckets, [0] * buckets)
        self.sums = ([0] * buckets, [0] * buckets)
        self._drill: frozenset[int] | None = None
        self._held: tuple[dict[Any, list[Row]], dict[Any, list[Row]]] = ({}, {})
        # what places a row in a bucket: its key, else (multiset) its exact columns, else its hash
        self._key_of = _getter(self.key) if self.key else None
        exact = [i for i, m in enumerate(self.matchers) if m is None]
        self._bucket_of = self._key_of or (_getter(exact) if self.approximate else None)

    # -- feeding --------------------------------------------------------------------------------------------

    def add_source(self, rows: Iterable[Sequence[Any]]) -> None:
        """Rows of the source (values as the MySQL driver returns them, in ``columns`` order)."""
        self._add(0, rows)

    def add_replica(self, rows: Iterable[Sequence[Any]]) -> None:
        """Rows of the replica (ClickHouse text, in ``columns`` order)."""
        self._add(1, rows)

    def _add(self, side: int, rows: Iterable[Sequence[Any]]) -> None:
        canon_row = self._canon[side]
        n = self.buckets
        bucket_of = self._bucket_of
        blake2b = hashlib.blake2b
        from_bytes = int.from_bytes
        if self._drill is None:
            counts = self.counts[side]
            sums = self.sums[side]
            for raw in rows:
                row = canon_row(raw)
                h = from_bytes(blake2b(repr(row).encode(), digest_size=8).digest(), "little")  # = row_hash(row)
                b = h % n if bucket_of is None else hash(bucket_of(row)) % n
                counts[b] += 1
                sums[b] += h
            return
        drill = self._drill
        held = self._held[side]
        key_of = self._key_of
        for raw in rows:
            row = canon_row(raw)
            b = row_hash(row) % n if bucket_of is None else hash(bucket_of(row)) % n
            if b in drill:
                held.setdefault(row if key_of is None else key_of(row), []).append(row)

    # -- pass 1 results -------------------------------------------------------------------------------------

    @property
    def source_rows(self) -> int:
        return sum(self.counts[0])

    @property
    def replica_rows(self) -> int:
        return sum(self.counts[1])

    @property
    def source_checksum(self) -> int:
        """Sum of the source's row hashes modulo 2**64."""
        return sum(self.sums[0]) & _MASK64

    @property
    def replica_checksum(self) -> int:
        return sum(self.sums[1]) & _MASK64

    def differing_buckets(self) -> list[int]:
        """Buckets whose row count or checksum differs. Without matchers each holds at least one difference;
        with matchers a bucket may differ only by float rounding (confirm with a drill)."""
        c0, c1 = self.counts
        s0, s1 = self.sums
        return [b for b in range(self.buckets) if c0[b] != c1[b] or (s0[b] - s1[b]) & _MASK64]

    # -- pass 2 ---------------------------------------------------------------------------------------------

    def start_drill(self, buckets: Collection[int]) -> None:
        """Switch to collecting the rows of ``buckets`` (feed both sides again after this)."""
        self._drill = frozenset(buckets)
        self._held = ({}, {})

    @property
    def held_rows(self) -> int:
        return sum(len(v) for side in self._held for v in side.values())

    def differences(self) -> list[RowDifference]:
        """Every difference among the collected rows, ordered by key."""
        if self._key_of is None:
            return self._multiset_differences()
        src, rep = self._held
        key_names = [self.columns[i] for i in self.key]
        out: list[RowDifference] = []
        for k in sorted(src.keys() | rep.keys(), key=_sort_key):
            s = src.get(k, [])
            r = rep.get(k, [])
            named = tuple(zip(key_names, k, strict=True))
            if not r:
                out.append(RowDifference("missing", named, count=len(s)))
            elif not s:
                out.append(RowDifference("extra", named, count=len(r)))
            elif len(r) > 1:
                out.append(RowDifference("duplicate", named, count=len(r)))
            elif s[0] != r[0]:
                cols = tuple(
                    ColumnDifference(self.columns[i], a, b)
                    for i, (a, b) in enumerate(zip(s[0], r[0], strict=True))
                    if not self._same(i, a, b)
                )
                if cols:
                    out.append(RowDifference("changed", named, cols))
        return out

    def _same(self, index: int, a: str | None, b: str | None) -> bool:
        if a == b:
            return True
        match = self.matchers[index]
        return match is not None and match(a, b)

    def _rows_match(self, a: Row, b: Row) -> bool:
        return all(self._same(i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)))

    def _multiset_differences(self) -> list[RowDifference]:
        src, rep = self._held
        balance = Counter({row: len(v) for row, v in src.items()})
        balance.subtract({row: len(v) for row, v in rep.items()})
        missing = sorted((row for row, n in balance.items() if n > 0), key=_sort_key)
        extra = sorted((row for row, n in balance.items() if n < 0), key=_sort_key)
        if self.approximate:  # pair rows that differ only within the float tolerance
            for row in missing:
                for other in extra:
                    while balance[row] > 0 and balance[other] < 0 and self._rows_match(row, other):
                        balance[row] -= 1
                        balance[other] += 1
        return [
            RowDifference(
                "missing" if balance[row] > 0 else "extra",
                tuple(zip(self.columns, row, strict=True)),
                count=abs(balance[row]),
            )
            for row in sorted((r for r in (*missing, *extra) if balance[r]), key=_sort_key)
        ]


Row = tuple["str | None", ...]


def _getter(indexes: Sequence[int]) -> Callable[[Row], tuple[str | None, ...]]:
    """``row -> tuple of the values at indexes`` (always a tuple, also for one index)."""
    if len(indexes) == 1:
        one = indexes[0]
        return lambda row: (row[one],)
    if not indexes:
        return lambda row: ()
    return cast("Callable[[Row], tuple[str | None, ...]]", operator.itemgetter(*indexes))


def _sort_key(key: tuple[str | None, ...]) -> tuple[tuple[int, int, str], ...]:
    """Numbers in numeric order, then text; NULL first."""
    parts: list[tuple[int, int, str]] = []
    for v in key:
        if v is None:
            parts.append((0, 0, ""))
            continue
        try:
            parts.append((1, int(v), ""))
        except ValueError:
            parts.append((2, 0, v))
    return tuple(parts)


# ---------------------------------------------------------------------------------------------------------------
# reading ClickHouse


def _q(text: str) -> str:
    from ._target import quote_string

    return quote_string(text)


def _qi(name: str) -> str:
    from ._target import quote_ident

    return quote_ident(name)


@dataclass
class _ReplicaTable:
    name: str
    engine: str
    columns: dict[str, str]  # name -> ClickHouse type, in table order, without the meta columns
    meta: set[str]  # meta columns present (_sign, _version, _is_deleted)


async def _replica_tables(target: Target, database: str) -> dict[str, str]:
    """name -> engine of the replica database's tables (views and materialized-view internals left out)."""
    rows = await target.query(f"SELECT name, engine FROM system.tables WHERE database = {_q(database)}")
    out: dict[str, str] = {}
    for name, engine in rows:
        if name is None or name.startswith(".inner") or (engine or "").endswith("View"):
            continue
        out[name] = engine or ""
    return out


async def _describe_replica(target: Target, database: str, name: str, engine: str) -> _ReplicaTable:
    from ._chschema import META_COLUMNS

    rows = await target.query(
        f"SELECT name, type FROM system.columns WHERE database = {_q(database)} AND table = {_q(name)}"
    )
    columns: dict[str, str] = {}
    meta: set[str] = set()
    for col, typ in rows:
        if col is None:
            continue
        if col in META_COLUMNS:
            meta.add(col)
        else:
            columns[col] = typ or ""
    return _ReplicaTable(name, engine, columns, meta)


def _engine_mode(table: _ReplicaTable, requested: str) -> str:
    """The replication engine mode of a replica table (``auto``: from its engine and meta columns)."""
    if requested != "auto":
        return requested
    if "Collapsing" in table.engine:
        return "collapsing"
    if "_is_deleted" in table.meta:
        return "replacing_is_deleted"
    return "replacing"


def _from_clause(database: str, table: _ReplicaTable, mode: str) -> str:
    from ._chschema import alive_predicate

    sql = f"{_qi(database)}.{_qi(table.name)}"
    engine = table.engine
    if engine.endswith("MergeTree") and engine not in ("MergeTree", "ReplicatedMergeTree"):
        sql += " FINAL"
    if table.meta:
        sql += f" WHERE {alive_predicate(mode)}"
    return sql


# ---------------------------------------------------------------------------------------------------------------
# the orchestration


# Fast canonical forms. ``canonical()`` (in _types) is general: any value form the encoder accepts, any text
# ClickHouse prints, and costs a few microseconds per value. Verify calls it for every value of both sides, so for
# the one form a value usually has (an ``int`` from the driver, ClickHouse's own text of a ``DateTime64(3)``...)
# an expression applies the same rule with one or two builtin calls, and everything else (NULL, zero dates, values
# outside ClickHouse's range, unusual types) goes to ``canonical``. The result is always canonical's
# (tests/unit/test_verify.py checks it on the workload's values of every type). Expressions are templates over
# ``{x}`` (the value) and ``{f}`` (the canonical function); a table's row function is generated from them, so an
# integer or text column costs no function call at all.

_CALL = "{f}({x})"


def fast_canonical(
    col: ColumnDef, caps: Capabilities, *, side: Literal["source", "clickhouse"], replica_type: str | None = None
) -> Canon:
    """A function with the result of :func:`~._types.canonical` for one column, fast for the usual value forms.

    ClickHouse-side fast paths are used only when the replica column has the type mybinlog creates
    (``replica_type``; without it, or for another type, every value goes through ``canonical``).
    """
    template, slow = _column_template(col, caps, side=side, replica_type=replica_type)
    func = _compile_row([template], [slow], single=True)
    _TEMPLATES[func] = (template, slow)
    return func


_TEMPLATES: weakref.WeakKeyDictionary[Callable[..., Any], tuple[str, Canon]] = weakref.WeakKeyDictionary()


def _column_template(
    col: ColumnDef, caps: Capabilities, *, side: Literal["source", "clickhouse"], replica_type: str | None
) -> tuple[str, Canon]:
    from ._types import TypeMappingError, canonical, column_spec

    slow = canonical(col, caps, side=side)
    spec = column_spec(col, caps)
    name = col.name
    where = "MySQL" if side == "source" else "ClickHouse"

    def guarded(value: Any) -> str | None:
        try:
            return slow(value)
        except MybinlogError:
            raise
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise TypeMappingError(
                f"column `{name}`: cannot compare the {where} value {value!r:.80} ({type(value).__name__}): {exc}"
            ) from exc

    if side == "source":
        template = _source_template(spec)
    elif replica_type is not None and _unwrap_nullable(replica_type) == spec.ch.replace(" ", ""):
        template = _clickhouse_template(spec)
    else:
        template = _CALL
    return template, guarded


def _unwrap_nullable(ch_type: str) -> str:
    t = ch_type.replace(" ", "")
    return t[9:-1] if t.startswith("Nullable(") and t.endswith(")") else t


def _source_template(spec: Any) -> str:
    """The expression for a value as asyncmy/pymysql returns it (see ``_types._encoder`` for the rules)."""
    kind = spec.kind
    if kind == "int":
        if spec.unsigned:
            return "(str({x}) if type({x}) is int and {x} >= 0 else {f}({x}))"
        return "(str({x}) if type({x}) is int else {f}({x}))"
    if kind == "text" and spec.char:
        return "({x}.rstrip(' ') if type({x}) is str else {f}({x}))"
    if kind in ("text", "enum"):
        return "({x} if type({x}) is str else {f}({x}))"
    if kind == "float64":
        return "(('0' if {x} == 0.0 else format({x}, '.15g')) if type({x}) is float else {f}({x}))"
    if kind == "decimal":
        # the driver's Decimal of a DECIMAL(p, s) has exactly s digits; anything else (and zero: no "-0") -> slow
        scale = int(spec.scale)
        if scale == 0:
            return "(format({x}, 'f') if type({x}) is Decimal and {x} and {x}.as_tuple()[2] == 0 else {f}({x}))"
        return (
            "(format({x}, 'f') if type({x}) is Decimal and {x} and "
            f"{{x}}.as_tuple()[2] == {-scale} else {{f}}({{x}}))"
        )
    if kind == "date":
        if spec.lo is None:
            return "({x}.isoformat() if type({x}) is date else {f}({x}))"
        lo, hi = spec.lo, spec.hi
        return (
            "({x}.isoformat() if type({x}) is date and "
            f"date({lo.year}, {lo.month}, {lo.day}) <= {{x}} <= date({hi.year}, {hi.month}, {hi.day}) "
            "else {f}({x}))"
        )
    if kind in ("datetime", "timestamp"):
        fsp = int(spec.fsp)
        if fsp == 0:
            text = "str({x})[:19]"
        else:
            text = f"(str({{x}})[:{20 + fsp}] if {{x}}.microsecond else str({{x}}) + '.{'0' * fsp}')"
        if spec.lo is None:
            return f"({text} if type({{x}}) is datetime and {{x}}.tzinfo is None else {{f}}({{x}}))"
        lo, hi = spec.lo, spec.hi
        lo_expr = f"datetime({lo.year}, {lo.month}, {lo.day}, {lo.hour}, {lo.minute}, {lo.second}, {lo.microsecond})"
        hi_expr = f"datetime({hi.year}, {hi.month}, {hi.day}, {hi.hour}, {hi.minute}, {hi.second}, {hi.microsecond})"
        return (
            f"({text} if type({{x}}) is datetime and {{x}}.tzinfo is None and {lo_expr} <= {{x}} <= {hi_expr} "
            "else {f}({x}))"
        )
    if kind == "time":
        return (
            "(str(({x}.days * 86400 + {x}.seconds) * 1000000 + {x}.microseconds) "
            "if type({x}) is timedelta else {f}({x}))"
        )
    return _CALL


def _clickhouse_template(spec: Any) -> str:
    """The expression for ClickHouse's text (``str``, or None for NULL) of a column of the type mybinlog creates."""
    kind = spec.kind
    if kind in ("int", "year", "bit", "time", "enum", "set", "json") or (kind == "text" and not spec.char):
        return "{x}"  # printed canonically (integers in decimal; text, members and JSON text as stored)
    if kind == "text":
        return "({x}.rstrip(' ') if {x} is not None else None)"
    if kind == "float64":
        return "(('0' if float({x}) == 0.0 else format(float({x}), '.15g')) if {x} is not None else None)"
    if kind == "date":
        return "({x} if {x} is not None and len({x}) == 10 and {x}[:4] != '0000' else {f}({x}))"
    if kind in ("datetime", "timestamp"):
        size = 19 if spec.fsp == 0 else 20 + spec.fsp
        return f"({{x}} if {{x}} is not None and len({{x}}) == {size} and {{x}}[:4] != '0000' else {{f}}({{x}}))"
    if kind == "decimal":
        return f"_decimal_text({{x}}, {int(spec.scale)}, {{f}})"
    return _CALL


def _decimal_text(t: str | None, scale: int, slow: Canon) -> str | None:
    """ClickHouse's text of a Decimal(p, scale) -> exactly ``scale`` digits (new servers drop trailing zeros)."""
    if t is None or "e" in t or "E" in t:
        return slow(t)
    dot = t.find(".")
    if dot < 0:
        out = t + "." + "0" * scale if scale else t
    elif 0 < len(t) - dot - 1 <= scale:
        out = t + "0" * (scale - (len(t) - dot - 1))
    else:
        return slow(t)
    if out[:1] == "-" and not out.strip("-0."):  # negative zero
        return slow(t)
    return out


_GENERATED_GLOBALS: dict[str, Any] = {
    "Decimal": decimal.Decimal,
    "date": dt.date,
    "datetime": dt.datetime,
    "timedelta": dt.timedelta,
    "_decimal_text": _decimal_text,
}


def _compile_row(templates: Sequence[str], slow: Sequence[Canon], *, single: bool = False) -> Callable[[Any], Any]:
    """Generate ``row -> tuple of canonical values`` (or, ``single``, ``value -> canonical value``) from the
    templates. Only the fixed templates and numbers reach the generated source, never names or values."""
    params = ", ".join(f"f{i}=f{i}" for i in range(len(slow)))
    exprs = [t.format(x=f"x{i}", f=f"f{i}") for i, t in enumerate(templates)]
    if single:
        body = f"def canon(x0, {params}):\n    return {exprs[0]}\n"
    else:
        names = ", ".join(f"x{i}" for i in range(len(templates)))
        body = f"def canon(row, {params}):\n    {names}, = row\n    return ({', '.join(exprs)},)\n"
    namespace: dict[str, Any] = {f"f{i}": f for i, f in enumerate(slow)}
    exec(compile(body, "<mybinlog.verify canonical row>", "exec"), dict(_GENERATED_GLOBALS), namespace)
    func: Callable[[Any], Any] = namespace["canon"]
    return func


def _row_function(canons: Sequence[Canon]) -> Callable[[Sequence[Any]], Row]:
    """One function for a whole row: the columns' templates inlined when they come from :func:`fast_canonical`."""
    templates: list[str] = []
    slow: list[Canon] = []
    for canon in canons:
        known = _TEMPLATES.get(canon)
        if known is None:
            templates.append(_CALL)
            slow.append(canon)
        else:
            templates.append(known[0])
            slow.append(known[1])
    if not canons:
        return lambda row: ()
    return _compile_row(templates, slow)


@dataclass
class _Plan:
    """How one table is compared: the common columns, the key, the canonical functions."""

    definition: TableDef
    columns: list[str]  # common columns, MySQL names, MySQL order
    replica_columns: list[str]  # the same columns by their ClickHouse names
    key: list[int]  # indexes into columns; [] = multiset
    source_canon: list[Canon]
    replica_canon: list[Canon]
    matchers: list[Match | None]


_APPROXIMATE_TYPES = frozenset({"float", "double", "vector"})  # compared with a tolerance (values_match)


def _plan(result: TableResult, definition: TableDef, replica: _ReplicaTable, caps: Capabilities) -> _Plan:
    from ._chschema import clickhouse_type, sorting_key
    from ._types import values_match

    by_lower = {name.lower(): name for name in replica.columns}
    columns: list[str] = []
    replica_columns: list[str] = []
    defs: list[ColumnDef] = []
    for col in definition.columns:
        ch_name = col.name if col.name in replica.columns else by_lower.get(col.name.lower())
        if ch_name is None:
            result.schema.append(f"column `{col.name}` is missing in the replica")
            continue
        columns.append(col.name)
        replica_columns.append(ch_name)
        defs.append(col)
    known = {name.lower() for name in columns}
    result.schema.extend(
        f"column `{name}` exists only in the replica" for name in replica.columns if name.lower() not in known
    )
    kind, key_names = sorting_key(definition)
    index = {name.lower(): i for i, name in enumerate(columns)}
    key: list[int] = []
    if kind != "row" and all(name.lower() in index for name in key_names):
        key = [index[name.lower()] for name in key_names]
    for col, ch_name in zip(defs, replica_columns, strict=True):
        expected = clickhouse_type(col, caps, key=col.name in key_names and kind != "row")
        actual = replica.columns[ch_name]
        if _norm_type(expected) != _norm_type(actual):
            result.notes.append(f"column `{col.name}` is {actual} in the replica; mybinlog maps it to {expected}")
    return _Plan(
        definition,
        columns,
        replica_columns,
        key,
        [fast_canonical(c, caps, side="source") for c in defs],
        [
            fast_canonical(c, caps, side="clickhouse", replica_type=replica.columns[ch])
            for c, ch in zip(defs, replica_columns, strict=True)
        ],
        [values_match(c, caps) if c.type_name in _APPROXIMATE_TYPES else None for c in defs],
    )


def _norm_type(text: str) -> str:
    return text.replace(" ", "").lower()


class _Verifier:
    def __init__(
        self,
        source: SourceConnection,
        target: Target,
        *,
        engine: str,
        max_differences: int,
        page_rows: int,
    ) -> None:
        self.source = source
        self.target = target
        self.engine = engine
        self.max_differences = max_differences
        self.page_rows = page_rows
        self.caps = target.capabilities

    async def table(self, database: str, name: str, replica_db: str, replica: _ReplicaTable) -> TableResult:
        from ._ddl import parse_create_table

        started = time.monotonic()
        result = TableResult(f"{database}.{name}", f"{replica_db}.{replica.name}")
        try:
            text = await self.source.show_create_table(database, name)
            plan = _plan(result, parse_create_table(text, database), replica, self.caps)
            await self._compare(result, plan, database, name, replica_db, replica)
        except MybinlogError as exc:
            if _is_source_error(exc):
                raise
            result.status = "error"
            result.error = str(exc)
            logger.warning("verify %s: %s", result.source_table, exc)
        result.seconds = time.monotonic() - started
        return result

    async def _compare(
        self,
        result: TableResult,
        plan: _Plan,
        database: str,
        name: str,
        replica_db: str,
        replica: _ReplicaTable,
    ) -> None:
        if not plan.columns:
            raise ConfigurationError(f"{result.source_table}: no column exists on both sides")
        mode = _engine_mode(replica, self.engine)
        from_clause = _from_clause(replica_db, replica, mode)
        result.key = tuple(plan.columns[i] for i in plan.key)
        if plan.key:
            key_sql = ", ".join(_qi(plan.replica_columns[i]) for i in plan.key)
            rows = await self.target.query(f"SELECT count(), uniqExact({key_sql}) FROM {from_clause}")
            replica_count = int(rows[0][0] or 0)
            result.replica_duplicates = replica_count - int(rows[0][1] or 0)
        else:
            rows = await self.target.query(f"SELECT count() FROM {from_clause}")
            replica_count = int(rows[0][0] or 0)
        expected = max(await self._source_estimate(database, name), replica_count)
        comparer = TableComparer(
            plan.columns,
            plan.key,
            plan.source_canon,
            plan.replica_canon,
            matchers=plan.matchers,
            buckets=bucket_count(expected),
        )
        feed = _Feed(self, comparer, plan, database, name, from_clause, replica_count)
        await feed()
        result.source_rows = comparer.source_rows
        result.replica_rows = comparer.replica_rows
        result.source_checksum = f"{comparer.source_checksum:016x}"
        result.replica_checksum = f"{comparer.replica_checksum:016x}"
        differing = comparer.differing_buckets()
        logger.debug("verify %s: %d of %d buckets differ", result.source_table, len(differing), comparer.buckets)
        found: list[RowDifference] = []
        # Without approximate columns every differing bucket holds a difference: drill only to list some.
        # With them (floats), drill until one is confirmed or every differing bucket was looked at.
        want = max(self.max_differences, 1 if comparer.approximate else 0)
        per_pass = self.max_differences
        if comparer.approximate:
            rows_per_bucket = max(1, expected // comparer.buckets)
            per_pass = max(per_pass, self.page_rows // rows_per_bucket, 1)
        remaining = differing
        while remaining and len(found) < want:
            chunk, remaining = remaining[:per_pass], remaining[per_pass:]
            comparer.start_drill(chunk)
            await feed()
            found.extend(comparer.differences())
        examined_all = not remaining
        if comparer.approximate:
            really_different = bool(found) or not examined_all
        else:
            really_different = bool(differing)
        if differing and not found and want and not comparer.approximate:
            result.notes.append(
                "the differing rows were not found again on a second read of the replica: "
                "is replication still applying changes? (verify when the replica has caught up)"
            )
        if differing and not really_different:
            result.notes.append(
                f"{len(differing)} bucket(s) differ only within float rounding (old ClickHouse float parsing); "
                "treated as equal"
            )
        found.sort(key=lambda d: _sort_key(tuple(v for _, v in d.key)))
        result.differences = found[: self.max_differences]
        result.complete = examined_all and len(found) <= self.max_differences
        bound = len(found) if comparer.approximate else max(len(found), len(differing))
        result.min_differences = bound if really_different else 0
        if result.schema or really_different or result.replica_duplicates:
            result.status = "different"

    async def _source_estimate(self, database: str, name: str) -> int:
        rows = await self.source.query(
            "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (database, name),
        )
        try:
            return int(rows[0][0]) if rows and rows[0][0] is not None else 0
        except (TypeError, ValueError):
            return 0


@dataclass
class _Feed:
    """One read of both sides of a table into a comparer (called once per pass)."""

    verifier: _Verifier
    comparer: TableComparer
    plan: _Plan
    database: str
    name: str
    from_clause: str
    replica_count: int

    async def __call__(self) -> None:
        """Read the replica (one slice after the other) while the source streams: both servers work at once."""
        comparer = self.comparer
        source = self.verifier.source
        replica_error: list[BaseException] = []

        async def read_replica() -> None:
            try:
                async for batch in self._replica_batches():
                    comparer.add_replica(batch)
            except MybinlogError as exc:  # reported after the source stream ends (keeps its connection usable)
                replica_error.append(exc)

        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(read_replica())
                stream = source.stream_rows(self.database, self.name, self.plan.columns, batch=_SOURCE_BATCH)
                try:
                    async for rows in stream:
                        comparer.add_source(rows)
                finally:  # on an error, drain the cursor now, so the connection serves the next table
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        await aclose()
        except BaseExceptionGroup as group_error:
            raise group_error.exceptions[0] from None
        if replica_error:
            raise replica_error[0]

    async def _replica_batches(self) -> AsyncIterator[list[list[str | None]]]:
        target = self.verifier.target
        plan = self.plan
        sql = f"SELECT {', '.join(_qi(c) for c in plan.replica_columns)} FROM {self.from_clause}"
        slices = max(1, -(-self.replica_count // self.verifier.page_rows))
        if slices == 1:
            yield await target.query(sql)
            return
        split_cols = [plan.replica_columns[i] for i in plan.key] or plan.replica_columns
        split = f"cityHash64(toString(tuple({', '.join(_qi(c) for c in split_cols)}))) % {slices}"
        glue = " AND " if " WHERE " in self.from_clause else " WHERE "
        for i in range(slices):
            yield await target.query(f"{sql}{glue}{split} = {i}")


def _is_source_error(exc: BaseException) -> bool:
    from ..errors import SourceError

    return isinstance(exc, SourceError)


def _split_tables(
    tables: Sequence[str], databases: Sequence[str], default_db: str | None
) -> dict[str, list[str] | None]:
    """database -> its listed tables (None = every table of the database)."""
    selection: dict[str, list[str] | None] = dict.fromkeys(databases)
    for item in tables:
        db, dot, name = item.partition(".")
        if not dot:
            if len(databases) == 1:
                db, name = databases[0], item
            elif default_db and not databases:
                db, name = default_db, item
            else:
                raise ConfigurationError(
                    f"table {item!r} has no database: write it as database.table (or give exactly one database)"
                )
        if not db or not name:
            raise ConfigurationError(f"table {item!r} is not of the form database.table")
        listed = selection.get(db)
        if listed is None:  # a database given whole and with some tables: just those tables
            listed = selection[db] = []
        listed.append(name)
    if not selection:
        if not default_db:
            raise ConfigurationError(
                "nothing to verify: give databases=[...] (--database) or tables=[...] (--table), "
                "or a database in the DSN"
            )
        selection[default_db] = None
    return selection


async def verify(
    source_dsn: str | DSN,
    target: Target,
    *,
    databases: Sequence[str] = (),
    tables: Sequence[str] = (),
    target_database: str | None = None,
    engine: str = "auto",
    max_differences: int = DEFAULT_MAX_DIFFERENCES,
    page_rows: int = DEFAULT_PAGE_ROWS,
) -> VerifyReport:
    """Compare MySQL/MariaDB tables with their replica in ``target``; see the module docstring.

    ``databases``: whole databases (the table sets are compared too: tables missing in the replica, or only in
    the replica). ``tables``: ``"db.table"`` names (``"table"`` when one database is given). With neither, the
    DSN's database. ``target_database``: the ClickHouse database holding the replica when its name differs from
    the MySQL one (only with one MySQL database). ``engine``: ``auto`` (decide per table from its ClickHouse
    engine and meta columns) or one of ``replacing``, ``collapsing``, ``replacing_is_deleted``.
    ``max_differences``: how many differing rows to list per table (0: only count). ``page_rows``: the largest
    replica slice read at once.

    Errors of one table (a ClickHouse query, an unparsable definition) are reported in its :class:`TableResult`
    with status ``error``; a source error (connection lost) raises.
    """
    from ._chschema import ENGINES

    dsn = source_dsn if isinstance(source_dsn, DSN) else DSN.parse(source_dsn)
    if engine != "auto" and engine not in ENGINES:
        raise ConfigurationError(f"unknown engine {engine!r}; use auto or one of {', '.join(ENGINES)}")
    if max_differences < 0:
        raise ConfigurationError(f"max_differences must be >= 0, got {max_differences}")
    if page_rows < 1:
        raise ConfigurationError(f"page_rows must be >= 1, got {page_rows}")
    selection = _split_tables(tables, databases, dsn.database)
    if target_database is not None and len(selection) > 1:
        raise ConfigurationError("target_database can only be given when verifying tables of one database")

    started = time.monotonic()
    source = await _connect_source(dsn)
    report = VerifyReport(
        source=f"{dsn.display} ({source.info.flavor} {source.info.version_string})",
        replica=f"{target.description} (ClickHouse {target.capabilities.version_text})",
    )
    verifier = _Verifier(source, target, engine=engine, max_differences=max_differences, page_rows=page_rows)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(source.close)
        await source.start_consistent_snapshot()
        for database, listed in selection.items():
            replica_db = target_database or database
            await _verify_database(verifier, report, database, listed, replica_db)
        with contextlib.suppress(MybinlogError):
            await source.commit()
    report.seconds = time.monotonic() - started
    return report


async def _verify_database(
    verifier: _Verifier, report: VerifyReport, database: str, listed: list[str] | None, replica_db: str
) -> None:
    from ..errors import SourceError

    try:
        source_tables = await verifier.source.tables(database)
    except SourceError as exc:
        if exc.errno != _ER_BAD_DB:
            raise
        error = f"database {database} does not exist in the source"
        report.tables.append(TableResult(database, replica_db, status="error", error=error))
        return
    try:
        replica_tables = await _replica_tables(verifier.target, replica_db)
    except MybinlogError as exc:
        report.tables.append(TableResult(database, replica_db, status="error", error=str(exc)))
        return
    names = sorted(source_tables) if listed is None else list(dict.fromkeys(listed))
    present = set(source_tables)
    for name in names:
        if name not in present:
            report.tables.append(
                TableResult(
                    f"{database}.{name}",
                    f"{replica_db}.{name}",
                    status="error",
                    error=f"table {database}.{name} does not exist in the source",
                )
            )
            continue
        engine = replica_tables.get(name)
        if engine is None:
            rows = await verifier.source.query(f"SELECT COUNT(*) FROM {_mysql_ident(database)}.{_mysql_ident(name)}")
            report.tables.append(
                TableResult(f"{database}.{name}", f"{replica_db}.{name}", status="missing", source_rows=int(rows[0][0]))
            )
            continue
        try:
            described = await _describe_replica(verifier.target, replica_db, name, engine)
        except MybinlogError as exc:
            report.tables.append(
                TableResult(f"{database}.{name}", f"{replica_db}.{name}", status="error", error=str(exc))
            )
            continue
        logger.info("verify %s.%s against %s.%s", database, name, replica_db, name)
        report.tables.append(await verifier.table(database, name, replica_db, described))
    if listed is None:
        for name in sorted(set(replica_tables) - present):
            result = TableResult("", f"{replica_db}.{name}", status="extra")
            with contextlib.suppress(MybinlogError):
                rows_ = await verifier.target.query(f"SELECT count() FROM {_qi(replica_db)}.{_qi(name)}")
                result.replica_rows = int(rows_[0][0] or 0)
            report.tables.append(result)


def _mysql_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


async def _connect_source(dsn: DSN) -> SourceConnection:
    from ..source._connection import BinlogConnection
    from ._source import SourceConnection

    conn = await BinlogConnection.connect(dsn, heartbeat_period=0, check_preconditions=False)
    source = SourceConnection(conn)
    try:
        await source.query("SET time_zone = '+00:00'")
        # A slow reader must not make the server drop the streaming result.
        await source.query("SET SESSION net_write_timeout = 3600")
    except BaseException:
        await source.close()
        raise
    return source


# ---------------------------------------------------------------------------------------------------------------
# command line


DEFAULT_TARGET = "chdb://./mybinlog-clickhouse"


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``mybinlog verify``'s options to ``parser`` (then call :func:`run_verify` with the parsed args)."""
    parser.add_argument(
        "--source",
        "--dsn",
        dest="source",
        required=True,
        metavar="DSN",
        help="the MySQL/MariaDB source, mysql://user@host:port[/database]; the password from --password-file, "
        "MYBINLOG_PASSWORD_FILE or MYBINLOG_PASSWORD (in the URL, `ps` shows it to every user)",
    )
    _cli_common.add_source_arguments(parser)
    parser.add_argument(
        "--target",
        default=DEFAULT_TARGET,
        metavar="URL",
        help=f"the ClickHouse replica: http://user@host:8123 or chdb:///path (default {DEFAULT_TARGET}); the "
        "password from --target-password-file, MYBINLOG_CH_PASSWORD_FILE or MYBINLOG_CH_PASSWORD",
    )
    _cli_common.add_target_arguments(parser)
    parser.add_argument(
        "--database", "-d", action="append", default=[], metavar="DB", help="a whole MySQL database (repeatable)"
    )
    parser.add_argument(
        "--tables",
        action="append",
        default=[],
        metavar="T1,T2",
        help="only these tables: comma-separated, table or database.table (repeatable); without it, every table "
        "of each --database and the table sets are compared too",
    )
    parser.add_argument("--target-database", metavar="NAME", help="the ClickHouse database (default: the MySQL name)")
    parser.add_argument(
        "--engine",
        default="auto",
        choices=("auto", "replacing", "collapsing", "replacing_is_deleted"),
        help="how the replica marks live rows (default auto: from each table's engine and columns)",
    )
    parser.add_argument(
        "--max-differences",
        type=int,
        default=DEFAULT_MAX_DIFFERENCES,
        metavar="N",
        help=f"list at most N differing rows per table (default {DEFAULT_MAX_DIFFERENCES}; 0 = counts only)",
    )
    parser.add_argument(
        "--page-rows",
        type=int,
        default=DEFAULT_PAGE_ROWS,
        metavar="N",
        help=f"read the replica in slices of about N rows (default {DEFAULT_PAGE_ROWS})",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")


async def run_verify(args: argparse.Namespace) -> int:
    """Run ``mybinlog verify`` with parsed arguments; print the report. Exit code: 0 equal, 1 different,
    2 error."""
    from ._target import open_target

    secrets: list[str] = []
    try:
        dsn = _cli_common.source_dsn(args)
        secrets.append(dsn.password)
        url = _cli_common.target_url(args)
        secrets.append(_url_password(url))
        target = await open_target(url)
        try:
            report = await verify(
                dsn,
                target,
                databases=args.database,
                tables=[t.strip() for item in args.tables for t in item.split(",") if t.strip()],
                target_database=args.target_database,
                engine=args.engine,
                max_differences=args.max_differences,
                page_rows=args.page_rows,
            )
        finally:
            await target.aclose()
    except MybinlogError as exc:
        sys.stderr.write(f"mybinlog verify: error: {_redact(str(exc), secrets)}\n")
        return 2
    out = report.to_json() + "\n" if args.format == "json" else report.render_text()
    sys.stdout.write(_redact(out, secrets))
    sys.stdout.flush()
    return report.exit_code


def _url_password(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return ""
    return unquote(password) if password else ""


def _redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, "***")
    return text
