"""Sharing one binlog connection between many consumers (ClickHouse's "MySQL Binlog Client").

::

    BinlogClientFactory          one per process (get_binlog_client uses the default one)
    └── BinlogClient             one per (user, password, host, port); display name user@host:port
        └── BinlogEventsDispatcher   one per upstream connection (a BinlogStream)
            ├── reader task          source -> dispatcher buffer (position tracking, no row decoding)
            ├── flusher (supervisor) buffer -> consumer queues (by bytes / time), catch-up merge
            └── Binlog               one per consumer: byte-limited queue, filters, skip set, position

Every event object is shared by the consumers of a dispatcher: rows are decoded lazily (``RowsEvent.rows``) by
the consumers that read them, once, and never for a consumer that filtered the table out. A consumer that falls
more than ``BinlogClient.shared_decode_bytes`` behind the others gets private copies of the rows events it still
holds, so that it never keeps alive the rows the others decoded. See docs/sharing.md.

The status endpoint (``serve_status``, ``read_status``) lets ``mybinlog status`` read the status rows of a
consuming process from outside.

ClickHouse name                                  mybinlog name
BinlogClientFactory::getClient                   BinlogClientFactory.get_client / get_binlog_client
BinlogClient::createBinlog                       BinlogClient.create_binlog
BinlogClient::getMetadata / factory getMetadata  BinlogClient.status / BinlogClientFactory.status
BinlogEventsDispatcher                           BinlogEventsDispatcher
BinlogEventsDispatcher::attach / syncTo          (internal) attach, sync targets
IBinlog::tryReadEvent(event, timeout)            Binlog.read_event(timeout=...) / ``async for``
IBinlog::getPosition                             Binlog.position
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import logging
import os
import socket
import time
import urllib.parse
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Generator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, TypedDict

from ._dsn import DSN
from ._exceptions import ConfigurationError, DecodeError, MybinlogError
from ._gtid import GtidSet, can_attach, parse_gtid_set
from ._position import BinlogPosition, PositionTracker
from ._protocol._events import (
    Event,
    GtidEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    TransactionPayloadEvent,
    XaPrepareEvent,
    XidEvent,
)
from ._stream import BinlogStream

__all__ = [
    "Binlog",
    "BinlogClient",
    "BinlogClientFactory",
    "BinlogClosedError",
    "BinlogDetachedError",
    "BinlogEventsDispatcher",
    "BinlogStatus",
    "BinlogStoppedError",
    "EventSource",
    "SourceFactory",
    "StatusReadError",
    "StatusServer",
    "get_binlog_client",
    "get_binlog_client_factory",
    "read_status",
    "serve_status",
    "status_document",
]

logger = logging.getLogger("mybinlog.sharing")

MiB: Final = 1 << 20
DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE: Final = 64 * MiB
DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE: Final = 10_000
DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER: Final = MiB
DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER: Final = 1000


# ------------------------------------------------------------------------------------------------------------
# errors


class BinlogDetachedError(MybinlogError):
    """The consumer did not keep up: its queue stayed full longer than ``max_milliseconds_to_wait_in_binlog_queue``
    and the dispatcher detached it. Everything queued before was delivered. Re-create the consumer from its
    committed position (``await binlog.reopen()`` or ``client.create_binlog(executed_gtid_set=...)``)."""

    retriable = True

    def __init__(self, message: str, *, position: BinlogPosition | None = None) -> None:
        self.position = position
        super().__init__(message)


class BinlogStoppedError(MybinlogError):
    """The dispatcher serving this consumer was stopped (its client was closed); the consumer cannot be used.
    Create a new consumer from the position you committed."""

    retriable = True


class BinlogClosedError(MybinlogError):
    """The consumer was closed by its owner; it cannot be read any more."""


# ------------------------------------------------------------------------------------------------------------
# the event source protocol


class EventSource(Protocol):
    """What a dispatcher reads: an opened, positioned :class:`~mybinlog.BinlogStream` or a test fake.

    ``position`` is read once, right after the source is opened (the boundary the first event follows).
    ``next_event`` returns None at the end of a non-blocking source.
    """

    @property
    def position(self) -> BinlogPosition: ...

    async def next_event(self) -> Event | None: ...

    async def close(self) -> None: ...


SourceFactory = Callable[[GtidSet | str | None], Awaitable[EventSource]]
"""Opens a source positioned after the given executed GTID set (None: the server's current end)."""


# ------------------------------------------------------------------------------------------------------------
# status rows


class BinlogStatus(TypedDict):
    """One row per live consumer, with exactly the columns of ClickHouse's ``system.mysql_binlogs``."""

    binlog_client_name: str
    name: str
    mysql_binlog_name: str
    mysql_binlog_pos: int
    mysql_binlog_timestamp: int
    mysql_binlog_executed_gtid_set: str
    dispatcher_name: str
    dispatcher_mysql_binlog_name: str
    dispatcher_mysql_binlog_pos: int
    dispatcher_mysql_binlog_timestamp: int
    dispatcher_mysql_binlog_executed_gtid_set: str
    size: int
    bytes: int
    max_bytes: int
    max_waiting_ms: int
    dispatcher_events_read_per_sec: float
    dispatcher_bytes_read_per_sec: float
    dispatcher_events_flush_per_sec: float
    dispatcher_bytes_flush_per_sec: float


class _Rate:
    """Events (or bytes) per second over the last full second of ``clock`` (a monotonic clock in seconds).

    The count of the second before the current one: a steady flow of N per second reads N, a burst is seen for
    one second, an idle dispatcher reads 0 after at most two seconds.
    """

    __slots__ = ("_clock", "_current", "_previous", "_second")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._second = int(clock())
        self._current = 0
        self._previous = 0

    def _roll(self, now: int) -> None:
        if now != self._second:
            self._previous = self._current if now == self._second + 1 else 0
            self._current = 0
            self._second = now

    def add(self, n: int) -> None:
        self._roll(int(self._clock()))
        self._current += n

    def per_sec(self) -> float:
        self._roll(int(self._clock()))
        return float(self._previous)


# ------------------------------------------------------------------------------------------------------------
# items flowing from the reader to the flusher

_NOT_FORWARDED = 0
_FORWARDED = 1
_ROWS = 2
_ERROR = 3
_FORWARD_TYPES = (GtidEvent, MariadbGtidEvent, RotateEvent, XidEvent, QueryEvent, XaPrepareEvent)


class _Item:
    """One event as the dispatcher saw it (or a per-table decode error)."""

    __slots__ = ("error", "event", "gtid", "holders", "in_txn", "is_gtid", "kind", "position", "table", "windowed")

    def __init__(
        self,
        event: Event | None,
        kind: int,
        position: BinlogPosition | None,
        in_txn: bool,
        *,
        is_gtid: bool = False,
        gtid: Any = None,
        error: BaseException | None = None,
        table: tuple[str, str] | None = None,
    ) -> None:
        self.event = event
        self.kind = kind
        self.position = position  # the boundary after this event when it completes a transaction
        self.in_txn = in_txn  # inside a transaction after this event
        self.is_gtid = is_gtid
        self.gtid = gtid
        self.error = error
        self.table = table
        self.holders = 0  # rows events: consumer queues still holding it
        self.windowed = False  # in its client's window of shared rows events


_Entry = tuple[_Item | None, BinlogPosition | None, BaseException | None]
"""A consumer queue entry as routed: the item whose event is handed out (None: only a position or an error)."""

SHARED_DECODE_MIN_BYTES: Final = 256 << 10


def _private_copy(event: RowsEvent) -> RowsEvent:
    """The same rows event as a new object without decoded rows: the consumer that gets it decodes it itself."""
    own = copy.copy(event)
    own._rows = None
    return own


def _gtid_set_contains(outer: GtidSet | None, inner: GtidSet | None) -> bool:
    if outer is None or inner is None or type(outer) is not type(inner):
        return False
    return outer.contains(inner)  # type: ignore[arg-type]


def _union(a: GtidSet | None, b: GtidSet | None) -> GtidSet | None:
    if a is None:
        return b
    if b is None or type(a) is not type(b):
        return a
    return a.union(b)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------------------
# the consumer


_ENDED = "ended"
_DETACHED = "detached"
_STOPPED = "stopped"
_FAILED = "failed"
_CLOSED = "closed"


class Binlog:
    """One consumer of a shared binlog connection (ClickHouse's ``IBinlog``): an async iterator of events.

    Create it with :meth:`BinlogClient.create_binlog`. It receives the transaction events (GTID, QUERY, XID,
    XA_PREPARE, ROTATE and rows events) of every transaction it has not executed yet, in order; rows events only
    for its ``databases``/``tables``. ``position`` is the boundary after the last transaction whose completing
    event (XID, COMMIT, DDL QUERY...) has been handed to you: persist it once you have handled that transaction
    and create the consumer again from ``position.gtid_set`` after a restart or a detach.

    Its queue holds at most ``max_bytes`` bytes of events (``Event.size``), except that one event larger than
    that passes when the queue is empty. When the queue is full the dispatcher waits up to ``max_waiting_ms``
    (all consumers of the dispatcher wait with it), then detaches the consumer: you get what was queued, then
    :class:`BinlogDetachedError`.
    """

    def __init__(
        self,
        client: BinlogClient,
        name: str,
        *,
        position: BinlogPosition,
        databases: Collection[str] | None,
        tables: Collection[str] | None,
        max_bytes: int,
        max_waiting_ms: int,
        requested: GtidSet | None,
    ) -> None:
        self.client = client
        self.name = name
        self.max_bytes = max_bytes
        self.max_waiting_ms = max_waiting_ms
        self.databases = frozenset(databases) if databases is not None else None
        self.tables = frozenset(tables) if tables is not None else None
        self._position = position
        self._requested = requested
        self._queue: deque[tuple[_Item | None, BinlogPosition | None, BaseException | None, int]] = deque()
        self._bytes = 0
        self._data = asyncio.Event()
        self._space = asyncio.Event()
        self._state: str | None = None  # None while attached; _ENDED/_DETACHED/_STOPPED/_FAILED/_CLOSED after
        self._error: BaseException | None = None
        self._dispatcher: BinlogEventsDispatcher | None = None
        # routing state, owned by the dispatcher that serves this consumer
        # executed beyond the dispatcher's positions (None: nothing); applied when an entry is queued, so that a
        # merge (which raises it) never moves the position of entries queued before it
        self._base: GtidSet | None = requested
        self._routed = position  # the position of the last entry queued
        self._skip: GtidSet | None = None  # transactions to skip (already executed)
        self._skipping = False
        self._await_boundary = False
        self._wants: dict[tuple[str, str], bool] = {}
        self.events_received = 0
        self.bytes_received = 0

    def __repr__(self) -> str:
        state = self._state or "attached"
        return f"<Binlog {self.name!r} of {self.client.name} {state} at {self._position}>"

    # -- public ----------------------------------------------------------------------------------------------
    @property
    def position(self) -> BinlogPosition:
        """Boundary after the last transaction whose completing event was handed to you (safe to persist)."""
        return self._position

    @property
    def dispatcher(self) -> BinlogEventsDispatcher | None:
        """The dispatcher currently serving this consumer (None once detached, closed or stopped)."""
        return self._dispatcher

    @property
    def detached(self) -> bool:
        return self._state == _DETACHED

    def statistics(self) -> dict[str, int]:
        """Queue use: ``size`` (events queued), ``bytes``, ``max_bytes``, ``max_waiting_ms``, totals received."""
        return {
            "size": sum(1 for e in self._queue if e[0] is not None),
            "bytes": self._bytes,
            "max_bytes": self.max_bytes,
            "max_waiting_ms": self.max_waiting_ms,
            "events_received": self.events_received,
            "bytes_received": self.bytes_received,
        }

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        event = await self._next(None)
        assert event is not None
        return event

    async def read_event(self, timeout_ms: int | None = None) -> Event | None:
        """The next event, or None when ``timeout_ms`` milliseconds pass first (ClickHouse's ``tryReadEvent``).

        Raises StopAsyncIteration at the end of a non-blocking source, :class:`BinlogDetachedError` after a detach,
        :class:`BinlogStoppedError` after the dispatcher stopped, the dispatcher's error after it failed.
        """
        return await self._next(None if timeout_ms is None else timeout_ms / 1000)

    async def __aenter__(self) -> Binlog:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Leave the dispatcher (which stops when this was its last consumer) and drop what is queued."""
        if self._state == _CLOSED:
            return
        self._state = _CLOSED
        for item, _, _, _ in self._queue:
            if item is not None and item.kind == _ROWS:
                item.holders -= 1
        self._queue.clear()
        self._bytes = 0
        self._space.set()
        self._data.set()
        dispatcher, self._dispatcher = self._dispatcher, None
        await self.client._consumer_gone(self, dispatcher)

    aclose = close

    async def reopen(self) -> Binlog:
        """A new consumer with the same settings, starting after :attr:`position` (e.g. after a detach)."""
        if self._state is None:
            raise ConfigurationError(f"{self.name}: close the consumer before reopening it")
        if self._position.gtid_set is None:
            raise ConfigurationError(
                f"{self.name}: cannot reopen from {self._position}: it has no GTID set; create a consumer with "
                "executed_gtid_set=... so that its position can be resumed"
            )
        await self.close()
        return await self.client.create_binlog(
            name=self.name,
            executed_gtid_set=self._position.gtid_set,
            databases=self.databases,
            tables=self.tables,
            max_bytes_in_binlog_queue=self.max_bytes,
            max_milliseconds_to_wait_in_binlog_queue=self.max_waiting_ms,
        )

    # -- receiving --------------------------------------------------------------------------------------------
    async def _next(self, wait_s: float | None) -> Event | None:
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while True:
            if self._state == _CLOSED:
                raise BinlogClosedError(f"{self.name}: the consumer is closed; create a new one to read on")
            queue = self._queue
            if queue:
                item, pos, error, size = queue.popleft()
                self._bytes -= size
                self._space.set()
                if pos is not None:
                    self._position = pos
                if error is not None:
                    raise error
                if item is None:
                    continue
                event = item.event
                assert event is not None
                if item.kind == _ROWS:
                    item.holders -= 1
                    if item.holders and not item.windowed:  # others will read it: share its rows for a while
                        self.client._shared(item)
                self.events_received += 1
                self.bytes_received += size
                return event
            self._raise_terminal()
            self._data.clear()
            if deadline is None:
                await self._data.wait()
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                try:
                    async with asyncio.timeout(remaining):
                        await self._data.wait()
                except TimeoutError:
                    return None

    def _raise_terminal(self) -> None:
        state = self._state
        if state is None:
            return
        if state == _ENDED:
            raise StopAsyncIteration
        if state == _DETACHED:
            gtids = self._position.gtid_set
            raise BinlogDetachedError(
                f"{self.name}: detached from the shared binlog because its queue stayed full for more than "
                f"{self.max_waiting_ms} ms (max_bytes_in_binlog_queue={self.max_bytes}); everything up to "
                f"{self._position} was delivered. Re-create the consumer from that position "
                f"(await binlog.reopen(), or create_binlog(executed_gtid_set={str(gtids)!r})), and read faster "
                "or raise max_bytes_in_binlog_queue / max_milliseconds_to_wait_in_binlog_queue",
                position=self._position,
            )
        if state == _FAILED and self._error is not None:
            raise self._error
        raise BinlogStoppedError(
            f"{self.name}: the dispatcher serving this consumer stopped (its client was closed); create a new "
            f"consumer from the position you committed (last delivered: {self._position})"
        )

    # -- fed by the dispatcher --------------------------------------------------------------------------------
    def _wants_table(self, schema: str, table: str) -> bool:
        key = (schema, table)
        want = self._wants.get(key)
        if want is None:
            dbs, tables = self.databases, self.tables
            want = (dbs is None or schema in dbs) and (
                tables is None or table in tables or f"{schema}.{table}" in tables
            )
            self._wants[key] = want
        return want

    def _effective(self, pos: BinlogPosition) -> BinlogPosition:
        """The consumer's position once it has been handed the entry at the dispatcher's ``pos``: that position
        with everything the consumer had executed beyond it (``_base``), never going backwards."""
        base = self._base
        if base is None:
            self._routed = pos
            return pos
        if _gtid_set_contains(pos.gtid_set, base):
            self._base = None
            self._routed = pos
            return pos
        cur = self._routed
        gtids = _union(base, pos.gtid_set)
        if (pos.file, pos.offset) > (cur.file, cur.offset):
            eff = replace(pos, gtid_set=gtids)
        else:
            eff = replace(cur, gtid_set=gtids)
        self._routed = eff
        return eff

    def _route(self, item: _Item) -> _Entry | None:
        """What this consumer gets for ``item``: an entry to queue, or None."""
        raw = item.position
        pos = None if raw is None else self._effective(raw)
        if self._await_boundary:
            if pos is None:
                return None
            self._await_boundary = False
            return (None, pos, None)
        if item.is_gtid:
            skip = self._skip
            self._skipping = skip is not None and item.gtid is not None and item.gtid in skip
        if self._skipping:
            if pos is None:
                return None
            self._skipping = False
            if self._skip is not None and raw is not None and _gtid_set_contains(raw.gtid_set, self._skip):
                self._skip = None
            return (None, pos, None)
        if raw is not None and self._skip is not None and _gtid_set_contains(raw.gtid_set, self._skip):
            self._skip = None
        kind = item.kind
        if kind == _FORWARDED:
            return (item, pos, None)
        if kind == _ROWS:
            event = item.event
            assert isinstance(event, RowsEvent)
            if self._wants_table(event.table.schema, event.table.name):
                return (item, pos, None)
        elif kind == _ERROR:
            table = item.table
            if table is None or self._wants_table(*table):
                return (None, pos, item.error)
        return (None, pos, None) if pos is not None else None

    def _try_put(self, entry: _Entry) -> bool:
        """Queue ``entry`` unless the queue is full; markers (no event) always fit and coalesce."""
        item, pos, error = entry
        queue = self._queue
        if item is None and error is None:
            if queue:
                last = queue[-1]
                if last[0] is None and last[2] is None:
                    queue[-1] = (None, pos, None, 0)
                    return True
            queue.append((None, pos, None, 0))
            self._data.set()
            return True
        size = item.event.size if item is not None and item.event is not None else 0
        if queue and self.max_bytes and self._bytes + size > self.max_bytes:
            return False
        queue.append((item, pos, error, size))
        if item is not None and item.kind == _ROWS:
            item.holders += 1
        self._bytes += size
        self._data.set()
        return True

    def _finish(self, state: str, error: BaseException | None = None) -> None:
        if self._state is None:
            self._state = state
            self._error = error
            self._dispatcher = None
        self._data.set()
        self._space.set()


# ------------------------------------------------------------------------------------------------------------
# the dispatcher


class BinlogEventsDispatcher:
    """Reads one upstream connection and fans its events out to the attached consumers.

    A reader task pulls events from the source into the dispatcher buffer (tracking positions, never decoding
    rows); the flusher delivers the buffer to every consumer queue when it holds
    ``max_bytes_in_binlog_dispatcher_buffer`` bytes or ``max_flush_milliseconds_in_binlog_dispatcher`` passed
    since the last flush. A catch-up dispatcher (``sync_to`` non-empty) moves its consumers to one of those
    dispatchers as soon as it stands at a transaction boundary the other has not passed yet (see
    docs/sharing.md), then closes its connection.

    The dispatcher owns its tasks: a supervisor task (holding a TaskGroup with the reader) started by
    :meth:`start` and awaited by :meth:`aclose` (or ``async with``).
    """

    def __init__(
        self,
        client: BinlogClient,
        name: str,
        source: EventSource,
        *,
        max_bytes: int,
        max_flush_ms: int,
        sync_to: Collection[BinlogEventsDispatcher] = (),
    ) -> None:
        self.client = client
        self.name = name
        self.max_bytes = max_bytes
        self.max_flush_ms = max_flush_ms
        self._source: EventSource | None = source
        start = source.position
        self._tracker = PositionTracker(start)
        self._flushed_pos = start
        self._flushed_open = False
        self._open_gtid: Any = None
        self._consumers: list[Binlog] = []
        self._buffer: list[_Item] = []
        self._buffer_bytes = 0
        self._buffer_limit = max(1, max_bytes)
        self._wake = asyncio.Event()
        self._taken = asyncio.Event()
        self._reader_done = False
        self._reader_error: BaseException | None = None
        self._payload_left = 0
        self._payload_pos: BinlogPosition | None = None
        self._sync_to: list[BinlogEventsDispatcher] = list(sync_to)
        self._followers: set[BinlogEventsDispatcher] = set()
        for leader in self._sync_to:
            leader._followers.add(self)
        self._merge_requested = bool(self._sync_to)
        self._merged_into: BinlogEventsDispatcher | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.stopped = False
        self._last_flush = time.monotonic()
        clock = client._clock
        self._read_events = _Rate(clock)
        self._read_bytes = _Rate(clock)
        self._flush_events = _Rate(clock)
        self._flush_bytes = _Rate(clock)
        self.events_read = 0
        self.merges = 0

    def __repr__(self) -> str:
        return f"<BinlogEventsDispatcher {self.name} of {self.client.name} at {self._tracker.position}>"

    @property
    def position(self) -> BinlogPosition:
        """The boundary after the last transaction read from the source."""
        return self._tracker.position

    @property
    def delivered_position(self) -> BinlogPosition:
        """The boundary after the last transaction handed to the consumers."""
        return self._flushed_pos

    @property
    def consumers(self) -> list[Binlog]:
        return list(self._consumers)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._stopping and not self.stopped

    # -- lifecycle --------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"mybinlog {self.client.name} {self.name}")

    async def __aenter__(self) -> BinlogEventsDispatcher:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop reading, close the connection; consumers still attached get :class:`BinlogStoppedError`."""
        self._stopping = True
        task = self._task
        if task is None:
            await self._finish(None)
            return
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        if not task.done():  # the caller itself was cancelled: let the task finish, then propagate
            await asyncio.wait([task])
            if not self.stopped:
                await asyncio.shield(self._finish(None))
            raise asyncio.CancelledError
        if not self.stopped:  # cancelled before it ever ran: its cleanup did not run either
            await asyncio.shield(self._finish(None))

    async def _run(self) -> None:
        error: BaseException | None = None
        try:
            async with asyncio.TaskGroup() as tg:
                reader = tg.create_task(self._read_loop())
                await self._flush_loop()
                reader.cancel()
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            logger.exception("%s %s: dispatcher failed", self.client.name, self.name)
            error = exc
        finally:
            await asyncio.shield(self._finish(error))

    async def _finish(self, error: BaseException | None) -> None:
        if self.stopped:
            return
        self._stopping = True
        self.stopped = True
        source, self._source = self._source, None
        if source is not None:
            try:
                await source.close()
            except Exception:
                logger.warning("%s %s: error closing the source", self.client.name, self.name, exc_info=True)
        if error is None:
            error = self._reader_error
        consumers, self._consumers = self._consumers, []
        for c in consumers:
            if error is not None:
                c._finish(_FAILED, error)
            elif self._reader_done:
                c._finish(_ENDED)
            else:
                c._finish(_STOPPED)
        for leader in self._sync_to:
            leader._followers.discard(self)
        self._sync_to = []
        heir = self._merged_into
        for follower in list(self._followers):
            follower._leader_gone(self)
            # our followers now sync to the dispatcher our consumers moved to (it is older than them)
            if heir is not None and not heir.stopped and heir is not follower and heir not in follower._sync_to:
                follower._sync_to.append(heir)
                heir._followers.add(follower)
                follower._request_merge()
        self._followers.clear()
        self.client._dispatcher_done(self)
        logger.debug("%s %s: stopped", self.client.name, self.name)

    # -- reading ----------------------------------------------------------------------------------------------
    async def _read_loop(self) -> None:
        try:
            await self._read()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - handed to the flusher, which tells every consumer
            self._reader_error = exc
            logger.warning("%s %s: source failed: %s", self.client.name, self.name, exc)
        self._reader_done = True
        self._wake.set()

    async def _read(self) -> None:
        source = self._source
        assert source is not None
        limit = self._buffer_limit
        immediate = self.max_flush_ms == 0
        buffer_items = self._buffer
        last_table_error: DecodeError | None = None
        while True:
            if self._buffer_bytes >= limit:
                self._taken.clear()
                self._wake.set()
                await self._taken.wait()
                continue
            try:
                event = await source.next_event()
            except DecodeError as exc:
                table = _error_table(exc)
                if table is None or exc is last_table_error:
                    # no table to blame, or a source that cannot go past the bad event (it raises the same
                    # error again): the dispatcher cannot go on, every consumer gets the error
                    raise
                last_table_error = exc
                logger.warning(
                    "%s %s: cannot decode an event of `%s`.`%s` (%s); its consumers get the error, the others go on",
                    self.client.name,
                    self.name,
                    table[0],
                    table[1],
                    exc,
                )
                item = _Item(None, _ERROR, None, self._tracker.in_transaction, error=exc, table=table)
                self._buffer.append(item)
                self._wake.set()
                continue
            if event is None:
                return
            self.events_read += 1
            self._read_events.add(1)
            self._read_bytes.add(event.size)
            made = self._make_item(event)
            if made is None:
                continue
            item = made
            buffer_items = self._buffer
            was_empty = not buffer_items
            buffer_items.append(item)
            self._buffer_bytes += event.size
            if was_empty or immediate or self._buffer_bytes >= limit:
                self._wake.set()

    def _make_item(self, event: Event) -> _Item | None:
        tracker = self._tracker
        if event.in_payload:
            pos: BinlogPosition | None = None
            in_txn = True
            if self._payload_left > 0:
                self._payload_left -= 1
                if self._payload_left == 0 and self._payload_pos is not None:
                    pos, in_txn = self._payload_pos, False
                    self._payload_pos = None
            return self._classify(event, pos, in_txn)
        completed = tracker.update(event)
        if isinstance(event, TransactionPayloadEvent):
            self._payload_left = len(event.events)
            if completed and event.events:
                self._payload_pos = tracker.position
                return None
            return _Item(event, _NOT_FORWARDED, tracker.position, False) if completed else None
        if isinstance(event, RotateEvent) and not tracker.in_transaction and not self._payload_left:
            completed = True  # a boundary too: the position moves to the next file
        return self._classify(event, tracker.position if completed else None, tracker.in_transaction)

    @staticmethod
    def _classify(event: Event, pos: BinlogPosition | None, in_txn: bool) -> _Item | None:
        if isinstance(event, RowsEvent):
            return _Item(event, _ROWS, pos, in_txn)
        if isinstance(event, _FORWARD_TYPES):
            if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                return _Item(event, _FORWARDED, pos, in_txn, is_gtid=True, gtid=event.gtid)
            return _Item(event, _FORWARDED, pos, in_txn)
        if pos is not None:
            return _Item(event, _NOT_FORWARDED, pos, in_txn)
        return None

    # -- flushing ---------------------------------------------------------------------------------------------
    async def _flush_loop(self) -> None:
        while not self._stopping:
            if not self._buffer:
                if self._reader_done:
                    return
                if self._merge_requested:
                    self._merge_requested = False
                    if self._try_merge():
                        return
                    continue
                self._wake.clear()
                await self._wake.wait()
                continue
            if (
                self._buffer_bytes < self._buffer_limit
                and not self._reader_done
                and not self._merge_requested
                and self.max_flush_ms > 0
            ):
                remaining = self._last_flush + self.max_flush_ms / 1000 - time.monotonic()
                if remaining > 0:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(remaining):
                            await self._wake.wait()
                    continue
            items, nbytes = self._buffer, self._buffer_bytes
            self._buffer = []
            self._buffer_bytes = 0
            self._taken.set()
            completed = await self._deliver(items)
            self._last_flush = time.monotonic()
            self._flush_events.add(len(items))
            self._flush_bytes.add(nbytes)
            if completed:
                for follower in self._followers:
                    follower._request_merge()
            if not self._consumers and not self._stopping:
                logger.debug("%s %s: no consumers left", self.client.name, self.name)
                return
            if self._sync_to and not self._flushed_open:
                self._merge_requested = False
                if self._try_merge():
                    return

    async def _deliver(self, items: list[_Item]) -> bool:
        completed = False
        for item in items:
            # commit the item to the dispatcher's delivered state first: a consumer attached while we wait for a
            # full queue below starts with the next item, consistently with this state
            if item.position is not None:
                self._flushed_pos = item.position
                self._flushed_open = False
                self._open_gtid = None
                completed = True
            elif item.kind != _ERROR:
                if item.is_gtid:
                    self._open_gtid = item.gtid
                self._flushed_open = item.in_txn
            consumers = self._consumers
            if item.kind == _ERROR:
                self._deliver_error(item)
            elif len(consumers) == 1:
                c = consumers[0]
                entry = c._route(item)
                if entry is not None and not c._try_put(entry):
                    await self._wait_and_put(c, entry)
            else:
                for c in tuple(consumers):
                    if c._dispatcher is not self:
                        continue
                    entry = c._route(item)
                    if entry is not None and not c._try_put(entry):
                        await self._wait_and_put(c, entry)
        return completed

    def _deliver_error(self, item: _Item) -> None:
        """A decode error that names its table: it ends the consumers that want that table, nobody else."""
        for c in tuple(self._consumers):
            if c._dispatcher is not self:
                continue
            entry = c._route(item)
            if entry is None or entry[2] is None:
                continue
            logger.warning(
                "%s %s: consumer %s stops at %s: %s", self.client.name, self.name, c.name, c.position, entry[2]
            )
            self._remove(c)
            c._finish(_FAILED, entry[2])  # it still gets what is queued, then this error, every time
            self.client._consumer_detached(c)

    async def _wait_and_put(self, c: Binlog, entry: _Entry) -> None:
        """The consumer's queue is full: wait up to its max_waiting_ms for room, then detach it."""
        deadline = time.monotonic() + c.max_waiting_ms / 1000
        while c._dispatcher is self:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            c._space.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await c._space.wait()
            if c._dispatcher is not self:
                return
            if c._try_put(entry):
                return
        if c._dispatcher is self:
            self._detach(c)

    def _detach(self, c: Binlog) -> None:
        logger.warning(
            "%s %s: consumer %s detached: its queue (%d bytes, limit %d) stayed full for %d ms",
            self.client.name,
            self.name,
            c.name,
            c._bytes,
            c.max_bytes,
            c.max_waiting_ms,
        )
        self._remove(c)
        c._finish(_DETACHED)
        self.client._consumer_detached(c)

    def _remove(self, c: Binlog) -> None:
        with contextlib.suppress(ValueError):
            self._consumers.remove(c)
        if c._dispatcher is self:
            c._dispatcher = None
        if not self._consumers:
            self._wake.set()  # the flusher notices and stops

    # -- attaching and merging --------------------------------------------------------------------------------
    def _attach_set(self) -> tuple[bool, GtidSet | None]:
        """(possible, executed set) a consumer must have executed to attach now."""
        pos = self._flushed_pos
        if not self._flushed_open:
            return True, pos.gtid_set
        if pos.gtid_set is None or self._open_gtid is None:
            return False, None
        return True, pos.gtid_set.add(self._open_gtid)

    def can_accept(self, requested: GtidSet | None) -> bool:
        """Whether a consumer that executed ``requested`` can attach now without loss (None: any start)."""
        if not self.running or not self._consumers or self._merged_into is not None:
            return False
        if requested is None:
            return True
        possible, needed = self._attach_set()
        if not possible or needed is None or type(needed) is not type(requested):
            return False
        return can_attach(needed, requested)

    def _attach(self, c: Binlog, skip: GtidSet | None) -> None:
        c._dispatcher = self
        c._skip = skip
        c._skipping = False
        c._await_boundary = self._flushed_open
        self._consumers.append(c)

    def _request_merge(self) -> None:
        self._merge_requested = True
        self._wake.set()

    def _leader_gone(self, leader: BinlogEventsDispatcher) -> None:
        with contextlib.suppress(ValueError):
            self._sync_to.remove(leader)

    def _try_merge(self) -> bool:
        """At a delivered boundary: move every consumer to a leader that has passed nothing they lack."""
        if self._flushed_open or not self._consumers:
            return False
        mine = self._flushed_pos
        for leader in list(self._sync_to):
            if leader.stopped or leader._stopping:
                self._leader_gone(leader)
                continue
            if not leader._consumers or leader._merged_into is not None:
                continue
            if mine.gtid_set is not None:
                possible, needed = leader._attach_set()
                if not possible or needed is None or not _gtid_set_contains(mine.gtid_set, needed):
                    continue
            else:  # file/position mode: only an exact match is loss-free without GTIDs to skip by
                lp = leader._flushed_pos
                if leader._flushed_open or lp.gtid_set is not None or (lp.file, lp.offset) != (mine.file, mine.offset):
                    continue
            moved = self._consumers
            self._consumers = []
            for c in moved:
                skip = _union(c._base, mine.gtid_set)
                c._base = skip
                leader._attach(c, skip)
            self._merged_into = leader
            leader.merges += 1
            logger.info(
                "%s %s: merged %d consumer(s) into %s at %s (leader at %s)",
                self.client.name,
                self.name,
                len(moved),
                leader.name,
                mine,
                leader._flushed_pos,
            )
            self._stopping = True
            return True
        return False

    # -- status -----------------------------------------------------------------------------------------------
    def status(self) -> list[BinlogStatus]:
        dpos = self._tracker.position
        rates = (
            self._read_events.per_sec(),
            self._read_bytes.per_sec(),
            self._flush_events.per_sec(),
            self._flush_bytes.per_sec(),
        )
        rows: list[BinlogStatus] = []
        for c in self._consumers:
            pos = c.position
            stats = c.statistics()
            rows.append(
                BinlogStatus(
                    binlog_client_name=self.client.name,
                    name=c.name,
                    mysql_binlog_name=pos.file,
                    mysql_binlog_pos=pos.offset,
                    mysql_binlog_timestamp=pos.timestamp,
                    mysql_binlog_executed_gtid_set=str(pos.gtid_set) if pos.gtid_set is not None else "",
                    dispatcher_name=self.name,
                    dispatcher_mysql_binlog_name=dpos.file,
                    dispatcher_mysql_binlog_pos=dpos.offset,
                    dispatcher_mysql_binlog_timestamp=dpos.timestamp,
                    dispatcher_mysql_binlog_executed_gtid_set=(str(dpos.gtid_set) if dpos.gtid_set is not None else ""),
                    size=stats["size"],
                    bytes=stats["bytes"],
                    max_bytes=c.max_bytes,
                    max_waiting_ms=c.max_waiting_ms,
                    dispatcher_events_read_per_sec=rates[0],
                    dispatcher_bytes_read_per_sec=rates[1],
                    dispatcher_events_flush_per_sec=rates[2],
                    dispatcher_bytes_flush_per_sec=rates[3],
                )
            )
        return rows


def _error_table(exc: DecodeError) -> tuple[str, str] | None:
    """The (schema, table) a decode error concerns, when the decoder attached it."""
    schema = getattr(exc, "schema", None)
    table = getattr(exc, "table", None)
    if isinstance(schema, str) and isinstance(table, str):
        return schema, table
    return None


# ------------------------------------------------------------------------------------------------------------
# the client


class _CreateBinlog:
    """``await client.create_binlog(...)`` or ``async with client.create_binlog(...) as binlog``."""

    def __init__(self, coro_factory: Callable[[], Awaitable[Binlog]]) -> None:
        self._factory = coro_factory
        self._binlog: Binlog | None = None

    def __await__(self) -> Generator[Any, None, Binlog]:
        return self._create().__await__()

    async def _create(self) -> Binlog:
        return await self._factory()

    async def __aenter__(self) -> Binlog:
        self._binlog = await self._factory()
        return self._binlog

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._binlog is not None:
            await self._binlog.close()


class BinlogClient:
    """All consumers of one ``user:password@host:port`` (ClickHouse's ``BinlogClient``).

    Get it from :func:`get_binlog_client` (or a :class:`BinlogClientFactory`) so that every caller with the same
    credentials and server shares it. Its name is ``user@host:port``; the password is never shown.
    """

    def __init__(
        self,
        dsn: str | DSN,
        *,
        max_bytes_in_binlog_dispatcher_buffer: int = DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER,
        max_flush_milliseconds_in_binlog_dispatcher: int = DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER,
        source_factory: SourceFactory | None = None,
        stream_options: dict[str, Any] | None = None,
        factory: BinlogClientFactory | None = None,
    ) -> None:
        if max_bytes_in_binlog_dispatcher_buffer < 0 or max_flush_milliseconds_in_binlog_dispatcher < 0:
            raise ConfigurationError(
                "max_bytes_in_binlog_dispatcher_buffer and max_flush_milliseconds_in_binlog_dispatcher must be >= 0"
            )
        self.dsn = dsn if isinstance(dsn, DSN) else DSN.parse(dsn)
        self.name = self.dsn.display
        self.max_bytes_in_binlog_dispatcher_buffer = max_bytes_in_binlog_dispatcher_buffer
        self.max_flush_milliseconds_in_binlog_dispatcher = max_flush_milliseconds_in_binlog_dispatcher
        self._stream_options = dict(stream_options or {})
        self._source_factory = source_factory or self._open_stream
        self._factory = factory
        self._dispatchers: list[BinlogEventsDispatcher] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._consumers: set[Binlog] = set()
        self._ids = itertools.count(1)
        self._consumer_ids = itertools.count(1)
        self._lock: asyncio.Lock | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self._clock: Callable[[], float] = time.monotonic  # the rate columns' clock (tests replace it)
        # Rows events are shared by the consumers that read them (decoded once), but only within a window: once
        # the consumers have read this many bytes of rows events after one, the queues still holding it get a
        # private copy without the decoded rows, so a consumer lagging behind never keeps alive the rows the
        # others decoded (for narrow rows, many times their size on the wire); it decodes its copy itself.
        self.shared_decode_bytes = max(max_bytes_in_binlog_dispatcher_buffer, SHARED_DECODE_MIN_BYTES)
        self._window: deque[_Item] = deque()
        self._window_bytes = 0

    def __repr__(self) -> str:
        return f"<BinlogClient {self.name} dispatchers={len(self._dispatchers)} consumers={len(self._consumers)}>"

    async def _open_stream(self, gtid_set: GtidSet | str | None) -> EventSource:
        stream = BinlogStream(self.dsn, gtid_set=gtid_set, **self._stream_options)
        await stream.start()
        return stream

    @property
    def dispatchers(self) -> list[BinlogEventsDispatcher]:
        return [d for d in self._dispatchers if not d.stopped and not d._stopping]

    def create_binlog(
        self,
        *,
        name: str = "",
        executed_gtid_set: GtidSet | str | None = None,
        databases: Collection[str] | None = None,
        tables: Collection[str] | None = None,
        max_bytes_in_binlog_queue: int = DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE,
        max_milliseconds_to_wait_in_binlog_queue: int = DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE,
    ) -> _CreateBinlog:
        """A new consumer of every transaction not in ``executed_gtid_set`` (None: from now on).

        It attaches to a running dispatcher when that loses nothing (the dispatcher has passed no transaction
        outside ``executed_gtid_set``), skipping the transactions it already executed; otherwise it gets its own
        catch-up dispatcher (a new connection, opened here: connection errors such as a wrong password are raised
        by this call), which merges into a running one as soon as it can.

        ``databases``/``tables`` restrict the rows events (``"table"`` or ``"db.table"``); GTID, QUERY, XID and
        ROTATE events of every transaction still arrive so :attr:`Binlog.position` advances.
        ``max_bytes_in_binlog_queue`` (0: unlimited) and ``max_milliseconds_to_wait_in_binlog_queue`` (0: detach
        as soon as the queue is full) size the queue; see docs/sharing.md.
        """
        if max_bytes_in_binlog_queue < 0 or max_milliseconds_to_wait_in_binlog_queue < 0:
            raise ConfigurationError(
                "max_bytes_in_binlog_queue and max_milliseconds_to_wait_in_binlog_queue must be >= 0"
            )
        if isinstance(databases, str) or isinstance(tables, str):
            raise ConfigurationError("databases and tables are collections of names, e.g. databases=['shop']")

        async def create() -> Binlog:
            return await self._create(
                name,
                executed_gtid_set,
                databases,
                tables,
                max_bytes_in_binlog_queue,
                max_milliseconds_to_wait_in_binlog_queue,
            )

        return _CreateBinlog(create)

    def _parse(self, gtids: GtidSet | str | None) -> GtidSet | str | None:
        if not isinstance(gtids, str):
            return gtids
        if gtids.strip():
            return parse_gtid_set(gtids)
        for d in self._dispatchers:
            known = d.delivered_position.gtid_set
            if known is not None:
                return parse_gtid_set(gtids, known.flavor)
        return gtids  # the source knows the server's flavour

    async def _create(
        self,
        name: str,
        executed: GtidSet | str | None,
        databases: Collection[str] | None,
        tables: Collection[str] | None,
        max_bytes: int,
        max_wait_ms: int,
    ) -> Binlog:
        if self.closed:
            raise ConfigurationError(f"{self.name}: the binlog client is closed; get a new one")
        self.loop = asyncio.get_running_loop()
        if self._factory is not None:
            self._factory._register(self)
        name = name or f"binlog-{next(self._consumer_ids)}"
        requested = self._parse(executed)
        if not isinstance(requested, str):
            for d in self._dispatchers:
                if d.can_accept(requested):
                    c = Binlog(
                        self,
                        name,
                        position=self._attach_position(d, requested),
                        databases=databases,
                        tables=tables,
                        max_bytes=max_bytes,
                        max_waiting_ms=max_wait_ms,
                        requested=requested,
                    )
                    d._attach(c, requested)
                    self._consumers.add(c)
                    logger.info("%s: consumer %s attached to %s at %s", self.name, name, d.name, c.position)
                    return c
        source = await self._source_factory(requested)
        try:
            start = source.position
            c = Binlog(
                self,
                name,
                position=start,
                databases=databases,
                tables=tables,
                max_bytes=max_bytes,
                max_waiting_ms=max_wait_ms,
                requested=None,
            )
            d = BinlogEventsDispatcher(
                self,
                f"dispatcher-{next(self._ids)}",
                source,
                max_bytes=self.max_bytes_in_binlog_dispatcher_buffer,
                max_flush_ms=self.max_flush_milliseconds_in_binlog_dispatcher,
                sync_to=[x for x in self._dispatchers if not x.stopped and not x._stopping],
            )
        except BaseException:
            await source.close()
            raise
        d._attach(c, None)
        self._dispatchers.append(d)
        self._consumers.add(c)
        if self._factory is not None:
            self._factory._register(self)
        d.start()
        assert d._task is not None
        self._tasks.add(d._task)
        logger.info("%s: consumer %s on new dispatcher %s at %s", self.name, name, d.name, start)
        return c

    def _shared(self, item: _Item) -> None:
        """A consumer read ``item``'s rows event and other queues still hold it: share it within the window."""
        event = item.event
        assert event is not None
        item.windowed = True
        window = self._window
        window.append(item)
        self._window_bytes += event.size
        limit = self.shared_decode_bytes
        while self._window_bytes > limit:
            old = window.popleft()
            old.windowed = False
            event = old.event
            assert isinstance(event, RowsEvent)
            self._window_bytes -= event.size
            if old.holders > 0:  # the laggards still holding it get their own object, without decoded rows
                old.event = _private_copy(event)

    @staticmethod
    def _attach_position(d: BinlogEventsDispatcher, requested: GtidSet | None) -> BinlogPosition:
        pos = d.delivered_position
        if requested is None:
            return pos
        return replace(pos, gtid_set=requested)

    # -- bookkeeping --------------------------------------------------------------------------------------------
    def _dispatcher_done(self, d: BinlogEventsDispatcher) -> None:
        with contextlib.suppress(ValueError):
            self._dispatchers.remove(d)
        if not self._consumers and not self._dispatchers and self._factory is not None:
            self._factory._unregister(self)

    def _consumer_detached(self, c: Binlog) -> None:
        self._consumers.discard(c)

    async def _consumer_gone(self, c: Binlog, d: BinlogEventsDispatcher | None) -> None:
        self._consumers.discard(c)
        if d is not None:
            d._remove(c)
            if not d._consumers:
                await d.aclose()
        await self._reap()
        if not self._consumers and self._factory is not None:
            self._factory._unregister(self)

    async def _reap(self) -> None:
        done = {t for t in self._tasks if t.done()}
        self._tasks -= done
        for t in done:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    def status(self) -> list[BinlogStatus]:
        """One row per live consumer, columns as ClickHouse's ``system.mysql_binlogs``."""
        rows: list[BinlogStatus] = []
        for d in self._dispatchers:
            rows.extend(d.status())
        return rows

    async def aclose(self) -> None:
        """Stop every dispatcher (their consumers get :class:`BinlogStoppedError`) and wait for their tasks."""
        self.closed = True
        for d in list(self._dispatchers):
            await d.aclose()
        tasks, self._tasks = list(self._tasks), set()
        for t in tasks:
            if not t.done():
                t.cancel()
        if tasks:
            await asyncio.shield(asyncio.gather(*tasks, return_exceptions=True))
        self._consumers.clear()
        if self._factory is not None:
            self._factory._unregister(self)

    async def __aenter__(self) -> BinlogClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


# ------------------------------------------------------------------------------------------------------------
# the factory


class BinlogClientFactory:
    """Hands out one :class:`BinlogClient` per (user, password, host, port) (ClickHouse's
    ``BinlogClientFactory``). The dispatcher buffer settings are fixed by the first caller for a key; clients
    disappear from the factory when their last consumer goes."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str, str, int], BinlogClient] = {}

    def __repr__(self) -> str:
        return f"<BinlogClientFactory clients={[c.name for c in self._clients.values()]}>"

    def get_client(
        self,
        dsn: str | DSN,
        *,
        max_bytes_in_binlog_dispatcher_buffer: int = DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER,
        max_flush_milliseconds_in_binlog_dispatcher: int = DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER,
        source_factory: SourceFactory | None = None,
        stream_options: dict[str, Any] | None = None,
    ) -> BinlogClient:
        parsed = dsn if isinstance(dsn, DSN) else DSN.parse(dsn)
        key = parsed.key
        client = self._clients.get(key)
        if client is not None and not client.closed:
            loop = client.loop
            try:
                running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if loop is None or running is None or (loop is running and not loop.is_closed()):
                return client
        client = BinlogClient(
            parsed,
            max_bytes_in_binlog_dispatcher_buffer=max_bytes_in_binlog_dispatcher_buffer,
            max_flush_milliseconds_in_binlog_dispatcher=max_flush_milliseconds_in_binlog_dispatcher,
            source_factory=source_factory,
            stream_options=stream_options,
            factory=self,
        )
        self._clients[key] = client
        return client

    def _register(self, client: BinlogClient) -> None:
        self._clients.setdefault(client.dsn.key, client)

    def _unregister(self, client: BinlogClient) -> None:
        key = client.dsn.key
        if self._clients.get(key) is client:
            del self._clients[key]

    @property
    def clients(self) -> list[BinlogClient]:
        return list(self._clients.values())

    def status(self) -> list[BinlogStatus]:
        """One row per live consumer of every client (ClickHouse's ``system.mysql_binlogs``)."""
        rows: list[BinlogStatus] = []
        for client in list(self._clients.values()):
            rows.extend(client.status())
        return rows

    def serve_status(
        self,
        address: str,
        *,
        extra: Callable[[], Mapping[str, Any]] | None = None,
        interval_ms: int = 1000,
    ) -> StatusServer:
        """Serve this factory's status rows at ``address`` for ``mybinlog status --from ADDRESS``
        (``async with factory.serve_status("unix:/run/app/mybinlog.sock"): ...``); see :func:`serve_status`."""
        return StatusServer(address, source=self.status, extra=extra, interval_ms=interval_ms)

    async def aclose(self) -> None:
        for client in list(self._clients.values()):
            await client.aclose()
        self._clients.clear()


_default_factory = BinlogClientFactory()


def get_binlog_client_factory() -> BinlogClientFactory:
    """The process-wide default factory (used by :func:`get_binlog_client`)."""
    return _default_factory


def get_binlog_client(
    dsn: str | DSN,
    *,
    max_bytes_in_binlog_dispatcher_buffer: int = DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER,
    max_flush_milliseconds_in_binlog_dispatcher: int = DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER,
    stream_options: dict[str, Any] | None = None,
) -> BinlogClient:
    """The shared :class:`BinlogClient` for this DSN's user, password, host and port.

    The first caller for a key fixes the dispatcher buffer settings (as in ClickHouse): a dispatcher flushes its
    buffer to the consumer queues when it holds ``max_bytes_in_binlog_dispatcher_buffer`` bytes (0: after every
    event) or ``max_flush_milliseconds_in_binlog_dispatcher`` passed since the last flush (0: at once).
    """
    return _default_factory.get_client(
        dsn,
        max_bytes_in_binlog_dispatcher_buffer=max_bytes_in_binlog_dispatcher_buffer,
        max_flush_milliseconds_in_binlog_dispatcher=max_flush_milliseconds_in_binlog_dispatcher,
        stream_options=stream_options,
    )


# ------------------------------------------------------------------------------------------------------------
# the status endpoint: a consuming process shows its status rows to `mybinlog status --from ADDRESS`

STATUS_FORMAT: Final = "mybinlog-status/1"
STATUS_COLUMNS: Final[tuple[str, ...]] = tuple(BinlogStatus.__annotations__)
"""The 19 columns of a status row, in ClickHouse's ``system.mysql_binlogs`` order."""

StatusSource = Callable[[], Sequence[Mapping[str, Any]]]
_MAX_REQUEST_LINES = 100


class StatusReadError(MybinlogError):
    """The status of a consuming process could not be read (nothing listens at the address, a stale or foreign
    file, a malformed answer). Check that the process runs and serves its status at that address."""

    retriable = True


def _status_address(address: str) -> tuple[str, str, int]:
    """(kind, path or host, port): ``unix:PATH``, ``http://HOST:PORT``, ``file:PATH``, or a bare path (a
    ``.json`` path is a file, anything else a unix socket)."""
    text = address.strip()
    if not text:
        raise ConfigurationError("a status address is needed: unix:/path.sock, http://127.0.0.1:PORT or file:/path")
    if text.startswith("unix:"):
        path = text[5:]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ConfigurationError(f"status address {address!r}: unix: needs a socket path")
        return "unix", path, 0
    if text.startswith("file:"):
        path = text[5:]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ConfigurationError(f"status address {address!r}: file: needs a path")
        return "file", path, 0
    if "://" in text:
        parts = urllib.parse.urlsplit(text)
        if parts.scheme != "http":
            raise ConfigurationError(
                f"status address {address!r}: use unix:/path.sock, http://HOST:PORT or file:/path.json"
            )
        try:
            port = parts.port
        except ValueError as exc:
            raise ConfigurationError(f"status address {address!r}: bad port") from exc
        if port is None:
            raise ConfigurationError(f"status address {address!r}: give a port (0 picks a free one when serving)")
        return "http", parts.hostname or "127.0.0.1", port
    return ("file" if text.endswith(".json") else "unix"), text, 0


def status_document(
    source: StatusSource | None = None, extra: Callable[[], Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """What a status endpoint serves: ``{"format", "pid", "time", "columns", "mysql_binlogs": [rows], ...}``.

    ``source`` gives the rows (default: the default factory's :meth:`BinlogClientFactory.status`); ``extra``
    adds keys of its own (a replicator's checkpoints, say), which must not replace the standard ones.
    """
    rows = (source or _default_factory.status)()
    doc: dict[str, Any] = {
        "format": STATUS_FORMAT,
        "pid": os.getpid(),
        "time": time.time(),
        "columns": list(STATUS_COLUMNS),
        "mysql_binlogs": [dict(row) for row in rows],
    }
    if extra is not None:
        for key, value in extra().items():
            if key in doc:
                raise ConfigurationError(f"status extra key {key!r} would replace a standard key")
            doc[key] = value
    return doc


class StatusServer:
    """Serves a process's status rows (see :func:`serve_status`); an async context manager owning its server or
    file-writing task. ``address`` is the resolved address (the real port when serving on port 0)."""

    def __init__(
        self,
        address: str,
        *,
        source: StatusSource | None = None,
        extra: Callable[[], Mapping[str, Any]] | None = None,
        interval_ms: int = 1000,
    ) -> None:
        self.kind, self._target, self._port = _status_address(address)
        if interval_ms <= 0:
            raise ConfigurationError("interval_ms must be > 0")
        self.interval_ms = interval_ms
        self._source = source
        self._extra = extra
        self._server: asyncio.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.requests = 0

    def __repr__(self) -> str:
        return f"<StatusServer {self.address}{' running' if self.running else ''}>"

    @property
    def address(self) -> str:
        if self.kind == "http":
            host = f"[{self._target}]" if ":" in self._target else self._target
            return f"http://{host}:{self._port}"
        return f"{self.kind}:{self._target}"

    @property
    def running(self) -> bool:
        return self._server is not None or self._task is not None

    def document(self) -> dict[str, Any]:
        doc = status_document(self._source, self._extra)
        if self.kind == "file":
            doc["interval_ms"] = self.interval_ms
        return doc

    async def start(self) -> StatusServer:
        """Start listening (or write the file once and keep rewriting it). Errors (address in use...) raise here."""
        if self.running:
            return self
        try:
            if self.kind == "unix":
                self._clear_stale_socket()
                self._server = await asyncio.start_unix_server(self._handle, path=self._target)
            elif self.kind == "http":
                self._server = await asyncio.start_server(self._handle, self._target, self._port)
                self._port = int(self._server.sockets[0].getsockname()[1])
            else:
                self._write_file()
                self._task = asyncio.create_task(self._file_loop(), name=f"mybinlog status {self._target}")
        except OSError as exc:
            raise ConfigurationError(f"cannot serve status at {self.address}: {exc}") from exc
        logger.info("serving mybinlog status at %s", self.address)
        return self

    async def aclose(self) -> None:
        """Stop serving (a unix socket or status file is removed)."""
        server, self._server = self._server, None
        task, self._task = self._task, None
        if server is not None:
            server.close()
            await asyncio.shield(server.wait_closed())
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
        if (server is not None or task is not None) and self.kind in ("unix", "file"):
            self._remove_path()

    def _clear_stale_socket(self) -> None:
        path = Path(self._target)
        if path.is_socket():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(1)
                try:
                    probe.connect(self._target)
                except OSError:
                    path.unlink()  # left by a process that is gone
                    return
            raise ConfigurationError(f"another process serves its status at {self.address}; pick another path")
        if path.exists():
            raise ConfigurationError(f"status socket path {self._target!r} exists and is not a socket")

    def _remove_path(self) -> None:
        with contextlib.suppress(OSError):
            Path(self._target).unlink()

    async def __aenter__(self) -> StatusServer:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- file ------------------------------------------------------------------------------------------------
    def _write_file(self) -> None:
        path = Path(self._target)
        data = json.dumps(self.document(), default=str, indent=1).encode()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # readers see the old or the new file, never half of one

    async def _file_loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_ms / 1000)  # a periodic timer, not a synchronisation
            try:
                self._write_file()
            except OSError as exc:
                logger.warning("cannot write the status file %s: %s", self._target, exc)

    # -- HTTP (unix socket or TCP) ---------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(5):
                request = await reader.readline()
                for _ in range(_MAX_REQUEST_LINES):
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
            parts = request.decode("latin-1").split()
            method, target = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
            path = target.split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                status, body = "405 Method Not Allowed", b'{"error": "use GET /status"}\n'
            elif path not in ("/", "/status"):
                status, body = "404 Not Found", b'{"error": "the status is at /status"}\n'
            else:
                self.requests += 1
                status, body = "200 OK", json.dumps(self.document(), default=str).encode() + b"\n"
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            writer.write(head if method == "HEAD" else head + body)
            await writer.drain()
        except (TimeoutError, OSError, ValueError) as exc:  # a client that went away or sent nonsense
            logger.debug("status request failed: %s", exc)
        except Exception:
            logger.exception("status request failed")
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def serve_status(
    address: str,
    *,
    source: StatusSource | None = None,
    extra: Callable[[], Mapping[str, Any]] | None = None,
    interval_ms: int = 1000,
) -> StatusServer:
    """Expose this process's status rows so that ``mybinlog status --from ADDRESS`` (or :func:`read_status`)
    can read them from outside: ``async with mybinlog.serve_status("unix:/run/app/mybinlog.sock"): ...``.

    ``address``: ``unix:/path.sock`` (HTTP over a unix socket: ``curl --unix-socket /path.sock http://x/status``),
    ``http://127.0.0.1:PORT`` (HTTP over TCP; port 0 picks a free one, see :attr:`StatusServer.address`; bind to
    loopback unless you mean to publish it), or ``file:/path.json`` (the document rewritten every
    ``interval_ms``, atomically). Nothing is served before ``start()``/``async with``; the rows are computed per
    request. ``source`` defaults to the default factory's status (every consumer created through
    :func:`get_binlog_client`); ``extra`` adds keys to the document. No password appears in it.
    """
    return StatusServer(address, source=source, extra=extra, interval_ms=interval_ms)


async def read_status(address: str, *, timeout_s: float = 5.0) -> dict[str, Any]:
    """The status document served at ``address`` by :func:`serve_status` (another process, usually).

    Raises :class:`StatusReadError` when nothing serves it there or the answer is not a mybinlog status, and
    :class:`~mybinlog.ConfigurationError` for a malformed address.
    """
    kind, target, port = _status_address(address)
    where = address.strip()
    try:
        if kind == "file":
            text = await asyncio.to_thread(Path(target).read_bytes)
            body = text
        else:
            async with asyncio.timeout(timeout_s):
                if kind == "unix":
                    reader, writer = await asyncio.open_unix_connection(target)
                else:
                    reader, writer = await asyncio.open_connection(target, port)
                try:
                    writer.write(b"GET /status HTTP/1.1\r\nHost: mybinlog\r\nConnection: close\r\n\r\n")
                    await writer.drain()
                    answer = await reader.read(64 * MiB)
                finally:
                    writer.close()
                    with contextlib.suppress(OSError):
                        await writer.wait_closed()
            head, _, body = answer.partition(b"\r\n\r\n")
            status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            if not status_line.startswith("HTTP/") or status_line.split()[1:2] != ["200"]:
                raise StatusReadError(f"{where}: unexpected answer {status_line[:80]!r}")
    except TimeoutError as exc:
        raise StatusReadError(f"{where}: no answer within {timeout_s:g} s") from exc
    except OSError as exc:
        raise StatusReadError(
            f"{where}: cannot read the status ({exc.strerror or exc}); is the consuming process running and "
            "serving its status there (serve_status)?"
        ) from exc
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise StatusReadError(f"{where}: the answer is not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != STATUS_FORMAT:
        raise StatusReadError(f"{where}: not a mybinlog status document (format {STATUS_FORMAT!r} expected)")
    return doc
