"""The replicator: one MySQL database (or some of its tables) materialized into a replica, through a sink.

::

    source ──binlog──> BinlogClient (shared) ──> Binlog consumer ──> Replicator ──> Sink (ClickHouseSink)
                                                                    ├─ Leader: the replica lock, the epoch
                                                                    ├─ SchemaTracker: tables, DDL
                                                                    ├─ XaHold: prepared XA transactions
                                                                    └─ flush policy: rows/bytes/time limits

The replicator reads transactions and decides when a batch ends; the sink (``_sink.py``: the contract) encodes,
holds and writes them with their checkpoint exactly once (``_clickhouse.py``: versions, replays, collapsing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Collection
from typing import Any, cast

from anyio import EndOfStream

from .._checkpoint import Checkpoint
from ..clickhouse import Target
from ..errors import (
    BinlogDetachedError,
    MybinlogError,
    SourceConnectionError,
    SourceError,
    TargetConnectionError,
    TargetError,
    TargetUnavailableError,
    TransactionInterruptedError,
)
from ..protocol import (
    BinlogPosition,
    Event,
    GtidEvent,
    MariadbGtidEvent,
    QueryEvent,
    RowsEvent,
    XaPrepareEvent,
    XaStatement,
    Xid,
    parse_xa_statement,
)
from ..sharing import Binlog, BinlogClient, get_binlog_client
from ..source import DSN, ReplicaLease, SourceConnection, lease_name, quote_mysql_ident
from ._clickhouse import ClickHouseSink
from ._leader import Leader, NewTerm
from ._load import InitialLoad
from ._observe import replica_snapshot
from ._schema import SchemaTracker
from ._settings import ReplicaStatus, ReplicationSettings
from ._sink import Sink
from ._startup import connect_source, replica_name
from ._transactional import TransactionalSink
from ._watch import SourceWatch
from ._xa import XaHold, read_prepared
from ._xa import reached as _reached

__all__ = ["ReplicationSettings", "Replicator"]

logger = logging.getLogger("mybinlog.replication")


class _LoadInterrupted(Exception):
    """The source went away during the initial load (a clean shutdown, a restart, a network cut): the load starts
    over once it is back, within ``source_retry_seconds`` (caught in ``_run``; the cause is the
    :class:`SourceConnectionError`)."""


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


class Replicator:
    """Materialize ``database`` of the source into a replica: ``target_database`` of a ClickHouse
    :class:`~mybinlog.clickhouse.Target`, or any :class:`~mybinlog.replication.Sink`.

    ``await replicator.run()`` streams until :meth:`stop` (clean: flushes and checkpoints) or an error;
    ``run(until_caught_up=True)`` returns once everything the source had written when it started is replicated.
    Several replicators of one source share one binlog connection (the same :class:`BinlogClient`).

    One process writes a replica at a time: the replicator holds a lock on the source named after the sink's
    identity and the replica (``mybinlog.source``'s lease) and raises :class:`ReplicaLockedError` when another
    process holds it. A failing target is retried (``target_retry_seconds``) by restarting from the checkpoint,
    which is exact whatever was written before the failure; an unreachable source is retried by the binlog stream
    (``source_retry_seconds``).
    """

    def __init__(
        self,
        source: str | DSN,
        target: Target | Sink,
        *,
        database: str,
        tables: Collection[str] | None = None,
        target_database: str | None = None,
        replica: str | None = None,
        settings: ReplicationSettings | None = None,
        client: BinlogClient | None = None,
    ) -> None:
        self.dsn = source if isinstance(source, DSN) else DSN.parse(source)
        self.database = database
        self.table_filter = frozenset(tables) if tables is not None else None
        self.target_database = target_database or database
        self.replica = replica_name(replica, database)  # refuses "" and control characters
        self.settings = settings or ReplicationSettings()
        self.client = client
        self.status = ReplicaStatus(self.replica, database, self.target_database, "", None)
        if _is_sink(target):  # by its class: a target is not asked anything before the run
            self.sink: Sink = cast(Sink, target)
            self.target: Target | None = getattr(target, "target", None)
        else:
            self.target = cast(Target, target)
            self.sink = ClickHouseSink(
                cast(Target, target),
                replica=self.replica,
                target_database=self.target_database,
                settings=self.settings,
                status=self.status,
            )
        self.leader = Leader(self.replica, self.sink, self.status, standby=self.settings.standby)
        self.schema = SchemaTracker(
            replica=self.replica,
            dsn=self.dsn,
            database=database,
            wanted=self._wanted,
            sink=self.sink,
            leader=self.leader,
            status=self.status,
            flush=self._flush,
        )
        self.sink.tables = self.schema.tables
        self.initial_load = InitialLoad(
            replica=self.replica,
            dsn=self.dsn,
            database=database,
            table_filter=self.table_filter,
            settings=self.settings,
            sink=self.sink,
            leader=self.leader,
            status=self.status,
            save=self._save,
        )
        # a TransactionalSink is told the GTID of each transaction (Kafka's source.gtid)
        self._gtid_sink = self.sink if isinstance(self.sink, TransactionalSink) else None
        if self._gtid_sink is not None:
            self._gtid_sink.status = self.status
        self._checkpoint: Checkpoint | None = None
        self._batch_started: float | None = None  # when the batch being gathered got its first transaction
        self._stop = asyncio.Event()
        self._binlog: Binlog | None = None
        self._watch: SourceWatch | None = None
        self.flavor = "mariadb"
        # prepared XA transactions (_xa.py), their rows counted as the sink holds them
        self._xa = XaHold(self.settings.max_bytes_of_prepared_xa, self.sink.entry_bytes)
        self._xa_part: XaStatement | None = None  # the transaction being read is a part of an XA transaction
        self._gtid = ""  # the GTID of the transaction being read
        self._txn_start: BinlogPosition | None = None  # the boundary before the transaction being read

    def __repr__(self) -> str:
        return f"<Replicator {self.replica!r} {self.dsn.display}/{self.database} -> {self.sink.description}>"

    # -- public --------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask :meth:`run` to finish: it flushes the complete transactions it holds, checkpoints and returns."""
        self._stop.set()

    @property
    def checkpoint(self) -> Checkpoint | None:
        """The last checkpoint loaded or saved."""
        return self._checkpoint

    @property
    def _lease(self) -> ReplicaLease | None:
        """The replica lock while :meth:`run` holds it (the leader's)."""
        return self.leader.lease

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
            await self.sink.reset(cancel=cancelled)
            await self._close_binlog()
            lease, self.leader.lease = self.leader.lease, None
            if lease is not None:
                await asyncio.shield(lease.release())

    # -- startup -------------------------------------------------------------------------------------------
    async def _run(self, until_caught_up: bool) -> None:
        s = self.settings
        self.sink.check()  # settings the sink cannot serve, before anything is written
        first = await connect_source(self.dsn, s.source_retry_seconds, self._stop)  # waited for, as a reconnect
        if first is None:
            return  # stopped while waiting for the source
        async with first as src:  # checks the source's binlog settings early
            self.flavor = self.sink.flavor = src.flavor
            goal = await src.current_position() if until_caught_up and not s.standby else None
        lease = ReplicaLease(
            self.dsn,
            lease_name(await self.sink.identity(), s.meta_database, self.replica),
            replica=self.replica,
            retry_seconds=s.source_retry_seconds,
            lease_seconds=None if s.engine == "collapsing" else s.lease_seconds,
        )
        self.leader.lease = lease
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
            except (NewTerm, TransactionInterruptedError) as exc:  # the latter: a source failover mid-transaction
                logger.warning("%s: %s; starting again from the checkpoint", self.replica, exc)
                await self._reset()
                continue
            except _LoadInterrupted as interrupted:
                lost = interrupted.__cause__
                assert isinstance(lost, SourceConnectionError)
                if lease.failure is lost:
                    raise lost from None  # the replica lock waited for the source for the whole budget already
                now = time.monotonic()
                if load_failing_since is None or self.initial_load.connects != connects_then:  # a new outage
                    load_failing_since, connects_then, load_delay = now, self.initial_load.connects, 0.2
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
                    lost = await self.leader.lost(exc)
                    if lost is None:
                        raise
                    raise lost from exc
                now = time.monotonic()
                if failing_since is None or self.leader.saves != saves_then:  # a new outage (progress since the last)
                    failing_since, saves_then, delay = now, self.leader.saves, 0.2
                if now - failing_since + delay > s.target_retry_seconds:
                    raise TargetUnavailableError(
                        f"{self.replica}: {self.sink.description} kept failing for "
                        f"{s.target_retry_seconds:g} s (last error: {exc}); nothing is lost: run again to resume "
                        f"from the checkpoint"
                    ) from exc
                self.status.retries += 1
                self.status.state = "retrying"
                logger.warning(
                    "%s: %s failed (%s); starting again from the checkpoint in %.1f s",
                    self.replica,
                    getattr(self.sink, "kind", None) or self.sink.description,  # "ClickHouse failed"
                    exc,
                    delay,
                )
                await self._reset()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._stop.wait()  # a backoff that a stop request cuts short
                delay = min(delay * 2, 10.0)

    async def _attempt(self, goal: BinlogPosition | None) -> None:
        """Load the checkpoint (making the initial load when there is none or it did not finish) and stream."""
        cp = await self.sink.read_checkpoint()
        await self._claim(cp)
        built: dict[str, Any] = {}  # the tables the load made (not parsed again below)
        if cp is None or cp.loading is not None:
            self.leader.loading = True
            try:
                cp = await self.initial_load.run(cp)
                built, self.initial_load.built = self.initial_load.built, {}
            except SourceConnectionError as exc:
                raise _LoadInterrupted(str(exc)) from exc  # starts over within source_retry_seconds (_run)
            finally:
                self.leader.loading = False
        self._checkpoint = cp
        self.schema.load(cp, built)
        self._xa.load(cp.xa)
        await self.sink.resume(cp, self.leader)
        if self._stop.is_set():
            return
        if self._watch is not None:
            await self._watch.check()  # warns before streaming when the checkpoint's binlog is at risk
        self.status.state = "streaming"
        self.status.position = str(cp.position)
        await self._stream(cp, goal)

    async def _reset(self) -> None:
        """Forget everything after the checkpoint (before starting again from it)."""
        await self.sink.reset()
        await self._close_binlog()
        self._xa_part = None
        self._batch_started = None
        self.schema.dirty = False

    async def _close_binlog(self) -> None:
        binlog, self._binlog = self._binlog, None
        if binlog is not None:
            if getattr(binlog, "detached", False):
                self.status.detaches += 1  # detached while the sink was stuck (a retry closes it before a read)
            with contextlib.suppress(MybinlogError):
                await asyncio.shield(binlog.aclose())

    # -- checkpoints ---------------------------------------------------------------------------------------
    async def _claim(self, newest: Checkpoint | None) -> None:
        """Claim the leader epoch (:meth:`Leader.claim`) and save it before any data is written: the checkpoint as it
        was, under the new epoch (the initial load's "loading" row is that save when there is none)."""
        if await self.leader.claim(newest):
            assert newest is not None
            await self._save(newest)

    async def _save(self, cp: Checkpoint) -> None:
        """Save a checkpoint alone (an epoch claim, a DDL, the load's markers), after the writes of the previous
        batch, in this replicator's epoch."""
        await self.sink.settle()
        await self.leader.save(cp)

    def _wanted(self, table: str) -> bool:
        return self.table_filter is None or table in self.table_filter

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
            self.leader.check()
            sink = self.sink
            if sink.writing_done:
                await sink.settle()  # the previous batch is written (or its error raised here)
            timeout = flush_s
            if self._batch_started is not None:
                timeout = max(0.0, self._batch_started + flush_s - time.monotonic())
            try:
                event = await binlog.read_event(timeout=max(0.001, timeout))
            except BinlogDetachedError as exc:
                logger.warning("%s: %s; reopening", self.replica, exc)
                self.status.detaches += 1
                self.sink.rollback()
                self._xa_part = None
                binlog = self._binlog = await binlog.reopen()
                committed = self._txn_start = binlog.position
                continue
            except EndOfStream:  # a non-blocking source ended
                break
            except SourceError:
                # the source is gone for longer than the budget (or refuses): keep what is complete, then report
                if self.sink.replay_until is None:
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
                    if self.schema.dirty or self._must_flush():
                        dirty, self.schema.dirty = self.schema.dirty, False
                        await self._flush(wait=dirty)
                    continue
            elif self._batch_started is None and not self.sink.writing:
                self.status.idle_at = time.time()  # nothing to write: not behind (the lag, _observe.py)
            if (
                self._batch_started is not None
                and self.sink.replay_until is None  # a replayed batch is flushed exactly where it ended before
                and time.monotonic() - self._batch_started >= flush_s
            ):
                await self._flush(wait=False)
        if self.sink.replay_until is None:
            await self._flush()
        else:
            logger.info(
                "%s: stopping in the middle of replaying the batch that ends at %s; the next start replays it again",
                self.replica,
                self.sink.replay_until,
            )

    def _must_flush(self) -> bool:
        s = self.settings
        if self.sink.replay_until is not None:
            return False  # replaying an announced batch: flush exactly at its end (see _commit_transaction)
        rows, size = self.sink.buffered
        return bool(
            (s.max_rows_in_buffer and rows >= s.max_rows_in_buffer)
            or (s.max_bytes_in_buffer and size >= s.max_bytes_in_buffer)
            or s.max_rows_in_buffer == 0
        )

    async def _handle(self, event: Event) -> None:
        if isinstance(event, RowsEvent):
            if event.schema != self.database:
                return
            table = self.schema.tables.get(event.table_name)
            if table is None:
                await self._unknown_table(event.table_name)
                return
            self.sink.rows(table, event, may_spill=self._xa_part is None)  # XA parts are held apart (_xa.py)
        elif isinstance(event, QueryEvent):
            if event.query.lstrip()[:3].upper() == "XA ":
                self._xa_part = parse_xa_statement(event.query)  # START/END inside, COMMIT/ROLLBACK alone
                return
            await self.schema.query(event)
            if self.schema.dirty:
                self._xa.forget_rows()  # encoded for the tables before the DDL: read again at their COMMIT
        elif isinstance(event, XaPrepareEvent):
            xid = Xid(event.gtrid, event.bqual, event.format_id)
            self._xa_part = XaStatement("commit", xid, True) if event.one_phase else XaStatement("prepare", xid)
        elif isinstance(event, (GtidEvent, MariadbGtidEvent)):
            self._gtid = "" if event.gtid is None else str(event.gtid)
            if self._gtid_sink is not None:
                self._gtid_sink.gtid = self._gtid or None

    async def _unknown_table(self, name: str) -> None:
        """Rows of a table in scope that the replica does not have: it was not readable at the initial load (a
        missing grant) or its creation was missed; never drop its changes silently."""
        cp = self._checkpoint
        if cp is None or not self._wanted(name) or name in cp.stopped:
            return
        await self.sink.settle()  # the checkpoint of the batch being written must not carry the stop already
        await self.schema.stop_table(
            name,
            "",
            "rows arrive for it, but the replica does not have it: it was not readable when the replica was loaded "
            f"(GRANT SELECT ON {quote_mysql_ident(self.database)}.* TO the source user) or its CREATE TABLE came "
            "before the replica's start",
        )

    async def _commit_transaction(self, end: BinlogPosition) -> None:
        """The transaction being read ended at ``end``: the sink adds it to its batch."""
        self.status.transactions += 1
        start, self._txn_start = self._txn_start, end
        if self._xa_part is not None:
            await self._xa_transaction(start, end)
        if await self.sink.commit(start, end):  # a big transaction: written now, with the checkpoint past it
            await self._flush()
        elif self._batch_started is None:
            self._batch_started = time.monotonic()
        self.status.position = str(end)
        replay = self.sink.replay_until
        if replay is not None and _reached(end, replay):
            await self._flush()

    async def _xa_transaction(self, start: BinlogPosition | None, end: BinlogPosition) -> None:
        """The transaction that ended at ``end`` was a part of an XA transaction: hold a prepared part's rows, bring
        them back at its COMMIT (to be applied now, with this transaction's version), drop them at its ROLLBACK."""
        xa, self._xa_part = self._xa_part, None
        assert xa is not None
        xid = str(xa.xid)
        if xa.kind == "prepare":
            self._xa.prepare(xid, self._gtid, start or end, end, self.sink.take())
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
                    entries = await read_prepared(self.dsn, held, self.database, self.schema.tables.get,
                                                  retry_seconds=self.settings.source_retry_seconds)  # fmt: skip
                self.sink.extend(entries)

    async def _flush(self, *, wait: bool = True) -> None:
        """The sink writes what it holds and the checkpoint at the end of the last transaction; with ``wait`` false
        the writes may run while the stream reads the next batch (the sink's :meth:`settle` waits for them)."""
        cp = self._checkpoint
        assert cp is not None
        self._batch_started = None
        await self.sink.flush(cp, self._xa.state(), self.leader, wait=wait)


# ------------------------------------------------------------------------------------------------------------
# helpers


def _is_sink(obj: object) -> bool:
    cls = type(obj)
    return all(hasattr(cls, name) for name in ("read_checkpoint", "flush", "commit", "table"))
