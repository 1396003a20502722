"""The replicator's in-process initial load (:class:`InitialLoad`): the tables in scope checked (readable by the
source user, holdable by the sink), read inside one consistent snapshot of the source, written through the sink, and
the first checkpoint; crash-safe through a "loading" checkpoint row written before anything else.

The copy (:func:`copy_tables`): many small tables (a schema of thousands) must not cost a string of round trips
each (issue 24: 25 ms a table, 50 s for 2,000 tables of 10 rows). The snapshot is one source connection, so tables
are read one after the other; but the sink's side of a small table (its CREATE and its rows) runs in a task while
the next tables are read, with at most :data:`CONCURRENT_TABLES` of them in flight and at most
:data:`SMALL_TABLE_BYTES` held for each. A bigger table is created at once and its rows written as they are read.
The target tables that exist are listed once (only those are dropped first), and the columns come from the
definitions already parsed (no information_schema look-up per table).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import _failpoints
from .. import ddl as _ddl
from .._checkpoint import Checkpoint, make_seq
from ..errors import ConfigurationError, MybinlogError, ReplicationError
from ..protocol import BinlogPosition
from ..source import DSN, SourceConnection, prepared_at, quote_mysql_ident, select_scope
from ._observe import _LoadProgress

if TYPE_CHECKING:
    from ._settings import ReplicaStatus, ReplicationSettings
    from ._sink import Guard, Sink, SinkTable

__all__ = ["CONCURRENT_TABLES", "SMALL_TABLE_BYTES", "InitialLoad", "copy_tables"]

logger = logging.getLogger("mybinlog.replication")

CONCURRENT_TABLES = 4  # small tables whose target writes may be in flight while the next ones are read
SMALL_TABLE_BYTES = 1 << 20  # a table whose encoded rows stay under this is held and written by a task


async def copy_tables(
    sink: Sink,
    leader: Guard,
    status: ReplicaStatus,
    src: SourceConnection,
    database: str,
    definitions: dict[str, _ddl.TableDef],
    position: BinlogPosition,
    progress: _LoadProgress,
    built: dict[str, SinkTable] | None = None,
) -> int:
    """Copy the tables ``definitions`` names into new tables of ``sink`` as of ``position``; the rows copied.
    ``built``: filled with the sink's table of each definition (the replicator streams with them afterwards)."""
    existing = await sink.existing_tables()
    copied = 0
    pending: set[asyncio.Task[None]] = set()

    def counted(rows: int, name: str) -> None:
        nonlocal copied
        copied += rows
        status.load_rows = copied
        progress.update(copied, name)
        if _failpoints.ACTIVE:
            _failpoints.reached("load.after_rows")

    async def create(table: SinkTable) -> None:
        await leader.confirm()
        if table.name in existing:
            await sink.drop_table(table.name)
        await sink.create_table(table.definition)

    async def insert(table: SinkTable, payload: Any, rows: int) -> None:
        await leader.confirm()
        await sink.load_write(table, payload)
        leader.wrote(f"an initial-load write of {table.name}")
        counted(rows, table.name)

    async def write(table: SinkTable, chunks: list[tuple[Any, int, int]]) -> None:
        await create(table)
        for payload, rows, _size in chunks:
            await insert(table, payload, rows)

    async def reap(limit: int) -> None:
        nonlocal pending
        while len(pending) > limit:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # the first failure ends the load

    try:
        for name, definition in definitions.items():
            table = sink.table(definition)
            if built is not None:
                built[name] = table
            chunks: list[tuple[Any, int, int]] = []
            held = 0
            streaming = False  # a big table: created, its rows inserted as they are read
            async for rows in src.stream_rows(database, name, definition.columns):
                payload = sink.load_payload(table, rows, position)
                if streaming:
                    await insert(table, payload, len(rows))
                    continue
                size = len(payload) if isinstance(payload, bytes | str) else SMALL_TABLE_BYTES
                chunks.append((payload, len(rows), size))
                held += size
                if held > SMALL_TABLE_BYTES:
                    streaming = True
                    await create(table)
                    for data, count, _size in chunks:
                        await insert(table, data, count)
                    chunks = []
            if not streaming:
                await reap(CONCURRENT_TABLES - 1)
                pending.add(asyncio.create_task(write(table, chunks), name=f"mybinlog load {name}"))
        await reap(0)
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)  # cancelled (or failed: the first failure is already raised)
    return copied


