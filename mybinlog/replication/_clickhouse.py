"""The ClickHouse sink: how a replicator writes a replica into ClickHouse (the first :class:`~._sink.Sink`).

::

    Replicator ──rows events──> ClickHouseSink
                                 ├─ transaction buffer (encoded rows; spilled to a file past max_bytes_in_transaction)
                                 ├─ batch buffer (last change per key, with the version of its transaction)
                                 ├─ DDL: CREATE/ALTER/RENAME/TRUNCATE/DROP of the ClickHouse tables
                                 └─ flush: insert per table, then the checkpoint (in a task: the next batch is read
                                    meanwhile)

Exactly-once result (docs/replication.md): every row carries ``_version`` derived from the position where its
transaction ends (``mybinlog.clickhouse``'s versions), batches end at transaction boundaries, and the checkpoint is
written only after the batch it covers. A replay after a crash writes the same rows with the same versions, which a
ReplacingMergeTree keeps once. Collapsing tables cannot absorb duplicates, so their batches are announced in the
checkpoint first (``pending``) and replayed exactly: with insert deduplication tokens derived from the position
range where the server has them, or by deleting the unconfirmed tail before the replay where it has not.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import _failpoints, clickhouse
from .. import ddl as _ddl
from ..clickhouse import (
    Checkpoint,
    Target,
    binlog_file_number,
    latest_seq,
    load_checkpoint,
    quote_ident,
    quote_string,
    save_checkpoint,
    seq_epoch,
    snapshot_version,
    target_identity,
    transaction_version,
    version_file,
    version_position,
)
from ..clickhouse import types as _types
from ..errors import ConfigurationError, ReplicationError, TargetError
from ..protocol import BinlogPosition
from ._batch import Change, Entry, add_transaction, rows_entry, table_payload
from ._observe import count_batch
from ._spill import Spill, entry_bytes, give_memory_back, write_spilled

if TYPE_CHECKING:
    from ..protocol import RowsEvent
    from ._settings import ReplicaStatus, ReplicationSettings
    from ._sink import Guard

__all__ = ["ClickHouseSink", "ClickHouseTable"]

logger = logging.getLogger("mybinlog.replication")


# ------------------------------------------------------------------------------------------------------------
# per-table state


class _Layout(NamedTuple):
    """How the rows of one event layout (its column names) become ClickHouse rows."""

    positions: list[int]  # index in the row image of each table column, or -1
    key: list[int]  # indexes of the key columns in the row image ([]: the whole row is the key)
    encode_rows: Callable[[Sequence[Sequence[Any]]], list[str]]  # rows -> their TabSeparated fields (no meta columns)
    key_of: Callable[[Sequence[Any]], Any] | None  # row -> its key (the value for one column, else a tuple)


class ClickHouseTable:
    """A replicated table: its MySQL definition, its ClickHouse table and its row encoders."""

    def __init__(self, sink: ClickHouseSink, definition: _ddl.TableDef) -> None:
        self.sink = sink
        self.define(definition)

    def define(self, definition: _ddl.TableDef) -> None:
        sink = self.sink
        caps = sink.target.capabilities
        self.definition = definition
        self.name = definition.name
        self.columns = [c.name for c in definition.columns]
        self.lower = [c.lower() for c in self.columns]
        # MySQL's binlog carries JSON as parsed binary JSON, MariaDB's (a LONGTEXT alias) and SELECT as text;
        # columns missing from a row image (an older schema, replayed) get MySQL's implicit default
        kind, key_columns = clickhouse.sorting_key(definition)
        # the key of the ClickHouse sorting order: one row per key survives FINAL; "row" = the whole row is the key
        self.key = [] if kind == "row" else [self.lower.index(k.lower()) for k in key_columns]
        self.layouts: dict[tuple[str | None, ...], _Layout] = {}
        self.select_encoder = _types.make_row_encoder(definition.columns, caps, parsed_json=False)
        self.insert_columns = [*self.columns, *clickhouse.meta_columns(sink.settings.engine)]

    @property
    def ch_table(self) -> str:
        return f"{quote_ident(self.sink.target_database)}.{quote_ident(self.name)}"

    def entry(self, event: RowsEvent) -> Entry | None:
        return rows_entry(self, event)

    def layout(self, names: tuple[str | None, ...]) -> _Layout:
        """For an event's column names: the index in the row image of each table column, the key, and the generated
        row encoders for that layout."""
        got = self.layouts.get(names)
        if got is None:
            if names and all(n is not None for n in names):
                where = {str(n).lower(): i for i, n in enumerate(names)}
                idx = [where.get(c, -1) for c in self.lower]
            else:  # no column names in the binlog (binlog_row_metadata=MINIMAL): by position
                idx = [i if i < len(names) else -1 for i in range(len(self.columns))]
            key = [idx[k] for k in self.key]
            if any(k < 0 for k in key):
                raise ReplicationError(
                    f"rows event for {self.definition.schema}.{self.name} lacks primary key column(s) "
                    f"{[self.columns[k] for k in self.key]}; the binlog does not match the tracked schema "
                    f"{_ddl.render_create_table(self.definition)!r}"
                )
            encode_rows = _types.make_rows_encoder(
                self.definition.columns,
                self.sink.target.capabilities,
                parsed_json=self.sink.flavor == "mysql",
                positions=idx,
            )
            got = self.layouts[names] = _Layout(
                idx,
                key,
                encode_rows,
                operator.itemgetter(*key) if key else None,
            )
        return got


# ------------------------------------------------------------------------------------------------------------
# the sink


class ClickHouseSink:
    """Writes one replica into ``target_database`` of a ClickHouse :class:`~mybinlog.clickhouse.Target`."""

    def __init__(
        self,
        target: Target,
        *,
        replica: str,
        target_database: str,
        settings: ReplicationSettings,
        status: ReplicaStatus,
    ) -> None:
        self.target = target
        self.replica = replica
        self.target_database = target_database
        self.settings = settings
        self.status = status
        self.flavor = "mariadb"  # the source's: MySQL's binlog carries JSON parsed (set by the replicator)
        self.tables: Mapping[str, ClickHouseTable] = {}  # the replica's tables now (the replicator's schema)
        self._txn: list[Entry] = []
        self._txn_bytes = 0  # what self._txn holds, about (_spill.entry_bytes)
        self._spill: Spill | None = None  # the transaction's rows beyond max_bytes_in_transaction (_spill.py)
        self._spilled: tuple[Spill, BinlogPosition, BinlogPosition, int] | None = None  # to write at the next flush
        self._batch: dict[str, dict[Any, Change]] = {}  # table -> key -> net change (_batch.py)
        self._batch_rows = 0
        self._batch_bytes = 0
        self._batch_end: BinlogPosition | None = None
        self._write: asyncio.Task[None] | None = None  # the previous batch's inserts and checkpoint, still running
        self._replay_until: BinlogPosition | None = None
        self._replay_skip: frozenset[str] = frozenset()
        # collapsing: the announced batch being written (its end, its tables, the tables whose insert returned), kept
        # across a ClickHouse failure within this process so that its replay can be exact (see resume)
        self._landed: tuple[BinlogPosition, frozenset[str], set[str], dict[str, Any]] | None = None
        self._version_base = 0
        self._version_server = 0  # the server whose file numbers the versions use (0: not known yet)
        self._last_version = 0  # the version of the last transaction end seen: they never go backwards

    kind = "ClickHouse"  # what the replicator's retry warnings name ("ClickHouse failed (...)")

    @property
    def description(self) -> str:
        """For logs and errors: the target's description (never its password) and the database."""
        return f"ClickHouse at {self.target.description}"

    def __repr__(self) -> str:
        return f"<ClickHouseSink {self.replica!r} -> {self.description}/{self.target_database}>"

    def check(self) -> None:
        """Refuse settings this target cannot serve, before anything is written."""
        s = self.settings
        caps = self.target.capabilities
        if s.engine == "replacing_is_deleted" and not caps.replacing_is_deleted:
            raise ConfigurationError(
                f"engine 'replacing_is_deleted' needs ReplacingMergeTree(ver, is_deleted) (ClickHouse 23.2+); "
                f"{self.target.description} is {'.'.join(map(str, caps.version))}: use engine='replacing'"
            )
        if s.standby and getattr(self.target, "kind", "") == "chdb":
            raise ConfigurationError(
                "standby needs a ClickHouse server as the target: embedded ClickHouse (chdb) opens its directory in "
                "one process at a time, so the active and its standbys cannot share it (docs/ha.md)"
            )

    # -- identity, checkpoints, the replay ------------------------------------------------------------------
    async def identity(self) -> str:
        return await target_identity(self.target)

    async def read_checkpoint(self) -> Checkpoint | None:
        await self.target.execute(f"CREATE DATABASE IF NOT EXISTS {quote_ident(self.target_database)}")
        return await load_checkpoint(
            self.target, self.replica, meta_database=self.settings.meta_database, include_loading=True
        )

    async def newest_epoch(self) -> int:
        return seq_epoch(await latest_seq(self.target, self.replica, meta_database=self.settings.meta_database))

    async def save_checkpoint(self, cp: Checkpoint) -> None:
        await save_checkpoint(self.target, cp, meta_database=self.settings.meta_database)

    async def resume(self, cp: Checkpoint, leader: Guard) -> None:
        """Start again from ``cp``: the version state from it, and a batch announced but maybe not (fully) inserted
        before a crash made exact."""
        self._version_base = cp.version_base
        self._version_server = cp.position.server_id
        self._last_version = self._version_of(cp.position) if cp.position.file else 0
        if cp.pending is not None:
            await self._prepare_replay(cp, leader)
            self._last_version = self._version_of(cp.position) if cp.position.file else 0

    @property
    def version_base(self) -> int:
        """Added to binlog file numbers in row versions (``mybinlog.clickhouse``'s versions; a failover moves it)."""
        return self._version_base

    @property
    def replay_until(self) -> BinlogPosition | None:
        """The end of an announced batch being replayed: the replicator flushes exactly there (and not before)."""
        return self._replay_until

    async def _prepare_replay(self, cp: Checkpoint, leader: Guard) -> None:
        """A batch was announced but maybe not (fully) inserted before a crash: make its replay exact."""
        assert cp.pending is not None
        if self.settings.engine != "collapsing":
            return  # versions make the replay idempotent
        landed, self._landed = self._landed, None
        if self.target.capabilities.insert_deduplication_token and cp.pending.server_id == cp.position.server_id:
            self._replay_until = cp.pending  # same batch, same tokens: the server drops what it already has
            return
        # Deleting the batch's rows and replaying them is not exact once a merge has collapsed a cancel row with the
        # row it cancels: the replay adds the cancel row again. So the tables whose insert returned (saved in the
        # checkpoint after each insert, and known to this process when ClickHouse failed while it wrote) are not
        # written again; the others get the tail delete (an insert whose answer was lost may have been written).
        done = set(cp.written)
        if landed is not None and landed[0] == cp.pending:
            done |= landed[2]
            if landed[2] >= landed[1]:  # every insert returned: only the checkpoint is missing
                logger.info("%s: the batch ending at %s was written before ClickHouse failed", self.replica, cp.pending)
                cp.position, cp.pending, cp.written, cp.xa = cp.pending, None, [], landed[3]
                await leader.save(cp)
                return
        if cp.pending.server_id == cp.position.server_id:
            logger.info("%s: replaying the batch ending at %s for the tables other than %s", self.replica, cp.pending,
                        ", ".join(sorted(done)) or "none")  # fmt: skip
            self._replay_until, self._replay_skip = cp.pending, frozenset(done)  # the rest of the same batch
            await self._delete_tail(cp, [t for n, t in self.tables.items() if n not in done], leader)
            return
        # the batch came from another server (a failover): remove the unconfirmed tail, then replay normally. Rows a
        # snapshot or the initial load wrote at the checkpoint's position have its version with the low bit: kept.
        logger.info("%s: a batch ending at %s may be partly written: deleting rows with _version > %d, replaying it",
                    self.replica, cp.pending, snapshot_version(cp.position, cp.version_base))  # fmt: skip
        await self._delete_tail(cp, list(self.tables.values()), leader)
        cp.pending, cp.written = None, []
        await leader.save(cp)

    async def _delete_tail(self, cp: Checkpoint, tables: list[ClickHouseTable], leader: Guard) -> None:
        """Delete the rows after the checkpoint (``_version`` above its position's) from ``tables``."""
        floor = snapshot_version(cp.position, cp.version_base)
        for attempt in range(5):
            for table in tables:
                await leader.confirm()
                await self.target.execute(
                    f"ALTER TABLE {table.ch_table} DELETE WHERE _version > {floor}"
                    + (" SETTINGS mutations_sync = 2" if self.target.capabilities.mutations_sync else "")
                )
            if not self.target.capabilities.mutations_sync:
                await self._wait_mutations()
            # a mutation done is not proof enough (old servers could skip a part being merged): look
            left = []
            for table in tables:
                rows = await self.target.query(f"SELECT count() FROM {table.ch_table} WHERE _version > {floor}")
                if rows and int(rows[0][0] or 0) > 0:
                    left.append(table)
            if not left:
                break
            logger.warning(
                "%s: rows of the unconfirmed batch are still in %s after the delete (attempt %d); deleting again",
                self.replica,
                ", ".join(t.name for t in left),
                attempt + 1,
            )
            tables = left
        else:
            raise ReplicationError(
                f"{self.replica}: could not delete the unconfirmed tail (_version > {floor}) of "
                f"{', '.join(t.name for t in tables)} in {self.target.description}; the replay would duplicate rows "
                "of a collapsing table. Check the table's mutations (system.mutations) and run again"
            )

    async def _wait_mutations(self) -> None:
        deadline = time.monotonic() + 300
        db = quote_string(self.target_database)
        sql = f"SELECT count() FROM system.mutations WHERE database = {db} AND is_done = 0"
        while True:
            rows = await self.target.query(sql)
            if not rows or int(rows[0][0] or 0) == 0:
                return
            if time.monotonic() > deadline:
                raise ReplicationError(f"mutations on {self.target_database} did not finish within 300 s")
            await asyncio.sleep(0.05)  # polling the server's mutation state (not synchronisation between tasks)

    # -- versions ------------------------------------------------------------------------------------------
    def _version_of(self, end: BinlogPosition) -> int:
        return transaction_version(end, self._version_base)

    async def _check_version(self, end: BinlogPosition) -> int:
        """The version of the transaction ending at ``end``: a new version base when the source became another
        server, and an error (never lower versions written silently) when positions went backwards."""
        server = end.server_id
        if server and self._version_server and server != self._version_server:
            await self._rebase(end)
        elif server and not self._version_server:
            self._version_server = server
        version = self._version_of(end)
        if version < self._last_version:
            last = version_position(self._last_version)
            raise ReplicationError(
                f"{self.replica}: the binlog position went backwards on server_id {server or 'unknown'}: a transaction "
                f"ends at {end.file}:{end.offset} after one that ended at file number {last[0] - self._version_base}, "
                f"offset {last[1]}. The source's history changed under the replica (RESET MASTER, a restored backup, "
                "another server under the same server_id); writing on would give newer changes lower versions. "
                "Take a new snapshot (mybinlog snapshot, or drop the replica's checkpoint and its tables)"
            )
        self._last_version = version
        return version

    async def _rebase(self, end: BinlogPosition) -> None:
        """The source is another server now (a failover with the same GTID history): its file numbers continue
        above every version written so far."""
        floor = self._last_version
        for table in self.tables.values():
            rows = await self.target.query(f"SELECT max(_version) FROM {table.ch_table}")
            if rows and rows[0][0] not in (None, ""):
                floor = max(floor, int(rows[0][0] or 0))
        for changes in self._batch.values():
            for change in changes.values():
                floor = max(floor, change[3])
        base = version_file(floor) + 1 - binlog_file_number(end.file)
        logger.warning(
            "%s: the source is now the server with server_id %d (was %d): row versions continue above the last "
            "one written (version base %d -> %d)",
            self.replica,
            end.server_id,
            self._version_server,
            self._version_base,
            base,
        )
        self._version_base = base
        self._version_server = end.server_id
        self._last_version = floor

    # -- rows ----------------------------------------------------------------------------------------------
    def table(self, definition: _ddl.TableDef) -> ClickHouseTable:
        return ClickHouseTable(self, definition)

    def check_table(self, definition: _ddl.TableDef) -> None:
        """Raise when ClickHouse cannot hold ``definition`` (a type without a mapping...)."""
        clickhouse.create_table_sql(
            definition, database=self.target_database, engine=self.settings.engine, caps=self.target.capabilities
        )

    def rows(self, table: ClickHouseTable, event: RowsEvent, *, may_spill: bool = True) -> None:
        """One rows event of the transaction being read."""
        entry = rows_entry(table, event)  # every row of the event encoded in one pass
        if entry is None:
            return
        self._txn.append(entry)
        self._txn_bytes += entry_bytes(entry)
        # half the bound held here, the other half for the chunks written at the COMMIT (_spill.py)
        if self._txn_bytes * 2 > self.settings.max_bytes_in_transaction > 0 and may_spill and self._may_spill():
            if self._spill is None:
                self._spill = Spill()
            self._spill.add(self._txn)
            self._txn = []
            self._txn_bytes = 0

    def _may_spill(self) -> bool:
        """A transaction's rows may go to a spill file: for collapsing only where inserts take deduplication tokens
        (_spill.py). (Parts of XA transactions never do: the replicator says so.)"""
        return self.settings.engine != "collapsing" or self.target.capabilities.insert_deduplication_token

    def entry_bytes(self, entry: Entry) -> int:
        return entry_bytes(entry)

    def take(self) -> list[Entry]:
        """The entries of the transaction being read, taken out (a prepared XA transaction's, held until its
        COMMIT)."""
        entries, self._txn, self._txn_bytes = self._txn, [], 0
        return entries

    def extend(self, entries: Sequence[Entry]) -> None:
        """Entries held apart (an XA transaction's, at its COMMIT) join the transaction being read."""
        self._txn.extend(entries)

    def rollback(self) -> None:
        """Forget the transaction being read (its memory too)."""
        self._txn = []
        self._txn_bytes = 0
        spill, self._spill = self._spill, None
        if spill is not None:
            spill.close()

    @property
    def holds_transaction(self) -> bool:
        return bool(self._txn) or self._spill is not None

    async def commit(self, start: BinlogPosition | None, end: BinlogPosition) -> bool:
        """The transaction being read ended at ``end``: its rows join the batch. True when it must be flushed now (it
        spilled: its chunks go to the target at the next flush, and the checkpoint past it)."""
        self._txn_bytes = 0
        version = await self._check_version(end) if end.file or self._txn or self._spill else 0
        spill, self._spill = self._spill, None
        if spill is not None:  # a big transaction: its rows go to the target in chunks at the flush (_spill.py)
            spill.add(self._txn)
            self._txn = []
            self._spilled = (spill, start or end, end, version)
            return True
        if self._txn:
            rows, size = add_transaction(self._batch, self._txn, version)
            self._batch_rows += rows
            self._batch_bytes += size
            self._txn = []  # a big list's storage goes back too
        self._batch_end = end
        return False

    @property
    def buffered(self) -> tuple[int, int]:
        return self._batch_rows, self._batch_bytes

    @property
    def writing(self) -> bool:
        """A flush started without waiting is not settled yet."""
        return self._write is not None

    @property
    def writing_done(self) -> bool:
        """A flush started without waiting has finished (:meth:`settle` returns at once, or raises its error)."""
        return self._write is not None and self._write.done()

    # -- flush ---------------------------------------------------------------------------------------------
    async def flush(self, cp: Checkpoint, xa: dict[str, Any], leader: Guard, *, wait: bool = True) -> None:
        """Write the batch: one insert per table, then the checkpoint at its end (collapsing: announced first).

        The rows are encoded here; the writes run in a task when ``wait`` is false (the stream's size and time
        limits), while the stream reads and encodes the next batch. Everything else that writes waits for that task
        first (:meth:`settle`), so batches, checkpoints and DDL still reach ClickHouse one after the other."""
        await self.settle()
        spilled, self._spilled = self._spilled, None
        if spilled is not None:
            spill, start, end, version = spilled
            try:
                await self._write_now(cp, xa, leader, wait=True)  # the complete transactions before it
                await write_spilled(self, cp, leader, spill, start, end, version)
            finally:
                spill.close()
            self._batch_end = end
            await self._write_now(cp, xa, leader, wait=True)  # the checkpoint past the whole transaction
            give_memory_back()
            return
        await self._write_now(cp, xa, leader, wait=wait)

    async def _write_now(self, cp: Checkpoint, xa: dict[str, Any], leader: Guard, *, wait: bool) -> None:
        end = self._batch_end
        if end is None or (end == cp.position and not self._batch):
            return
        batch = self._batch
        tables = {name: self.tables[name] for name in batch if name in self.tables}  # only the tables it touches
        payloads = []
        for name, changes in batch.items():
            table = tables.get(name)
            if table is not None and changes:
                data, lines = table_payload(changes.values(), self.settings.engine)
                if lines:
                    payloads.append((name, table.ch_table, table.insert_columns, data, lines))
        self._batch = {}
        self._batch_rows = self._batch_bytes = 0
        write = self._write_batch(cp, end, payloads, batch, tables, self._version_base, xa, leader)
        if wait:
            await write
        else:
            self._write = asyncio.create_task(write, name=f"mybinlog write {self.replica}")

    async def _write_batch(
        self,
        cp: Checkpoint,
        end: BinlogPosition,
        payloads: list[tuple[str, str, list[str], bytes, int]],
        batch: dict[str, dict[Any, Change]],
        tables: dict[str, ClickHouseTable],
        version_base: int,
        xa: dict[str, Any],
        leader: Guard,
    ) -> None:
        collapsing = self.settings.engine == "collapsing"
        start = cp.position
        await leader.confirm()
        if collapsing and batch and cp.pending is None and self._replay_until is None:
            cp.pending = end
            cp.version_base = version_base
            await leader.save(cp)
            if _failpoints.ACTIVE:
                _failpoints.reached("flush.after_pending")
        skip, self._replay_skip = self._replay_skip, frozenset()
        skip = skip if end == self._replay_until else frozenset()  # the rest of a batch partly written before
        payloads = [p for p in payloads if p[0] not in skip]
        done: set[str] = set(skip)
        if collapsing and cp.pending == end:
            self._landed = (end, frozenset(p[0] for p in payloads) | skip, done, xa)
        written = 0
        for name, ch_table, columns, data, lines in payloads:
            token = None
            if collapsing and self.target.capabilities.insert_deduplication_token:
                token = f"{self.replica}:{start.file}:{start.offset}-{end.file}:{end.offset}:{name}"
            await leader.confirm()
            if _failpoints.ACTIVE:
                _failpoints.reached("flush.before_insert")
            await self.target.insert_tsv(ch_table, columns, data, dedup_token=token)
            done.add(name)
            leader.wrote(f"an insert into {ch_table}")
            if collapsing and token is None:  # no deduplication: a crash must know which inserts returned
                cp.written = sorted(done)
                await leader.save(cp)
            written += lines
            if _failpoints.ACTIVE:
                _failpoints.reached("flush.after_table")
        if _failpoints.ACTIVE:
            _failpoints.reached("flush.after_inserts")
        await leader.confirm()
        cp.position, cp.pending, cp.written, cp.xa = end, None, [], xa
        cp.version_base = version_base
        await leader.save(cp)
        self._landed = None
        leader.saves += 1
        status = self.status
        status.checkpoint_time = time.time()
        count_batch(status.rows_by_table, batch, tables)
        self._replay_until = None
        status.rows_written += written
        status.batches += 1
        if status.state == "retrying":
            status.state = "streaming"
        logger.info(
            "%s: checkpoint at %s after %d rows (epoch %d, seq %d)", self.replica, end, written, cp.epoch, cp.seq
        )
        if end.timestamp:
            status.lag_seconds = max(0.0, time.time() - end.timestamp)

    async def settle(self) -> None:
        """Wait for the writes of the previous batch (:meth:`flush` without ``wait``), raising their error."""
        write, self._write = self._write, None
        if write is not None:
            await write

    async def reset(self, *, cancel: bool = False) -> None:
        """Forget everything not written (before starting again from the checkpoint, or when the run ends): let the
        previous batch's writes finish (cancel them when the run itself is cancelled), whatever their outcome; the
        checkpoint says what is written."""
        write, self._write = self._write, None
        if write is not None:
            if cancel:
                write.cancel()
            await asyncio.wait([write])
            if not write.cancelled() and write.exception() is not None:
                logger.debug("%s: the writes of the last batch failed: %s", self.replica, write.exception())
        self._batch.clear()
        self.rollback()
        spilled, self._spilled = self._spilled, None
        if spilled is not None:
            spilled[0].close()
        self._batch_rows = self._batch_bytes = 0
        self._batch_end = None
        self._replay_until = None
        self._replay_skip = frozenset()

    # -- DDL -----------------------------------------------------------------------------------------------
    def _ch(self, name: str) -> str:
        return f"{quote_ident(self.target_database)}.{quote_ident(name)}"

    async def create_table(self, definition: _ddl.TableDef) -> None:
        sql = clickhouse.create_table_sql(
            definition,
            database=self.target_database,
            engine=self.settings.engine,
            caps=self.target.capabilities,
        )
        await self.target.execute(sql)

    async def drop_table(self, name: str) -> None:
        await self.target.execute(f"DROP TABLE IF EXISTS {self._ch(name)}")

    async def rename_table(self, table: ClickHouseTable, new: _ddl.TableDef) -> None:
        old_name = table.name
        src, dst = self._ch(old_name), self._ch(new.name)
        try:
            await self.target.execute(f"RENAME TABLE {src} TO {dst}")
        except TargetError:
            rows = await self.target.query(
                f"SELECT name FROM system.tables WHERE database = {quote_string(self.target_database)} "
                f"AND name IN ({quote_string(old_name)}, {quote_string(new.name)})"
            )
            names = {r[0] for r in rows}
            if not (new.name in names and old_name not in names):
                raise
        table.define(new)

    def redefine(self, table: ClickHouseTable, definition: _ddl.TableDef) -> None:
        """The table's MySQL definition changed (an ALTER applied): new encoders."""
        table.define(definition)

    async def truncate_table(self, table: ClickHouseTable) -> None:
        try:
            await self.target.execute(f"TRUNCATE TABLE {table.ch_table}")
        except TargetError:
            await self.target.execute(f"DROP TABLE IF EXISTS {table.ch_table}")
            await self.create_table(table.definition)

    async def alter_table(
        self,
        table: ClickHouseTable,
        old: _ddl.TableDef,
        new: _ddl.TableDef,
        action: Any,
        statement_time: dt.datetime | None,
    ) -> str | None:
        """Apply one ALTER action (``old`` -> ``new``); a reason when ClickHouse cannot follow."""
        statements = clickhouse.alter_sql(
            old,
            new,
            action,
            database=self.target_database,
            engine=self.settings.engine,
            caps=self.target.capabilities,
            statement_time=statement_time,
        )
        if isinstance(statements, str):  # a reason why ClickHouse cannot follow
            return statements
        for sql in statements:
            try:
                await self.target.execute(sql)
            except TargetError:
                if not await self._matches(table, new):
                    raise
        return None

    async def _matches(self, table: ClickHouseTable, new: _ddl.TableDef) -> bool:
        """Whether the ClickHouse table already has the columns of ``new`` (a DDL replayed after a crash)."""
        rows = await self.target.query(f"DESCRIBE TABLE {table.ch_table}")
        have = {r[0] for r in rows if r[0] not in clickhouse.META_COLUMNS}
        return have == {c.name for c in new.columns}

    # -- the initial load -----------------------------------------------------------------------------------
    async def prepare_load(self, names: Sequence[str], leftovers: Sequence[str], leader: Guard) -> None:
        """A first load writes into tables of its own: existing rows would be mixed with the load's. What an
        unfinished load left is dropped."""
        if not leftovers:
            await self._check_empty(names)
        for name in sorted(leftovers):
            await leader.confirm()
            await self.drop_table(name)

    async def _check_empty(self, names: Sequence[str]) -> None:
        if not names:
            return
        rows = await self.target.query(
            f"SELECT name FROM system.tables WHERE database = {quote_string(self.target_database)}"
        )
        full: list[str] = []
        for (name,) in rows:
            if name is not None and name in names:
                count = await self.target.query(f"SELECT count() FROM {self._ch(name)}")
                if count and int(count[0][0] or 0) > 0:
                    full.append(name)
        if full:
            raise ReplicationError(
                f"{self.replica}: ClickHouse table(s) {', '.join(full)} in {self.target_database} already hold rows, "
                f"and replica {self.replica!r} has no checkpoint: an initial load needs empty tables (rows deleted at "
                "the source would stay). Drop them, or replicate into another --target-database; if a snapshot of this "
                "replica was interrupted, run `mybinlog snapshot` again instead (it cleans up after itself)"
            )

    async def existing_tables(self) -> set[str]:
        return {
            row[0]
            for row in await self.target.query(
                f"SELECT name FROM system.tables WHERE database = {quote_string(self.target_database)}"
            )
            if row[0] is not None
        }

    def load_payload(self, table: ClickHouseTable, rows: list[tuple[Any, ...]], position: BinlogPosition) -> bytes:
        """Rows the initial load read (``SELECT`` values) as what :meth:`load_write` writes: TabSeparated lines
        with the meta columns of a row written at ``position`` (its snapshot version)."""
        version = snapshot_version(position)
        suffix = f"\t1\t{version}\t0\n" if self.settings.engine == "replacing_is_deleted" else f"\t1\t{version}\n"
        encode = table.select_encoder
        return "".join([encode(row) + suffix for row in rows]).encode("utf-8", "surrogateescape")

    async def load_write(self, table: ClickHouseTable, payload: bytes) -> None:
        await self.target.insert_tsv(table.ch_table, table.insert_columns, payload)
