"""The client side of sharing: :class:`BinlogClient` (all consumers of one user:password@host:port: creates
consumers, attaches them to a running dispatcher or starts a catch-up dispatcher, keeps the sharing window of decoded
rows), :class:`BinlogClientFactory` (one client per key) and the process-wide default factory
(:func:`get_binlog_client`, :func:`get_binlog_client_factory`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Generator
from dataclasses import replace
from types import TracebackType
from typing import Any, Final

from ..errors import ConfigurationError
from ..protocol import BinlogPosition, GtidSet, RowsEvent, parse_gtid_set
from ..source import DSN, BinlogStream, DSNKey
from ._consumer import Binlog
from ._dispatcher import BinlogEventsDispatcher
from ._items import SHARED_DECODE_MIN_BYTES, _Batch, _held, _Item, _private_copy
from ._queue import DispatcherView, _Feed, _QueueState
from ._rows import BinlogClientStatistics, BinlogStatus
from ._source import EventSource, SourceFactory

__all__ = [
    "DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER",
    "DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE",
    "DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER",
    "DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE",
    "BinlogClient",
    "BinlogClientFactory",
    "get_binlog_client",
    "get_binlog_client_factory",
]

logger = logging.getLogger("mybinlog.sharing")

MiB: Final = 1 << 20
DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE: Final = 64 * MiB
DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE: Final = 10_000
DEFAULT_MAX_BYTES_IN_BINLOG_DISPATCHER_BUFFER: Final = MiB
DEFAULT_MAX_FLUSH_MILLISECONDS_IN_BINLOG_DISPATCHER: Final = 1000


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
            await self._binlog.aclose()


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
        # the counters of the dispatchers that stopped (statistics() adds the running ones)
        self._retired: list[float] = [0, 0, 0, 0, 0, 0, 0.0, 0]
        self._last_failover: str | None = None  # of the dispatchers that stopped

    def __repr__(self) -> str:
        return f"<BinlogClient {self.name} dispatchers={len(self._dispatchers)} consumers={len(self._consumers)}>"

    async def _open_stream(self, start: GtidSet | str | BinlogPosition | None) -> EventSource:
        if isinstance(start, BinlogPosition):
            stream = BinlogStream(self.dsn, resume_from=start, **self._stream_options)
        else:
            stream = BinlogStream(self.dsn, gtid_set=start, **self._stream_options)
        await stream.start()
        return stream

    @property
    def dispatchers(self) -> list[BinlogEventsDispatcher]:
        return [d for d in self._dispatchers if not d.stopping]

    def _consumer(
        self,
        name: str,
        position: BinlogPosition,
        databases: Collection[str] | None,
        tables: Collection[str] | None,
        max_bytes: int,
        max_wait_ms: int,
        executed: GtidSet | None,
    ) -> _Feed[Binlog]:
        """A new consumer queue (its state, its receiving end and its dispatcher end) at ``position``; ``executed``:
        what it executed beyond its dispatcher's positions (None: nothing)."""
        q = _QueueState(
            name=name,
            max_bytes=max_bytes,
            max_waiting_ms=max_wait_ms,
            databases=frozenset(databases) if databases is not None else None,
            tables=frozenset(tables) if tables is not None else None,
            share=self._share,
            window_step=self.shared_decode_bytes >> 3,
            left=self._consumer_gone,
            position=position,
            routed=position,
            base=executed,
        )
        return _Feed(Binlog(self, q), q)

    def create_binlog(
        self,
        *,
        name: str = "",
        executed_gtid_set: GtidSet | str | None = None,
        databases: Collection[str] | None = None,
        tables: Collection[str] | None = None,
        max_bytes_in_binlog_queue: int = DEFAULT_MAX_BYTES_IN_BINLOG_QUEUE,
        max_milliseconds_to_wait_in_binlog_queue: int = DEFAULT_MAX_MILLISECONDS_TO_WAIT_IN_BINLOG_QUEUE,
        position: BinlogPosition | None = None,
    ) -> _CreateBinlog:
        """A new consumer of every transaction not in ``executed_gtid_set`` (None: from now on), or after
        ``position`` (a :attr:`Binlog.position` persisted earlier: by its GTID set when the server logs GTIDs, else
        by its binlog file and offset, e.g. MySQL with ``gtid_mode=OFF``; give one of the two).

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
        if position is not None and executed_gtid_set is not None:
            raise ConfigurationError("give executed_gtid_set or position, not both")

        async def create() -> Binlog:
            return await self._create(
                name,
                executed_gtid_set if position is None else position,
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
        executed: GtidSet | str | BinlogPosition | None,
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
        start: GtidSet | str | BinlogPosition | None
        if isinstance(executed, BinlogPosition):
            # a running dispatcher can take it by its GTIDs; without GTIDs it gets a dispatcher of its own (which
            # merges into a running one only at an exactly equal file and offset)
            requested: GtidSet | str | None = executed.gtid_set
            start = executed
            attachable = requested is not None
        else:
            requested = start = self._parse(executed)
            attachable = not isinstance(requested, str)
        if attachable and not isinstance(requested, str):
            for d in self._dispatchers:
                if d.can_accept(requested):
                    pos = self._attach_position(d, requested)
                    feed = self._consumer(name, pos, databases, tables, max_bytes, max_wait_ms, requested)
                    d.attach(feed, requested)
                    self._consumers.add(feed.binlog)
                    logger.info("%s: consumer %s attached to %s at %s", self.name, name, d.name, pos)
                    return feed.binlog
        source = await self._source_factory(start)
        try:
            start = source.position
            feed = self._consumer(name, start, databases, tables, max_bytes, max_wait_ms, None)
            d = BinlogEventsDispatcher(
                self,
                f"dispatcher-{next(self._ids)}",
                source,
                max_bytes=self.max_bytes_in_binlog_dispatcher_buffer,
                max_flush_ms=self.max_flush_milliseconds_in_binlog_dispatcher,
                sync_to=self.dispatchers,
                clock=self._clock,
                on_stopped=self._dispatcher_done,
                on_detached=self._consumers.discard,
            )
        except BaseException:
            await source.close()
            raise
        d.attach(feed, None)
        self._dispatchers.append(d)
        self._consumers.add(feed.binlog)
        if self._factory is not None:
            self._factory._register(self)
        d.start()
        assert d.task is not None
        self._tasks.add(d.task)
        logger.info("%s: consumer %s on new dispatcher %s at %s", self.name, name, d.name, start)
        return feed.binlog

    def _share(self, batch: _Batch, end: int) -> None:
        """A consumer has read ``batch`` up to entry ``end``, the first to read that far: the rows events it read
        that other queues hold too are shared within the window (one object, rows decoded once) until the
        consumers have read that much more. (Read ahead of the others, not when they are read: the fast path of
        the consumers has no per-event work; the window moves at least every ``_WINDOW_STEP`` events.)"""
        start = batch.windowed
        batch.windowed = end
        home = batch.home
        everyone = home is not None and home.n > 1  # other queues hold the whole batch
        window = self._window
        added = 0
        for item in batch.rows(start, end):
            if item.windowed:
                continue
            if not everyone:
                held = item.holders
                if item.home is not None:
                    held += item.home.n
                if held <= 1:  # only this consumer's queue holds it
                    continue
            item.windowed = True
            window.append(item)
            added += item.size
        if not added:
            return
        self._window_bytes += added
        limit = self.shared_decode_bytes
        while self._window_bytes > limit:
            old = window.popleft()
            old.windowed = False
            self._window_bytes -= old.size
            if _held(old) > 0:  # the laggards still holding it get their own object, without decoded rows
                event = old.event
                assert isinstance(event, RowsEvent)
                old.event = _private_copy(event)

    @staticmethod
    def _attach_position(d: BinlogEventsDispatcher, requested: GtidSet | None) -> BinlogPosition:
        pos = d.delivered_position
        if requested is None:
            return pos
        return replace(pos, gtid_set=requested)

    # -- bookkeeping --------------------------------------------------------------------------------------------
    def _dispatcher_done(self, d: BinlogEventsDispatcher) -> None:
        if d in self._dispatchers:
            self._retired = [a + b for a, b in zip(self._retired, _counters(d), strict=True)]
            self._last_failover = d.last_failover or self._last_failover
        with contextlib.suppress(ValueError):
            self._dispatchers.remove(d)
        if not self._consumers and not self._dispatchers and self._factory is not None:
            self._factory._unregister(self)

    async def _consumer_gone(self, c: Binlog, served_by: DispatcherView | None) -> None:
        """``c`` was closed; ``served_by``: the dispatcher that served it then. The consumer knows its dispatcher only
        as a :class:`~._queue.DispatcherView` (its module sits below the dispatcher's): the client, which made the
        dispatchers, tells it to let ``c`` go. One that is not among them any more has stopped and let every consumer
        go already."""
        self._consumers.discard(c)
        for d in self._dispatchers:
            if d is served_by:
                await d.leave(c)
                break
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

    def statistics(self) -> BinlogClientStatistics:
        """Totals since this client was created (events and bytes read, reconnects, merges, detaches, queue waits),
        over the dispatchers running now and those that stopped, and the number running and connected now."""
        totals = list(self._retired)
        running = self.dispatchers
        for d in self._dispatchers:
            totals = [a + b for a, b in zip(totals, _counters(d), strict=True)]
        events, nbytes, reconnects, merges, detaches, waits, wait_seconds, failovers = totals
        reasons = [d.last_failover for d in self._dispatchers if d.last_failover]
        return BinlogClientStatistics(
            name=self.name,
            dispatchers=len(running),
            connected=sum(1 for d in running if d.connected),
            consumers=len(self._consumers),
            events_read=int(events),
            bytes_read=int(nbytes),
            reconnects=int(reconnects),
            merges=int(merges),
            detaches=int(detaches),
            queue_waits=int(waits),
            queue_wait_seconds=float(wait_seconds),
            failovers=int(failovers),
            last_failover=reasons[-1] if reasons else self._last_failover,
        )

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


def _counters(d: BinlogEventsDispatcher) -> tuple[float, ...]:
    return (
        d.events_read,
        d.bytes_read,
        d.reconnects,
        d.merges,
        d.detaches,
        d.queue_waits,
        d.queue_wait_seconds,
        d.failovers,
    )


class BinlogClientFactory:
    """Hands out one :class:`BinlogClient` per (user, password, host, port) (ClickHouse's
    ``BinlogClientFactory``). The dispatcher buffer settings are fixed by the first caller for a key; clients
    disappear from the factory when their last consumer goes."""

    def __init__(self) -> None:
        self._clients: dict[DSNKey, BinlogClient] = {}

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