class InitialLoad:
    """The in-process initial load of a replicator (``initial_load`` "auto" or "none"): the tables in scope checked,
    read in one consistent snapshot of the source and written through the sink, and the first checkpoint.

    It owns ``connects`` (loads that reached the source: a loss after one is a new outage for the replicator's retry
    budget); it writes only through the sink, confirms the lease through the leader, and saves checkpoints with
    ``save`` (the replicator's: after the sink's writes, in the leader's epoch).
    """

    def __init__(
        self,
        *,
        replica: str,
        dsn: DSN,
        database: str,
        table_filter: frozenset[str] | None,
        settings: ReplicationSettings,
        sink: Sink,
        leader: Guard,
        status: ReplicaStatus,
        save: Callable[[Checkpoint], Awaitable[None]],
    ) -> None:
        self.replica = replica
        self.dsn = dsn
        self.database = database
        self.table_filter = table_filter
        self.settings = settings
        self.sink = sink
        self.leader = leader
        self.status = status
        self._save = save
        self.connects = 0
        # the sink's tables of the last load's checkpoint (name -> table, made from the same CREATE TABLE texts):
        # the replicator streams with them instead of parsing the texts and building the tables again (issue 24)
        self.built: dict[str, SinkTable] = {}

    async def run(self, previous: Checkpoint | None) -> Checkpoint:
        """Copy the tables that exist now, consistently with a binlog position, and return the first checkpoint.

        Crash-safe: before it writes anything, the checkpoint row says the load is running and names every table it
        may write (with those of an earlier unfinished load). A load is never continued: the next start drops those
        tables and loads again, so rows deleted at the source meanwhile cannot stay, and a DDL in between is simply
        part of the new load.
        """
        s = self.settings
        self.status.state = "initial load"
        self.built = {}
        leftovers = set(previous.loading or ()) if previous is not None else set()
        async with await SourceConnection.connect(self.dsn) as src:
            self.connects += 1  # the source is there: a later loss is a new outage (_run's retry budget)
            watermark = await src.current_position()  # before the schemas: DDL after it is replayed
            scope = await self._in_scope(src)  # name -> (CREATE TABLE text, its definition)
            names = list(scope)
            marker = Checkpoint(
                self.replica,
                BinlogPosition("", 4),
                source=self.dsn.display,
                loading=sorted(leftovers | set(names)),
                seq=previous.seq if previous is not None else make_seq(self.leader.epoch, 0),
            )
            if not leftovers:
                await self.sink.prepare_load(names, [], self.leader)  # a first load: the tables must be empty
            await self._save(marker)
            if leftovers:
                await self.sink.prepare_load(names, sorted(leftovers), self.leader)
                logger.warning(
                    "%s: an earlier initial load did not finish; dropped what it wrote (%s) and loading again",
                    self.replica,
                    ", ".join(sorted(leftovers)),
                )
            server_id = src.info.server_id
            self.status.load_tables = len(names)
            if s.initial_load == "none":
                position = await src.current_position()
                texts = {t: await src.show_create_table(self.database, t) for t in names}
                for t, text in texts.items():
                    await self.leader.confirm()
                    definition = _ddl.parse_create_table(text, self.database)
                    await self.sink.create_table(definition)
                    self.built[t] = self.sink.table(definition)
                position = replace(position, server_id=server_id)
                xa = await prepared_at(src, position, self.database)
                cp = Checkpoint(self.replica, position, texts, source=self.dsn.display, seq=marker.seq,
                                xa={xid: held.to_json() for xid, held in xa.items()})  # fmt: skip
                await self._save(cp)
                return cp
            texts = {t: scope[t][0] for t in names}
            # a collapsing load needs the exact position of its snapshot (MySQL: taken under a global read lock)
            exact = await src.start_consistent_snapshot(locked=s.engine == "collapsing")
            if exact is None and s.engine == "collapsing":
                raise ConfigurationError(
                    "the initial load of a collapsing replica needs the exact binlog position of its snapshot, "
                    "which this server did not give; use engine='replacing' or start from an empty database "
                    "(initial_load='none')"
                )
            start = replace(exact if exact is not None else watermark, server_id=server_id)
            # XA transactions prepared before `start` and not resolved there: their rows are invisible to the
            # snapshot and the stream starts after their prepared parts; held as if it had passed them (_xa.py)
            xa = await prepared_at(src, start, self.database)
            progress = _LoadProgress(self.replica, len(names), await src.estimated_rows(self.database, names))
            self.status.load_estimate = progress.estimate
            definitions = {t: scope[t][1] for t in names}
            total = await copy_tables(self.sink, self.leader, self.status, src, self.database, definitions, start,
                                      progress, self.built)  # fmt: skip
            await src.commit()
            after = {t: await src.show_create_table(self.database, t) for t in names}
            changed = [t for t in names if _schema_text(after[t]) != _schema_text(texts[t])]
            if changed:
                raise ReplicationError(
                    f"the schema of {', '.join(changed)} changed during the initial load; run replicate again "
                    "(it starts the load over) and avoid DDL on these tables until it is done"
                )
        progress.finish(total)
        cp = Checkpoint(self.replica, start, texts, source=self.dsn.display, seq=marker.seq,
                        xa={xid: held.to_json() for xid, held in xa.items()})  # fmt: skip
        await self._save(cp)
        logger.info("%s: initial load copied %d rows of %d tables at %s", self.replica, total, len(names), start)
        self.status.rows_written += total
        return cp

    async def _in_scope(self, src: SourceConnection) -> dict[str, tuple[str, _ddl.TableDef]]:
        """The tables to load (name -> CREATE TABLE text and definition), after checking that the source user can
        read each of them and that the sink can hold them: a table in scope that cannot be read is an error naming
        the fix, never a silent omission."""
        db = self.database
        user = self.dsn.user
        grant = f"GRANT SELECT ON {quote_mysql_ident(db)}.* TO '{user}'@'<host>'"
        if not await src.database_visible(db):
            raise ReplicationError(
                f"database {db!r} does not exist on {self.dsn.display}, or user {user!r} has no privilege on it "
                f"(then it is invisible): create it, or {grant}"
            )
        visible = await src.tables(db)
        names = [t for t in visible if self.table_filter is None or t in self.table_filter]
        problems: list[str] = []
        found: dict[str, tuple[str, _ddl.TableDef]] = {}
        if self.table_filter is not None:
            problems.extend(
                f"{db}.{t}: no such table, or user {user!r} has no privilege on it: "
                f"GRANT SELECT ON {quote_mysql_ident(db)}.{quote_mysql_ident(t)} TO '{user}'@'<host>'"
                for t in sorted(self.table_filter - set(visible))
            )
        else:
            scope = select_scope(await src.grants(), db)
            if scope is not None and scope[0] != "all":
                readable = sorted(scope[1])
                problems.append(
                    f"user {user!r} may SELECT only some tables of {db!r} ({', '.join(readable) or 'none'}); tables it "
                    f"cannot read are invisible to it and would be left out: {grant}, or name the tables to replicate "
                    "with --tables"
                )
        probed = await src.readable_tables(db, names)  # many a query; a failing group is probed table by table
        for t in names:
            try:
                if t not in probed:
                    await src.check_readable(db, t)
                text = await src.show_create_table(db, t)
            except MybinlogError as exc:
                problems.append(
                    f"{db}.{t}: cannot be read ({exc}): "
                    f"GRANT SELECT ON {quote_mysql_ident(db)}.{quote_mysql_ident(t)} TO '{user}'@'<host>'"
                )
                continue
            try:
                definition = _ddl.parse_create_table(text, db)
                self.sink.check_table(definition)
                found[t] = (text, definition)
            except MybinlogError as exc:
                problems.append(
                    f"{db}.{t}: cannot be replicated into {self.sink.description} ({exc}); leave it out with "
                    "--tables, or change it"
                )
        if problems:
            raise ReplicationError(
                f"{self.replica}: {len(problems)} table(s) in scope cannot be replicated, nothing was written:\n  "
                + "\n  ".join(problems)
            )
        return found


def _schema_text(create: str) -> str:
    """SHOW CREATE TABLE text without the parts that change with the data (AUTO_INCREMENT=N)."""
    return re.sub(r"\s+AUTO_INCREMENT=\d+", "", create)
