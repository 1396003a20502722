"""The orchestration: :func:`verify` reads each table on both sides at once (MySQL in one consistent snapshot,
ClickHouse in slices), feeds a :class:`~._compare.TableComparer`, reads differing buckets again to name the rows,
and fills the :class:`~._report.VerifyReport`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, MybinlogError
from ..source import DSN, quote_mysql_ident
from ._canonical import Canon, fast_canonical
from ._compare import Match, TableComparer, _sort_key, bucket_count
from ._replica import _describe_replica, _engine_mode, _from_clause, _qi, _replica_tables, _ReplicaTable
from ._report import RowDifference, TableResult, VerifyReport

if TYPE_CHECKING:
    from ..clickhouse import Capabilities, Target
    from ..ddl import ColumnDef, TableDef
    from ..source import SourceConnection

__all__ = ["DEFAULT_MAX_DIFFERENCES", "DEFAULT_PAGE_ROWS", "verify"]


logger = logging.getLogger("mybinlog.verify")

DEFAULT_MAX_DIFFERENCES = 10
DEFAULT_PAGE_ROWS = 200_000


_SOURCE_BATCH = 5_000
_ER_BAD_DB = 1049  # MySQL: unknown database


# ---------------------------------------------------------------------------------------------------------------
# the orchestration


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
    source_columns: list[ColumnDef]  # the common columns' definitions (how the source is read: select_expression)


_APPROXIMATE_TYPES = frozenset({"float", "double", "vector"})  # compared with a tolerance (values_match)


def _plan(result: TableResult, definition: TableDef, replica: _ReplicaTable, caps: Capabilities) -> _Plan:
    from ..clickhouse import sorting_key
    from ..clickhouse.types import clickhouse_type, values_match

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
        defs,
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
        from ..ddl import parse_create_table

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
                stream = source.stream_rows(self.database, self.name, self.plan.source_columns, batch=_SOURCE_BATCH)
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
    """Compare MySQL/MariaDB tables with their replica in ``target``; see :mod:`mybinlog.verification`.

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
    from ..clickhouse import ENGINES

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
            source_table = f"{quote_mysql_ident(database)}.{quote_mysql_ident(name)}"
            rows = await verifier.source.query(f"SELECT COUNT(*) FROM {source_table}")
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


async def _connect_source(dsn: DSN) -> SourceConnection:
    from ..source import BinlogConnection, SourceConnection

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
