"""The replicator: one MySQL database (or some of its tables) materialized into a ClickHouse database.

::

    source ──binlog──> BinlogClient (shared) ──> Binlog consumer ──> Replicator
                                                                    ├─ transaction buffer (last change per key)
                                                                    ├─ batch buffer (rows/bytes/time limits)
                                                                    ├─ DDL: flush, translate, apply, checkpoint
                                                                    └─ flush: insert per table, then checkpoint

Exactly-once result (docs/replication.md): every row carries ``_version`` derived from the position where its
transaction ends (:mod:`._version`), batches end at transaction boundaries, and the checkpoint is written only
after the batch it covers. A replay after a crash writes the same rows with the same versions, which a
ReplacingMergeTree keeps once. Collapsing tables cannot absorb duplicates, so their batches are announced in the
checkpoint first (``pending``) and replayed exactly: with insert deduplication tokens derived from the position
range where the server has them, or by deleting the unconfirmed tail before the replay where it has not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from anyio import EndOfStream

from .. import _failpoints, clickhouse
from .. import ddl as _ddl
from ..clickhouse import (
    Checkpoint,
    Target,
    binlog_file_number,
    latest_seq,
    load_checkpoint,
    make_seq,
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
from ..errors import (
    BinlogDetachedError,
    ConfigurationError,
    MybinlogError,
    ReplicaLockedError,
    ReplicationError,
    SourceConnectionError,
    SourceError,
    TargetConnectionError,
    TargetError,
    TargetUnavailableError,
    TransactionInterruptedError,
)
from ..protocol._events import Event, GtidEvent, MariadbGtidEvent, QueryEvent, RowsEvent, XaPrepareEvent
from ..protocol._position import BinlogPosition
from ..protocol._transaction import XaStatement, Xid, parse_xa_statement
from ..sharing import Binlog, BinlogClient, get_binlog_client
from ..source._dsn import DSN
from ..source._lease import ReplicaLease, lease_name
from ..source._session import SourceConnection, select_scope
from ..source._sql import quote_mysql_ident
from ._batch import Change, Entry, add_transaction, rows_entry, table_payload
from ._load import copy_tables
from ._observe import _LoadProgress, count_batch, replica_snapshot
from ._schema import SchemaChanges, _Table
from ._settings import ReplicaStatus, ReplicationSettings
from ._spill import Spill, entry_bytes, give_memory_back, write_spilled
from ._startup import connect_source, replica_name
from ._watch import SourceWatch
from ._xa import XaHold, prepared_at, read_prepared
from ._xa import reached as _reached

__all__ = ["ReplicationSettings", "Replicator"]

logger = logging.getLogger("mybinlog.replication")


class _LoadInterrupted(Exception):
    """The source went away during the initial load (a clean shutdown, a restart, a network cut): the load starts
    over once it is back, within ``source_retry_seconds`` (caught in ``_run``; the cause is the
    :class:`SourceConnectionError`)."""


class _NewTerm(Exception):
    """The replica lock was taken again after its connection broke and another process led meanwhile (or the initial
    load was running): the replicator starts again from the newest checkpoint under a new epoch (caught in
    ``_run``)."""


# ClickHouse errors that may pass by themselves (the server restarting, overloaded, a timeout): restart from the
# checkpoint and try again. Anything else (a wrong type, a missing column) is reported at once.
_RETRIABLE_TARGET_CODES = frozenset(
    {
        3,  # UNEXPECTED_END_OF_FILE (a connection cut in the middle of a request)
        159,  # TIMEOUT_EXCEEDED
        164,  # READONLY
        202,  # TOO_MANY_SIMULTANEOUS_QUERIES
        203,  # NO_FREE_CONNECTION
        209,  # SOCKET_TIMEOUT
        210,  # NETWORK_ERROR
        236,  # ABORTED
        241,  # MEMORY_LIMIT_EXCEEDED
        242,  # TABLE_IS_READ_ONLY
        252,  # TOO_MANY_PARTS
        319,  # UNKNOWN_STATUS_OF_INSERT
        425,  # SYSTEM_ERROR
    }
)


def _target_retriable(exc: BaseException) -> bool:
    if isinstance(exc, TargetConnectionError):
        return True
    return isinstance(exc, TargetError) and exc.code in _RETRIABLE_TARGET_CODES


class Replicator(SchemaChanges):
    """Materialize ``database`` of the source into ``target_database`` of a ClickHouse :class:`Target`.

    ``await replicator.run()`` streams until :meth:`stop` (clean: flushes and checkpoints) or an error;
    ``run(until_caught_up=True)`` returns once everything the source had written when it started is replicated.
    Several replicators of one source share one binlog connection (the same :class:`BinlogClient`).

    One process writes a replica at a time: the replicator holds a lock on the source named after the target and
    the replica (:mod:`._lease`) and raises :class:`ReplicaLockedError` when another process holds it. A failing
    ClickHouse is retried (``target_retry_seconds``) by restarting from the checkpoint, which is exact whatever was
    written before the failure; an unreachable source is retried by the binlog stream (``source_retry_seconds``).
    """

    def __init__(
        self,
        source: str | DSN,
        target: Target,
        *,
        database: str,
        tables: Collection[str] | None = None,
        target_database: str | None = None,
        replica: str | None = None,
        settings: ReplicationSettings | None = None,
        client: BinlogClient | None = None,
    ) -> None:
        self.dsn = source if isinstance(source, DSN) else DSN.parse(source)
        self.target = target
        self.database = database
        self.table_filter = frozenset(tables) if tables is not None else None
        self.target_database = target_database or database
        self.replica = replica_name(replica, database)  # refuses "" and control characters
        self.settings = settings or ReplicationSettings()
        self.client = client
        self._tables: dict[str, _Table] = {}
        self._checkpoint: Checkpoint | None = None
        self._batch: dict[str, dict[Any, Change]] = {}  # table -> key -> net change (_batch.py)
        self._txn: list[Entry] = []
        self._txn_bytes = 0  # what self._txn holds, about (_spill.entry_bytes)
        self._spill: Spill | None = None  # the transaction's rows beyond max_bytes_in_transaction (_spill.py)
        self._write: asyncio.Task[None] | None = None  # the previous batch's inserts and checkpoint, still running
        self._batch_rows = 0
        self._batch_bytes = 0
        self._batch_started: float | None = None
        self._batch_end: BinlogPosition | None = None
        self._replay_until: BinlogPosition | None = None
        # collapsing: the announced batch being written (its end, its tables, the tables whose insert returned), kept
        # across a ClickHouse failure within this process so that its replay can be exact (see _prepare_replay)
        self._landed: tuple[BinlogPosition, frozenset[str], set[str], dict[str, Any]] | None = None
        self._replay_skip: frozenset[str] = frozenset()
        self._stop = asyncio.Event()
        self._ddl_dirty = False
        self._binlog: Binlog | None = None
        self._lease: ReplicaLease | None = None
        self._version_base = 0
        self._version_server = 0  # the server whose file numbers the versions use (0: not known yet)
        self._last_version = 0  # the version of the last transaction end seen: they never go backwards
        self._saves = 0  # checkpoints saved by this replicator (progress, for the retry budget)
        self._epoch = 0  # the leader epoch this replicator claimed (docs/ha.md); 0: none yet
        self._term = 0  # the lease term (ReplicaLease.term) the epoch was claimed in
        self._loading_now = False  # the initial load is running (a lock taken again then restarts it)
        self._load_connects = 0  # initial loads that reached the source (a loss after one is a new outage)
        self._watch: SourceWatch | None = None
        self.status = ReplicaStatus(self.replica, database, self.target_database, "", None)
        self.flavor = "mariadb"
        self._xa = XaHold(self.settings.max_bytes_of_prepared_xa)  # prepared XA transactions (_xa.py)
        self._xa_part: XaStatement | None = None  # the transaction being read is a part of an XA transaction
        self._gtid = ""  # the GTID of the transaction being read
        self._txn_start: BinlogPosition | None = None  # the boundary before the transaction being read

    def __repr__(self) -> str:
        return f"<Replicator {self.replica!r} {self.dsn.display}/{self.database} -> {self.target.description}>"

    # -- public --------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask :meth:`run` to finish: it flushes the complete transactions it holds, checkpoints and returns."""
        self._stop.set()

    @property
    def checkpoint(self) -> Checkpoint | None:
        """The last checkpoint loaded or saved."""
        return self._checkpoint

    @property
    def binlog(self) -> Binlog | None:
        """The replica's consumer of the shared binlog (None before streaming starts and after the end)."""
        return self._binlog

    def oldest_needed(self, cp: Checkpoint) -> BinlogPosition:
        """The oldest binlog position a restart needs: the checkpoint's, or the start of a prepared XA transaction
        it has passed (its rows are read again from there at its COMMIT; _xa.py)."""
        return self._xa.oldest_needed(cp.position)

    def snapshot(self) -> dict[str, Any]:
        """The status as a JSON-able dict with the values of now (lag, checkpoint age, connection; _observe.py)."""
        return replica_snapshot(self)

    async def run(self, *, until_caught_up: bool = False) -> None:
        cancelled = False
        try:
            async with SourceWatch(self, self.settings.source_check_seconds) as self._watch:
                await self._run(until_caught_up)
        except BaseException as exc:
            self.status.state = "failed"
            if isinstance(exc, Exception):
                self.status.error = str(exc)
            else:
                cancelled = True  # cancelled or interrupted: so is a write still in flight
            raise
        else:
            self.status.state = "stopped"
        finally:
            await self._drop_write(cancel=cancelled)
            await self._close_binlog()
            lease, self._lease = self._lease, None
            if lease is not None:
                await asyncio.shield(lease.release())

    # -- startup -------------------------------------------------------------------------------------------
    async def _run(self, until_caught_up: bool) -> None:
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
        first = await connect_source(self.dsn, s.source_retry_seconds, self._stop)  # waited for, as a reconnect
        if first is None:
            return  # stopped while waiting for the source
        async with first as src:  # checks the source's binlog settings early
            self.flavor = src.flavor
            goal = await src.current_position() if until_caught_up and not s.standby else None
        lease = ReplicaLease(
            self.dsn,
            lease_name(await target_identity(self.target), s.meta_database, self.replica),
            replica=self.replica,
            retry_seconds=s.source_retry_seconds,
            lease_seconds=None if s.engine == "collapsing" else s.lease_seconds,
        )
        self._lease = lease
        if s.standby:
            self.status.state = "standby"
            self.status.leader = False
        if not await lease.acquire(wait=s.standby, stop=self._stop):
            return  # stopped while waiting as a standby
        if until_caught_up and goal is None:  # a standby catches up with what the source has when it takes over
            async with await SourceConnection.connect(self.dsn) as src:
                goal = await src.current_position()
        if self.client is None:
            self.client = get_binlog_client(
                self.dsn,
                max_flush_milliseconds_in_binlog_dispatcher=s.max_flush_milliseconds_in_binlog_dispatcher,
                stream_options=s.stream_options(),  # reconnects, heartbeats, the half-open bound
            )
        failing_since: float | None = None
        saves_then = -1
        delay = 0.2
        load_failing_since: float | None = None  # the source went away during the initial load (an outage)
        load_delay = 0.2
        connects_then = -1
        while True:
            try:
                await self._attempt(goal)
                return
            except (_NewTerm, TransactionInterruptedError) as exc:  # the latter: a source failover mid-transaction
                logger.warning("%s: %s; starting again from the checkpoint", self.replica, exc)
                await self._reset()
                continue
            except _LoadInterrupted as interrupted:
                lost = interrupted.__cause__
                assert isinstance(lost, SourceConnectionError)
                if self._lease is not None and self._lease.failure is lost:
                    raise lost from None  # the replica lock waited for the source for the whole budget already
                now = time.monotonic()
                if load_failing_since is None or self._load_connects != connects_then:  # a new outage
                    load_failing_since, connects_then, load_delay = now, self._load_connects, 0.2
                if self._stop.is_set() or now - load_failing_since + load_delay > s.source_retry_seconds:
                    raise SourceConnectionError(
                        f"{self.replica}: the source {self.dsn.display} went away during the initial load and stayed "
                        f"unreachable for {s.source_retry_seconds:g} s (--source-retry-seconds; last error: {lost}); "
                        "run again: the load starts over",
                        errno=lost.errno,
                    ) from lost
                self.status.retries += 1
                self.status.state = "retrying"
                logger.warning("%s: the source went away during the initial load (%s); starting the load over when it "
                               "is back (retrying in %.1f s)", self.replica, lost, load_delay)  # fmt: skip
                await self._reset()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(load_delay):
                        await self._stop.wait()  # a backoff that a stop request cuts short
                load_delay = min(load_delay * 2, 5.0)
                continue
            except MybinlogError as exc:
                if not _target_retriable(exc) or self._stop.is_set():
                    lost = await self._lease_lost(exc)
                    if lost is None:
                        raise
                    raise lost from exc
                now = time.monotonic()
                if failing_since is None or self._saves != saves_then:  # a new outage (progress since the last)
                    failing_since, saves_then, delay = now, self._saves, 0.2
                if now - failing_since + delay > s.target_retry_seconds:
                    raise TargetUnavailableError(
                        f"{self.replica}: ClickHouse at {self.target.description} kept failing for "
                        f"{s.target_retry_seconds:g} s (last error: {exc}); nothing is lost: run again to resume "
                        f"from the checkpoint"
                    ) from exc
                self.status.retries += 1
                self.status.state = "retrying"
                logger.warning(
                    "%s: ClickHouse failed (%s); starting again from the checkpoint in %.1f s", self.replica, exc, delay
                )
                await self._reset()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._stop.wait()  # a backoff that a stop request cuts short
                delay = min(delay * 2, 10.0)

    async def _attempt(self, goal: BinlogPosition | None) -> None:
        """Load the checkpoint (making the initial load when there is none or it did not finish) and stream."""
        s = self.settings
        await self.target.execute(f"CREATE DATABASE IF NOT EXISTS {quote_ident(self.target_database)}")
        cp = await load_checkpoint(self.target, self.replica, meta_database=s.meta_database, include_loading=True)
        await self._claim_epoch(cp)
        if cp is None or cp.loading is not None:
            self._loading_now = True
            try:
                cp = await self._initial_load(cp)
            except SourceConnectionError as exc:
                raise _LoadInterrupted(str(exc)) from exc  # starts over within source_retry_seconds (_run)
            finally:
                self._loading_now = False
        self._checkpoint = cp
        self._tables = {}
        for name, text in cp.tables.items():
            if name not in cp.stopped:
                self._tables[name] = _Table(self, _ddl.parse_create_table(text, self.database))
        self.status.stopped_tables = dict(cp.stopped)
        self._xa.load(cp.xa)
        self._version_base = cp.version_base
        self._version_server = cp.position.server_id
        self._last_version = self._version_of(cp.position) if cp.position.file else 0
        if cp.pending is not None:
            await self._prepare_replay(cp)
            self._last_version = self._version_of(cp.position) if cp.position.file else 0
        if self._stop.is_set():
            return
        if self._watch is not None:
            await self._watch.check()  # warns before streaming when the checkpoint's binlog is at risk
        self.status.state = "streaming"
        self.status.position = str(cp.position)
        await self._stream(cp, goal)

    async def _reset(self) -> None:
        """Forget everything after the checkpoint (before starting again from it)."""
        await self._drop_write()
        await self._close_binlog()
        self._batch.clear()
        self._drop_txn()
        self._xa_part = None
        self._batch_rows = self._batch_bytes = 0
        self._batch_started = None
        self._batch_end = None
        self._replay_until = None
        self._replay_skip = frozenset()
        self._ddl_dirty = False

    async def _close_binlog(self) -> None:
        binlog, self._binlog = self._binlog, None
        if binlog is not None:
            with contextlib.suppress(MybinlogError):
                await asyncio.shield(binlog.aclose())

    # -- the lease and the leader epoch (docs/ha.md) -------------------------------------------------------
    async def _confirm_lease(self) -> None:
        """Before every write: the lease is still ours, and still in the term whose epoch this replicator claimed
        (the lock taken again after its connection broke is a new term: see :meth:`_retaken`)."""
        lease = self._lease
        if lease is None:
            return
        await lease.confirm()
        if lease.term != self._term and self._term:
            await self._retaken(lease.term)

    async def _retaken(self, term: int) -> None:
        """The lock was taken again after its connection broke (the source restarted, a network cut). Nobody can have
        written the replica meanwhile unless a checkpoint of a later epoch is there now (every leader saves its epoch
        before any data): then, or in the middle of the initial load, start again from the newest checkpoint;
        otherwise go on with the next epoch, which the next save carries (it outranks a claim another process may
        have had in flight while it held the lock in between)."""
        if self._loading_now:
            raise _NewTerm("took its replica lock again during the initial load")
        seen = seq_epoch(await latest_seq(self.target, self.replica, meta_database=self.settings.meta_database))
        if seen > self._epoch:
            raise _NewTerm(f"took its replica lock again, but another process led the replica meanwhile (epoch {seen})")
        self._term = term
        self._epoch = max(seen, self._epoch) + 1
        self.status.epoch = self._epoch
        logger.warning(
            "%s: took its replica lock again and no other process wrote meanwhile: going on as epoch %d",
            self.replica,
            self._epoch,
        )

    def _check_lease(self) -> None:
        """On every turn of the stream loop: stop at once when the keep-alive found the lease lost, also when there
        is nothing to write."""
        lease = self._lease
        if lease is not None and lease.failure is not None:
            raise lease.failure

    def _wrote(self, what: str) -> None:
        """After a write: say so when it finished after the lease may have expired (the process was paused or hung
        while the write was in flight). Such a write may have landed after a standby took over: harmless (docs/ha.md:
        rows carry the versions the new leader writes too, a checkpoint row the lower epoch), but reported."""
        lease = self._lease
        if lease is not None and lease.maybe_expired():
            logger.warning(
                "%s: %s finished %.1f s after the last confirmation of the replica lease (lease %g s): it was in "
                "flight while this process was paused, hung or cut off, and may have landed after a takeover",
                self.replica,
                what,
                lease.since_confirmed(),
                lease.lease_seconds or 0,
            )

    async def _save(self, cp: Checkpoint) -> None:
        """Save a checkpoint after confirming the lease (every checkpoint save goes through here), in this
        replicator's epoch, after the writes of the previous batch."""
        await self._settle()
        await self._save_now(cp)

    async def _save_now(self, cp: Checkpoint) -> None:
        await self._confirm_lease()
        if cp.epoch < self._epoch:
            cp.seq = make_seq(self._epoch, 0)
        if _failpoints.ACTIVE:
            _failpoints.reached("checkpoint.before_save")
        await save_checkpoint(self.target, cp, meta_database=self.settings.meta_database)
        self._wrote(f"the checkpoint save of epoch {cp.epoch} (seq {cp.seq})")

    async def _claim_epoch(self, newest: Checkpoint | None) -> None:
        """Claim the leader epoch above every checkpoint row of the replica, once per lease term, and save it before
        any data is written (the initial load's "loading" row is that save when there is no checkpoint).

        ``newest`` is the replica's newest row. A later epoch than ours within our term means another process led
        meanwhile (it can only have come from a process that held the lock): stop.
        """
        lease = self._lease
        term = lease.term if lease is not None else 0
        seen = newest.epoch if newest is not None else 0
        if self._epoch and term == self._term:  # a retry within the term (ClickHouse failed): the epoch stays ours
            if seen > self._epoch:
                raise ReplicaLockedError(
                    f"replica {self.replica!r}: another process saved a checkpoint of leader epoch {seen} while this "
                    f"one (epoch {self._epoch}) held the lock; stopping so that two processes never write the replica"
                )
            return
        first = not self._epoch
        self._epoch, self._term = seen + 1, term
        self.status.epoch = self._epoch
        self.status.leader = True
        if newest is not None:
            newest.seq = make_seq(self._epoch, 0)
            if newest.loading is None:
                await self._save(newest)  # the claim: the checkpoint as it was, under the new epoch
        waited = lease.waited if lease is not None and first else 0.0
        if self.settings.standby and first:
            logger.info(
                "%s: took over replica %r (epoch %d) after %.1f s as a standby, at %s",
                self.replica,
                self.replica,
                self._epoch,
                waited,
                newest.position if newest is not None and newest.loading is None else "its initial load",
            )
        else:
            logger.info(
                "%s: leads replica %r (epoch %d)%s",
                self.replica,
                self.replica,
                self._epoch,
                "" if first else " in a new lease term",
            )

    async def _lease_lost(self, exc: MybinlogError) -> ReplicaLockedError | None:
        """The lost lease behind ``exc``, if that is what lies behind it (a former leader's write that failed after a
        standby took over, e.g. an ALTER the new leader had already applied): reported instead (exit code 4)."""
        lease = self._lease
        if lease is None or isinstance(exc, ReplicaLockedError):
            return None
        if isinstance(lease.failure, ReplicaLockedError):
            return lease.failure
        if lease.maybe_expired():  # stalled for longer than the lease: is the lock still ours?
            try:
                await lease.confirm()
            except ReplicaLockedError as lost:
                return lost
            except MybinlogError:
                return None
        return None

    async def _initial_load(self, previous: Checkpoint | None) -> Checkpoint:
        """Copy the tables that exist now, consistently with a binlog position, and return the first checkpoint.

        Crash-safe: before it writes anything, the checkpoint row says the load is running and names every table it
        may write (with those of an earlier unfinished load). A load is never continued: the next start drops those
        tables and loads again, so rows deleted at the source meanwhile cannot stay, and a DDL in between is simply
        part of the new load.
        """
        s = self.settings
        self.status.state = "initial load"
        leftovers = set(previous.loading or ()) if previous is not None else set()
        async with await SourceConnection.connect(self.dsn) as src:
            self._load_connects += 1  # the source is there: a later loss is a new outage (_run's retry budget)
            watermark = await src.current_position()  # before the schemas: DDL after it is replayed
            scope = await self._tables_in_scope(src)  # name -> (CREATE TABLE text, its definition)
            names = list(scope)
            marker = Checkpoint(
                self.replica,
                BinlogPosition("", 4),
                source=self.dsn.display,
                loading=sorted(leftovers | set(names)),
                seq=previous.seq if previous is not None else make_seq(self._epoch, 0),
            )
            if not leftovers:
                await self._check_empty_targets(names)
            await self._save(marker)
            for name in sorted(leftovers):
                await self._confirm_lease()
                await self.target.execute(f"DROP TABLE IF EXISTS {self._ch(name)}")
            if leftovers:
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
                for text in texts.values():
                    await self._confirm_lease()
                    await self._create_ch_table(_ddl.parse_create_table(text, self.database))
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
            version = snapshot_version(start)
            progress = _LoadProgress(self.replica, len(names), await src.estimated_rows(self.database, names))
            self.status.load_estimate = progress.estimate
            definitions = {t: scope[t][1] for t in names}
            total = await copy_tables(self, src, names, definitions, _meta_suffix(s.engine, 1, version), progress)
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

    async def _tables_in_scope(self, src: SourceConnection) -> dict[str, tuple[str, _ddl.TableDef]]:
        """The tables to load (name -> CREATE TABLE text and definition), after checking that the source user can
        read each of them and that ClickHouse can hold them: a table in scope that cannot be read is an error naming
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
        names = [t for t in visible if self._wanted(t)]
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
        for t in names:
            try:
                await src.query(f"SELECT 1 FROM {quote_mysql_ident(db)}.{quote_mysql_ident(t)} LIMIT 0")
                text = await src.show_create_table(db, t)
            except MybinlogError as exc:
                problems.append(
                    f"{db}.{t}: cannot be read ({exc}): "
                    f"GRANT SELECT ON {quote_mysql_ident(db)}.{quote_mysql_ident(t)} TO '{user}'@'<host>'"
                )
                continue
            try:
                definition = _ddl.parse_create_table(text, db)
                clickhouse.create_table_sql(
                    definition,
                    database=self.target_database,
                    engine=self.settings.engine,
                    caps=self.target.capabilities,
                )
                found[t] = (text, definition)
            except MybinlogError as exc:
                problems.append(
                    f"{db}.{t}: cannot be replicated into ClickHouse ({exc}); leave it out with --tables, or change it"
                )
        if problems:
            raise ReplicationError(
                f"{self.replica}: {len(problems)} table(s) in scope cannot be replicated, nothing was written:\n  "
                + "\n  ".join(problems)
            )
        return found

    async def _check_empty_targets(self, names: Sequence[str]) -> None:
        """A first load writes into tables of its own: existing rows would be mixed with the load's."""
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

    def _ch(self, name: str) -> str:
        return f"{quote_ident(self.target_database)}.{quote_ident(name)}"

    async def _create_ch_table(self, definition: _ddl.TableDef) -> None:
        sql = clickhouse.create_table_sql(
            definition,
            database=self.target_database,
            engine=self.settings.engine,
            caps=self.target.capabilities,
        )
        await self.target.execute(sql)

    async def _prepare_replay(self, cp: Checkpoint) -> None:
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
                await self._save(cp)
                return
        if cp.pending.server_id == cp.position.server_id:
            logger.info("%s: replaying the batch ending at %s for the tables other than %s", self.replica, cp.pending,
                        ", ".join(sorted(done)) or "none")  # fmt: skip
            self._replay_until, self._replay_skip = cp.pending, frozenset(done)  # the rest of the same batch
            await self._delete_tail(cp, [t for n, t in self._tables.items() if n not in done])
            return
        # the batch came from another server (a failover): remove the unconfirmed tail, then replay normally. Rows a
        # snapshot or the initial load wrote at the checkpoint's position have its version with the low bit: kept.
        logger.info("%s: a batch ending at %s may be partly written: deleting rows with _version > %d, replaying it",
                    self.replica, cp.pending, snapshot_version(cp.position, cp.version_base))  # fmt: skip
        await self._delete_tail(cp, list(self._tables.values()))
        cp.pending, cp.written = None, []
        await self._save(cp)

    async def _delete_tail(self, cp: Checkpoint, tables: list[_Table]) -> None:
        """Delete the rows after the checkpoint (``_version`` above its position's) from ``tables``."""
        floor = snapshot_version(cp.position, cp.version_base)
        for attempt in range(5):
            for table in tables:
                await self._confirm_lease()
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

    def _wanted(self, table: str) -> bool:
        return self.table_filter is None or table in self.table_filter

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
        for table in self._tables.values():
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

    # -- streaming -----------------------------------------------------------------------------------------
    async def _stream(self, cp: Checkpoint, goal: BinlogPosition | None) -> None:
        s = self.settings
        assert self.client is not None
        binlog = await self.client.create_binlog(
            name=self.replica,
            position=cp.position,
            databases=[self.database],
            max_bytes_in_binlog_queue=s.max_bytes_in_binlog_queue,
            max_milliseconds_to_wait_in_binlog_queue=s.max_milliseconds_to_wait_in_binlog_queue,
        )
        self._binlog = binlog
        committed = self._txn_start = binlog.position
        if goal is not None and _reached(committed, goal):
            return
        flush_s = s.max_flush_data_time / 1000
        while not self._stop.is_set():
            self._check_lease()
            if self._write is not None and self._write.done():
                await self._settle()  # the previous batch is written (or its error raised here)
            timeout = flush_s
            if self._batch_started is not None:
                timeout = max(0.0, self._batch_started + flush_s - time.monotonic())
            try:
                event = await binlog.read_event(timeout=max(0.001, timeout))
            except BinlogDetachedError as exc:
                logger.warning("%s: %s; reopening", self.replica, exc)
                self.status.detaches += 1
                self._drop_txn()
                self._xa_part = None
                binlog = self._binlog = await binlog.reopen()
                committed = self._txn_start = binlog.position
                continue
            except EndOfStream:  # a non-blocking source ended
                break
            except SourceError:
                # the source is gone for longer than the budget (or refuses): keep what is complete, then report
                if self._replay_until is None:
                    with contextlib.suppress(MybinlogError):
                        await self._flush()
                raise
            if event is not None:
                await self._handle(event)
                pos = binlog.position
                if pos is not committed and pos != committed:
                    committed = pos
                    await self._commit_transaction(pos)
                    if goal is not None and _reached(pos, goal):
                        break
                    if self._ddl_dirty or self._must_flush():
                        dirty, self._ddl_dirty = self._ddl_dirty, False
                        await self._flush(wait=dirty)
                    continue
            elif self._batch_started is None and self._write is None:
                self.status.idle_at = time.time()  # nothing to write: not behind (the lag, _observe.py)
            if (
                self._batch_started is not None
                and self._replay_until is None  # a replayed batch is flushed exactly where it ended before
                and time.monotonic() - self._batch_started >= flush_s
            ):
                await self._flush(wait=False)
        if self._replay_until is None:
            await self._flush()
        else:
            logger.info(
                "%s: stopping in the middle of replaying the batch that ends at %s; the next start replays it again",
                self.replica,
                self._replay_until,
            )

    def _must_flush(self) -> bool:
        s = self.settings
        if self._replay_until is not None:
            return False  # replaying an announced batch: flush exactly at its end (see _commit_transaction)
        return (
            (s.max_rows_in_buffer and self._batch_rows >= s.max_rows_in_buffer)
            or (s.max_bytes_in_buffer and self._batch_bytes >= s.max_bytes_in_buffer)
            or s.max_rows_in_buffer == 0
        )

    async def _handle(self, event: Event) -> None:
        if isinstance(event, RowsEvent):
            if event.schema != self.database:
                return
            table = self._tables.get(event.table_name)
            if table is None:
                await self._unknown_table(event.table_name)
                return
            self._rows(table, event)
        elif isinstance(event, QueryEvent):
            if event.query.lstrip()[:3].upper() == "XA ":
                self._xa_part = parse_xa_statement(event.query)  # START/END inside, COMMIT/ROLLBACK alone
                return
            await self._query(event)
            if self._ddl_dirty:
                self._xa.forget_rows()  # encoded for the tables before the DDL: read again at their COMMIT
        elif isinstance(event, XaPrepareEvent):
            xid = Xid(event.gtrid, event.bqual, event.format_id)
            self._xa_part = XaStatement("commit", xid, True) if event.one_phase else XaStatement("prepare", xid)
        elif isinstance(event, (GtidEvent, MariadbGtidEvent)):
            self._gtid = "" if event.gtid is None else str(event.gtid)

    async def _unknown_table(self, name: str) -> None:
        """Rows of a table in scope that the replica does not have: it was not readable at the initial load (a
        missing grant) or its creation was missed; never drop its changes silently."""
        cp = self._checkpoint
        if cp is None or not self._wanted(name) or name in cp.stopped:
            return
        await self._settle()  # the checkpoint of the batch being written must not carry the stop already
        await self._stop_table(
            name,
            "",
            "rows arrive for it, but the replica does not have it: it was not readable when the replica was loaded "
            f"(GRANT SELECT ON {quote_mysql_ident(self.database)}.* TO the source user) or its CREATE TABLE came "
            "before the replica's start",
        )

    def _rows(self, table: _Table, event: RowsEvent) -> None:
        entry = rows_entry(table, event)  # every row of the event encoded in one pass
        if entry is not None:
            self._txn.append(entry)
            self._txn_bytes += entry_bytes(entry)
            # half the bound held here, the other half for the chunks written at the COMMIT (_spill.py)
            if self._txn_bytes * 2 > self.settings.max_bytes_in_transaction > 0 and self._may_spill():
                if self._spill is None:
                    self._spill = Spill()
                self._spill.add(self._txn)
                self._txn = []
                self._txn_bytes = 0

    def _may_spill(self) -> bool:
        """A transaction's rows may go to a spill file: not a part of an XA transaction (held apart, _xa.py), and for
        collapsing only where inserts take deduplication tokens (_spill.py)."""
        return self._xa_part is None and (
            self.settings.engine != "collapsing" or self.target.capabilities.insert_deduplication_token
        )

    def _drop_txn(self) -> None:
        """Forget the transaction being read (its memory too)."""
        self._txn = []
        self._txn_bytes = 0
        spill, self._spill = self._spill, None
        if spill is not None:
            spill.close()

    async def _commit_transaction(self, end: BinlogPosition) -> None:
        """The transaction whose changes are in ``self._txn`` ended at ``end``: move them into the batch."""
        self.status.transactions += 1
        start, self._txn_start = self._txn_start, end
        self._txn_bytes = 0  # what self._txn holds is used up below (or held apart: XA)
        if self._xa_part is not None:
            await self._xa_transaction(start, end)
        version = await self._check_version(end) if end.file or self._txn or self._spill else 0
        spill, self._spill = self._spill, None
        if spill is not None:  # a big transaction: its rows go to the target in chunks now (_spill.py)
            spill.add(self._txn)
            self._drop_txn()
            try:
                await write_spilled(self, spill, start or end, end, version)
            finally:
                spill.close()
            self._batch_end = end
            await self._flush()  # the checkpoint past the whole transaction
            give_memory_back()
        if self._txn:
            rows, size = add_transaction(self._batch, self._txn, version)
            self._batch_rows += rows
            self._batch_bytes += size
            self._txn = []  # a big list's storage goes back too
            if self._batch_started is None:
                self._batch_started = time.monotonic()
        self._batch_end = end
        self.status.position = str(end)
        if self._batch_started is None:
            self._batch_started = time.monotonic()
        replay = self._replay_until
        if replay is not None and _reached(end, replay):
            await self._flush()

    async def _xa_transaction(self, start: BinlogPosition | None, end: BinlogPosition) -> None:
        """The transaction that ended at ``end`` was a part of an XA transaction: hold a prepared part's rows, bring
        them back at its COMMIT (to be applied now, with this transaction's version), drop them at its ROLLBACK."""
        xa, self._xa_part = self._xa_part, None
        assert xa is not None
        xid = str(xa.xid)
        if xa.kind == "prepare":
            self._xa.prepare(xid, self._gtid, start or end, end, list(self._txn))
            self._txn.clear()
        elif xa.kind in ("commit", "rollback") and not xa.one_phase:
            held = self._xa.resolve(xid)
            if held is None:
                logger.warning(
                    "%s: XA %s of %s at %s, whose XA PREPARE came before the replica's start: if it changed replicated "
                    "tables, those changes are %s; check with mybinlog verify", self.replica, xa.kind.upper(), xid,
                    end, "missing" if xa.kind == "commit" else "not in the replica either (correct)")  # fmt: skip
            elif xa.kind == "commit" and not held.empty:
                entries = held.entries
                if entries is None:
                    entries = await read_prepared(self.dsn, held, self.database, self._tables.get,
                                                  retry_seconds=self.settings.source_retry_seconds)  # fmt: skip
                self._txn.extend(entries)

    async def _flush(self, *, wait: bool = True) -> None:
        """Write the batch: one insert per table, then the checkpoint at its end (collapsing: announced first).

        The rows are encoded here; the writes run in a task when ``wait`` is false (the stream's size and time
        limits), while the stream reads and encodes the next batch. Everything else that writes waits for that task
        first (:meth:`_settle`), so batches, checkpoints and DDL still reach ClickHouse one after the other."""
        await self._settle()
        end = self._batch_end
        cp = self._checkpoint
        assert cp is not None
        if end is None or (end == cp.position and not self._batch):
            self._batch_started = None
            return
        batch = self._batch
        tables = {name: self._tables[name] for name in batch if name in self._tables}  # only the tables it touches
        payloads = []
        for name, changes in batch.items():
            table = tables.get(name)
            if table is not None and changes:
                data, lines = table_payload(changes.values(), self.settings.engine)
                if lines:
                    payloads.append((name, table.ch_table, table.insert_columns, data, lines))
        self._batch = {}
        self._batch_rows = self._batch_bytes = 0
        self._batch_started = None
        write = self._write_batch(cp, end, payloads, batch, tables, self._version_base, self._xa.state())
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
        tables: dict[str, _Table],
        version_base: int,
        xa: dict[str, Any],
    ) -> None:
        collapsing = self.settings.engine == "collapsing"
        start = cp.position
        await self._confirm_lease()
        if collapsing and batch and cp.pending is None and self._replay_until is None:
            cp.pending = end
            cp.version_base = version_base
            await self._save_now(cp)
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
            await self._confirm_lease()
            if _failpoints.ACTIVE:
                _failpoints.reached("flush.before_insert")
            await self.target.insert_tsv(ch_table, columns, data, dedup_token=token)
            done.add(name)
            self._wrote(f"an insert into {ch_table}")
            if collapsing and token is None:  # no deduplication: a crash must know which inserts returned
                cp.written = sorted(done)
                await self._save_now(cp)
            written += lines
            if _failpoints.ACTIVE:
                _failpoints.reached("flush.after_table")
        if _failpoints.ACTIVE:
            _failpoints.reached("flush.after_inserts")
        await self._confirm_lease()
        cp.position, cp.pending, cp.written, cp.xa = end, None, [], xa
        cp.version_base = version_base
        await self._save_now(cp)
        self._landed = None
        self._saves += 1
        self.status.checkpoint_time = time.time()
        count_batch(self.status.rows_by_table, batch, tables)
        self._replay_until = None
        self.status.rows_written += written
        self.status.batches += 1
        if self.status.state == "retrying":
            self.status.state = "streaming"
        logger.info(
            "%s: checkpoint at %s after %d rows (epoch %d, seq %d)", self.replica, end, written, cp.epoch, cp.seq
        )
        if end.timestamp:
            self.status.lag_seconds = max(0.0, time.time() - end.timestamp)

    async def _settle(self) -> None:
        """Wait for the writes of the previous batch (:meth:`_flush` without ``wait``), raising their error."""
        write, self._write = self._write, None
        if write is not None:
            await write

    async def _drop_write(self, *, cancel: bool = False) -> None:
        """Before starting again from the checkpoint, or when :meth:`run` ends with an error: let the previous batch's
        writes finish (cancel them when the run itself is cancelled), whatever their outcome; the checkpoint says
        what is written."""
        write, self._write = self._write, None
        if write is None:
            return
        if cancel:
            write.cancel()
        await asyncio.wait([write])
        if not write.cancelled() and write.exception() is not None:
            logger.debug("%s: the writes of the last batch failed: %s", self.replica, write.exception())


# ------------------------------------------------------------------------------------------------------------
# helpers


def _meta_suffix(engine: str, sign: int, version: int) -> str:
    if engine == "replacing_is_deleted":
        return f"\t{sign}\t{version}\t{1 if sign < 0 else 0}\n"
    return f"\t{sign}\t{version}\n"


def _schema_text(create: str) -> str:
    """SHOW CREATE TABLE text without the parts that change with the data (AUTO_INCREMENT=N)."""
    return re.sub(r"\s+AUTO_INCREMENT=\d+", "", create)
