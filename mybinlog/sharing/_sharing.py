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
import bisect
import contextlib
import copy
import itertools
import json
import logging
import operator
import os
import socket
import time
import urllib.parse
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Generator, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, TypedDict

from ..errors import (
    BinlogClosedError,
    BinlogDetachedError,
    BinlogStoppedError,
    ConfigurationError,
    DecodeError,
    StatusReadError,
)
from ..protocol._events import (
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
from ..protocol._gtid import GtidSet, can_attach, parse_gtid_set
from ..protocol._position import BinlogPosition, PositionTracker
from ..source._dsn import DSN
from ..source._stream import BinlogStream

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


SourceFactory = Callable[[GtidSet | str | BinlogPosition | None], Awaitable[EventSource]]
"""Opens a source positioned after the given executed GTID set, or at the given position (a checkpoint: by its GTID
set where the server logs GTIDs, else by its file and offset), or at the server's current end (None)."""


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

    __slots__ = (
        "error",
        "event",
        "gtid",
        "holders",
        "home",
        "in_txn",
        "is_gtid",
        "kind",
        "mark",
        "position",
        "size",
        "table",
        "windowed",
    )

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
        # what it takes in a consumer queue: its wire size when it is handed out, 0 for a position-only marker
        self.size = event.size if event is not None and kind in (_FORWARDED, _ROWS) else 0
        # a consumer reads it outside the fast path: it moves the position, or it is only a marker
        self.mark = position is not None or kind == _NOT_FORWARDED
        # rows events: consumer queues still holding it, counted here (batches that are not its home) plus in
        # `home` (the queues holding the batch that is its home: one count per queue, not per item)
        self.holders = 0
        self.home: _Count | None = None
        self.windowed = False  # in its client's window of shared rows events


_Entry = tuple[_Item | None, BinlogPosition | None, BaseException | None]
"""A consumer queue entry as routed: the item whose event is handed out (None: only a position or an error)."""

_KIND = operator.attrgetter("kind")
_SIZE = operator.attrgetter("size")
_MARK = operator.attrgetter("mark")
_IS_EVENT = (False, True, True, False).__getitem__  # by kind: handed out (_FORWARDED, _ROWS)
_IS_ROWS = (False, False, True, False).__getitem__


class _Count:
    """How many consumer queues hold a home batch (see :class:`_Batch`)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class _Routed:
    """An entry routed for one consumer: ``item`` (None: a marker) with the consumer's own ``position``."""

    __slots__ = ("item", "position")

    def __init__(self, item: _Item | None, position: BinlogPosition | None) -> None:
        self.item = item
        self.position = position

    @property
    def event(self) -> Event | None:  # what the fast path hands out (an entry before the next mark has an item)
        return None if self.item is None else self.item.event


class _Batch:
    """One consumer queue entry: what a consumer gets from one flush of its dispatcher (or the part of it that
    fitted in its queue). Plain consumers with the same table filter share one batch object.

    ``entries`` are either the dispatcher's items themselves (``routed`` False: an item of kind ``_FORWARDED``
    or ``_ROWS`` is handed out, ``_NOT_FORWARDED`` only moves the position; each item's own position applies),
    or :class:`_Routed` entries routed for one consumer (``routed`` True: skip sets, positions merged with what
    the consumer had executed, a transaction it must wait out). ``index`` maps an entry back to the
    flushed items (None: entry ``j`` is item ``offset + j``); ``marks`` are the entries a consumer reads outside
    its fast path (a position to take, a marker).

    A queue holds a batch from the moment it is queued until the consumer has read it to the end. The unfiltered
    batch of a flush is the ``home`` of its items: its holders are counted once per queue (``home.n``), those of
    other batches on each rows event (``_Item.holders``).
    """

    __slots__ = ("_prefix", "entries", "home", "index", "marks", "nbytes", "nevents", "offset", "routed", "windowed")

    def __init__(
        self,
        entries: list[Any],
        routed: bool,
        nbytes: int,
        nevents: int,
        *,
        index: list[int] | None = None,
        offset: int = 0,
        marks: list[int] | None = None,
    ) -> None:
        self.entries = entries
        self.routed = routed
        self.nbytes = nbytes  # bytes of the events handed out (what counts against max_bytes_in_binlog_queue)
        self.nevents = nevents  # events handed out (markers not counted)
        self.index = index
        self.offset = offset
        self.marks: list[int] = marks if marks is not None else []
        self.home: _Count | None = None
        self.windowed = 0  # entries before this one were read and went through the window (if others hold them)
        self._prefix: tuple[list[int], list[int]] | None = None

    @classmethod
    def of_items(cls, items: list[_Item], *, index: list[int] | None = None, offset: int = 0) -> _Batch:
        kinds = list(map(_KIND, items))
        nevents = len(kinds) - kinds.count(_NOT_FORWARDED)
        marks = list(itertools.compress(range(len(items)), map(_MARK, items)))
        return cls(items, False, sum(map(_SIZE, items)), nevents, index=index, offset=offset, marks=marks)

    @classmethod
    def of_routed(cls, entries: list[_Routed], index: list[int]) -> _Batch:
        nbytes = nevents = 0
        marks = []
        for j, entry in enumerate(entries):
            item = entry.item
            if item is not None:
                nbytes += item.size
                nevents += 1
            if item is None or entry.position is not None:
                marks.append(j)
        return cls(entries, True, nbytes, nevents, index=index, marks=marks)

    def claim(self) -> None:
        """Become the home of its items (none of them has one yet)."""
        home = self.home = _Count()
        for item in self.entries:
            item.home = home

    def prefix(self) -> tuple[list[int], list[int]]:
        """(bytes, events) before each entry, one more than there are entries; computed when first needed."""
        if self._prefix is None:
            if self.routed:
                sizes = [0 if e.item is None else e.item.size for e in self.entries]
                counts = [e.item is not None for e in self.entries]
            else:
                sizes = list(map(_SIZE, self.entries))
                counts = list(map(_IS_EVENT, map(_KIND, self.entries)))
            self._prefix = (list(itertools.accumulate(sizes, initial=0)), list(itertools.accumulate(counts, initial=0)))
        return self._prefix

    def item_index(self, j: int) -> int:
        """The position of entry ``j`` among the flushed items."""
        return self.offset + j if self.index is None else self.index[j]

    def part(self, start: int, end: int) -> _Batch:
        """Entries ``start:end`` as a batch of their own (a queue never keeps alive entries it does not hold)."""
        if start == 0 and end == len(self.entries):
            return self
        cum, counts = self.prefix()
        entries = self.entries[start:end]
        if self.routed:
            marks = [j for j, e in enumerate(entries) if e.item is None or e.position is not None]
        else:
            marks = list(itertools.compress(range(len(entries)), map(_MARK, entries)))
        return _Batch(entries, self.routed, cum[end] - cum[start], counts[end] - counts[start], marks=marks)

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[_Item]:
        """Its rows events (among entries ``start:end``)."""
        entries = self.entries if start == 0 and end is None else self.entries[start:end]
        if self.routed:
            return (e.item for e in entries if e.item is not None and e.item.kind == _ROWS)
        return itertools.compress(entries, map(_IS_ROWS, map(_KIND, entries)))

    def hold(self, queues: int) -> None:
        """``queues`` more consumer queues hold this batch."""
        if self.home is not None:
            self.home.n += queues
        else:
            for item in self.rows():
                item.holders += queues

    def release(self) -> None:
        """A queue no longer holds this batch (read to its end, or dropped)."""
        if self.home is not None:
            self.home.n -= 1
        else:
            for item in self.rows():
                item.holders -= 1


def _held(item: _Item) -> int:
    """How many consumer queues hold ``item`` (a rows event)."""
    home = item.home
    return item.holders if home is None else item.holders + home.n


_NO_BATCH: Final = _Batch([], False, 0, 0)

SHARED_DECODE_MIN_BYTES: Final = 256 << 10
_WINDOW_STEP: Final = 256


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

    The dispatcher queues what one flush brings this consumer as one entry (a :class:`_Batch`; the part that fits
    when not all of it does), shared by every consumer without routing state of its own and the same table filter;
    the consumer hands its events out one at a time, with per-event work only where the position moves.
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
        # the queue: batches delivered by the dispatcher (one per flush, or the part of one that fitted); the
        # first one is being read (_items up to _i), the others wait in _batches
        self._batch = _NO_BATCH
        self._items: list[Any] = _NO_BATCH.entries
        self._i = 0
        self._end = 0
        self._fast_end = 0  # __anext__ hands out the current batch's items inline up to here (the next mark)
        self._mark = 0  # the first of the current batch's marks not passed yet
        self._routed_batch = False  # the current batch has _Routed entries
        self._batches: deque[_Batch] = deque()
        self._batches_bytes = 0
        self._batches_events = 0
        self._read_bytes = 0  # totals of the batches read (to their end, or dropped)
        self._read_events = 0
        self._space_wanted = False  # the dispatcher waits for room: every event read sets _space
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

    @property
    def events_received(self) -> int:
        """Events handed out so far."""
        return self._read_events + self._taken()[1]

    @property
    def bytes_received(self) -> int:
        """Bytes (``Event.size``) of the events handed out so far."""
        return self._read_bytes + self._taken()[0]

    def statistics(self) -> dict[str, int]:
        """Queue use: ``size`` (events queued), ``bytes``, ``max_bytes``, ``max_waiting_ms``, totals received."""
        nbytes, nevents = self._taken()
        batch = self._batch
        return {
            "size": self._batches_events + batch.nevents - nevents,
            "bytes": self._batches_bytes + batch.nbytes - nbytes,
            "max_bytes": self.max_bytes,
            "max_waiting_ms": self.max_waiting_ms,
            "events_received": self.events_received,
            "bytes_received": self.bytes_received,
        }

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        # the common case inline: an event of a shared batch that does not move the position (see _next)
        i = self._i
        if i < self._fast_end:
            self._i = i + 1
            return self._items[i].event  # type: ignore[no-any-return]  # an item before the next mark: an event
        event = await self._next(None)
        assert event is not None
        return event

    async def read_event(self, timeout_ms: int | None = None) -> Event | None:
        """The next event, or None when ``timeout_ms`` milliseconds pass first (ClickHouse's ``tryReadEvent``).

        Raises StopAsyncIteration at the end of a non-blocking source, :class:`BinlogDetachedError` after a detach,
        :class:`BinlogStoppedError` after the dispatcher stopped, the dispatcher's error after it failed.
        """
        i = self._i
        if i < self._fast_end:  # as in __anext__
            self._i = i + 1
            return self._items[i].event  # type: ignore[no-any-return]
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
        self._drop_batch()
        for batch in self._batches:
            batch.release()
        self._batches.clear()
        self._batches_bytes = self._batches_events = 0
        self._space.set()
        self._data.set()
        dispatcher, self._dispatcher = self._dispatcher, None
        await self.client._consumer_gone(self, dispatcher)

    aclose = close

    async def reopen(self) -> Binlog:
        """A new consumer with the same settings, starting after :attr:`position` (e.g. after a detach)."""
        if self._state is None:
            raise ConfigurationError(f"{self.name}: close the consumer before reopening it")
        if self._position.gtid_set is None and not self._position.file:
            raise ConfigurationError(
                f"{self.name}: cannot reopen from {self._position}: it has neither a GTID set nor a binlog file"
            )
        await self.close()
        return await self.client.create_binlog(
            name=self.name,
            position=self._position,
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
            i = self._i
            if i < self._end:
                self._i = i + 1
                item: _Item | None
                if self._routed_batch:
                    entry = self._items[i]
                    item, pos = entry.item, entry.position
                else:
                    item = self._items[i]
                    pos = item.position
                if pos is not None:
                    self._position = pos
                if self._space_wanted:
                    self._space.set()
                batch = self._batch
                if i >= batch.windowed:
                    self.client._share(batch, i + 1)
                self._sync_fast()
                if item is None or item.kind == _NOT_FORWARDED:
                    continue
                event = item.event
                assert event is not None
                return event
            batch = self._batch
            if batch is not _NO_BATCH:  # read to its end: let it go
                if batch.windowed < self._end:
                    self.client._share(batch, self._end)
                self._drop_batch()
            if self._batches:
                self._next_batch()
                continue
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

    def _drop_batch(self) -> None:
        """Stop holding the current batch (read to its end, or the consumer is closed)."""
        batch = self._batch
        if batch is _NO_BATCH:
            return
        nbytes, nevents = self._taken()
        self._read_bytes += nbytes
        self._read_events += nevents
        batch.release()
        self._batch, self._items, self._i, self._end, self._fast_end = _NO_BATCH, _NO_BATCH.entries, 0, 0, 0

    def _next_batch(self) -> None:
        batch = self._batches.popleft()
        self._batches_bytes -= batch.nbytes
        self._batches_events -= batch.nevents
        self._batch = batch
        self._items = batch.entries
        self._i = 0
        self._end = len(batch.entries)
        self._mark = 0
        self._routed_batch = batch.routed
        self._sync_fast()

    def _sync_fast(self) -> None:
        """Where the fast path of the current batch stops: its next mark (never while the dispatcher waits for room,
        which every event read must signal)."""
        if self._space_wanted:
            self._fast_end = 0
            return
        marks = self._batch.marks
        k = self._mark
        i = self._i
        n = len(marks)
        while k < n and marks[k] < i:
            k += 1
        self._mark = k
        end = marks[k] if k < n else self._end
        if end - i > 1:
            # stop at least every _WINDOW_STEP events or 1/8 of the sharing window's bytes, so that the rows events
            # read go to the window in time (see BinlogClient._share)
            end = min(end, i + _WINDOW_STEP)
            cum = self._batch.prefix()[0]
            step = self.client.shared_decode_bytes >> 3
            if cum[end] - cum[i] > step:
                end = max(bisect.bisect_right(cum, cum[i] + step, i, end) - 1, i + 1)
        self._fast_end = end

    def _taken(self) -> tuple[int, int]:
        """(bytes, events) handed out from the current batch."""
        i = self._i
        if i == 0:
            return 0, 0
        batch = self._batch
        if i >= self._end:
            return batch.nbytes, batch.nevents
        cum, counts = batch.prefix()
        return cum[i], counts[i]

    @property
    def _bytes(self) -> int:
        """Bytes queued (what counts against ``max_bytes``)."""
        return self._batches_bytes + self._batch.nbytes - self._taken()[0]

    @property
    def _queue(self) -> list[tuple[_Item | None, BinlogPosition | None, BaseException | None, int]]:
        """The entries still queued, one per event or position marker (for inspection: tests, debugging)."""
        out: list[tuple[_Item | None, BinlogPosition | None, BaseException | None, int]] = []
        batches = [(self._batch, self._i), *((b, 0) for b in self._batches)]
        for batch, start in batches:
            for entry in batch.entries[start:]:
                item, pos = (entry.item, entry.position) if batch.routed else (entry, entry.position)
                if item is not None and item.kind == _NOT_FORWARDED:
                    item = None
                out.append((item, pos, None, 0 if item is None else item.size))
        return out

    def _queue_empty(self) -> bool:
        return self._i >= self._end and not self._batches

    def _fit(self, batch: _Batch, start: int) -> int:
        """How far (an entry index of ``batch``) its entries from ``start`` fit in the queue now. Markers always
        fit; one event larger than ``max_bytes`` fits an empty queue."""
        total = len(batch.entries)
        limit = self.max_bytes
        if not limit:
            return total
        room = limit - self._bytes
        if start == 0 and batch.nbytes <= room:
            return total
        cum, _ = batch.prefix()
        end = bisect.bisect_right(cum, cum[start] + max(room, 0), start) - 1
        if end == start and start < total and self._queue_empty():
            end = bisect.bisect_right(cum, cum[start + 1], start + 1) - 1  # that event, and the markers after it
        return end

    def _put(self, batch: _Batch) -> None:
        self._batches.append(batch)
        self._batches_bytes += batch.nbytes
        self._batches_events += batch.nevents
        self._data.set()

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
        """Hand a flushed buffer to the consumers; True when it completed a transaction."""
        if _ERROR not in map(_KIND, items):
            return await self._deliver_batch(items)
        completed = False
        start = 0
        for j, item in enumerate(items):
            if item.kind == _ERROR:
                if j > start:
                    completed = await self._deliver_batch(items[start:j]) or completed
                self._deliver_error(item)
                start = j + 1
        if start < len(items):
            completed = await self._deliver_batch(items[start:]) or completed
        return completed

    async def _deliver_batch(self, items: list[_Item]) -> bool:
        """Hand ``items`` (no ``_ERROR`` among them) to every consumer, one queue entry per consumer.

        Consumers without routing state of their own (no skip set, nothing executed beyond the dispatcher, no
        transaction to wait out) share one batch per table filter: their cost per event is the reading alone. The
        others get a batch routed for them (:meth:`Binlog._route`) up to where they need none. A queue without
        room for all of its batch gets what fits; the dispatcher then commits its state up to the first item some
        queue has no room for (a consumer attached meanwhile starts right after it) and waits for those queues as
        :meth:`_wait_and_put` says, every other consumer waiting with it, then goes on.

        The queues without room wait together: each one full when the dispatcher starts waiting gets until its
        ``max_waiting_ms`` after that same moment (one deadline, kept across the waits for the others), so k
        stalled consumers hold the dispatcher up for the longest of their limits, not the sum. A queue that gets
        room is fed and its wait ends; if it is full again later, its next wait starts then.
        """
        n = len(items)
        shared: dict[tuple[Any, Any, int], _Batch] = {}
        progress: dict[Binlog, list[Any]] = {}  # consumer -> [its batch, entries queued, the item index after it]
        waits: dict[Binlog, float] = {}  # full queue -> loop time its wait ends (detached then, unless it has room)
        committed = 0  # items[:committed] are part of the dispatcher's delivered state
        completed = False
        while True:
            stop = n  # the first item some queue has no room for
            held: dict[int, list[Any]] = {}
            for c in tuple(self._consumers):
                if c._dispatcher is not self:
                    continue
                state = progress.get(c)
                if state is None:
                    state = progress[c] = [*self._batch_for(c, items, committed, shared)]
                while True:
                    batch, done, after = state
                    total = len(batch.entries)
                    if done < total:
                        end = c._fit(batch, done)
                        if end > done:
                            if done == 0 and end == total:
                                c._put(batch)
                                count = held.get(id(batch))
                                if count is None:
                                    held[id(batch)] = [batch, 1]
                                else:
                                    count[1] += 1
                            else:
                                part = batch.part(done, end)
                                c._put(part)
                                part.hold(1)
                            state[1] = end
                            if waits:
                                waits.pop(c, None)  # it had room: its wait is over
                        if end < total:
                            stop = min(stop, batch.item_index(end))
                            break
                    if after >= n:
                        break
                    state[:] = self._batch_for(c, items, after, shared)  # the rest, shared with its peers
            for batch, queues in held.values():
                batch.hold(queues)
            if stop >= n:
                return self._commit(items, committed, n) or completed
            # item `stop` waits for room in some queue: commit up to it first, so that a consumer attached while
            # we wait starts with the item after it, consistently with the delivered state
            completed = self._commit(items, committed, stop + 1) or completed
            committed = stop + 1
            # every queue without room waits from now on, unless it already does; the ones item `stop` waits for
            # are waited for in the order their waits end, so each wait ends at its own time
            now = asyncio.get_running_loop().time()
            blocking: list[Binlog] = []
            for c in tuple(self._consumers):
                state = progress.get(c)
                if state is None or c._dispatcher is not self:
                    continue
                batch, done, _ = state
                if done < len(batch.entries):
                    until = waits.setdefault(c, now + c.max_waiting_ms / 1000)
                    if batch.item_index(done) == stop:
                        blocking.append(c)
                    elif until <= now:  # full at a later item for all of its wait already (its room just checked)
                        del waits[c]
                        self._detach(c)
            blocking.sort(key=waits.__getitem__)
            for c in blocking:
                if c._dispatcher is not self:
                    continue
                state = progress[c]
                batch, done, _ = state
                state[1] = await self._wait_and_put(c, batch, done, waits.pop(c))  # it has room now, or is gone

    def _batch_for(
        self, c: Binlog, items: list[_Item], start: int, shared: dict[tuple[Any, Any, int], _Batch]
    ) -> list[Any]:
        """``[batch, 0, end]``: what consumer ``c`` gets of ``items[start:end]``."""
        n = len(items)
        if c._base is not None or c._skip is not None or c._skipping or c._await_boundary:
            entries: list[_Routed] = []
            index: list[int] = []
            route = c._route
            j = start
            while j < n:
                raw = items[j]
                entry = route(raw)
                j += 1
                if entry is not None:
                    item, pos, _ = entry  # only _ERROR items route to an error
                    if item is None and entries and entries[-1].item is None:
                        entries[-1].position = pos  # consecutive markers: the last position is enough
                        index[-1] = j - 1
                    else:
                        entries.append(_Routed(item, pos))
                        index.append(j - 1)
                if (
                    raw.position is not None  # where routing state changes
                    and c._base is None
                    and c._skip is None
                    and not c._skipping
                    and not c._await_boundary
                ):
                    break  # nothing of its own any more: the rest is shared
            return [_Batch.of_routed(entries, index), 0, j]
        key = (c.databases, c.tables, start)
        batch = shared.get(key)
        if batch is None:
            part = items if start == 0 else items[start:]
            if c.databases is None and c.tables is None:
                batch = _Batch.of_items(part, offset=start)
                if part and part[0].home is None:  # the first unfiltered batch of these items: their home
                    batch.claim()
            else:  # rows events of tables the filter leaves out: dropped (their position, if any, kept as a marker)
                kept: list[_Item] = []
                index = []
                wants = c._wants_table
                table: Any = None
                want = True
                for j, item in enumerate(part, start):
                    if item.kind == _ROWS:
                        event = item.event
                        assert isinstance(event, RowsEvent)
                        if event.table is not table:
                            table = event.table
                            want = wants(table.schema, table.name)
                        if not want:
                            if item.position is None:
                                continue
                            item = _Item(None, _NOT_FORWARDED, item.position, item.in_txn)
                    kept.append(item)
                    index.append(j)
                batch = _Batch.of_items(kept, index=index)
            shared[key] = batch
        return [batch, 0, n]

    def _commit(self, items: list[_Item], start: int, end: int) -> bool:
        """Make ``items[start:end]`` part of the delivered state; True when one of them completes a transaction."""
        if start >= end:
            return False
        last = items[end - 1]
        self._flushed_open = False if last.position is not None else last.in_txn
        gtid_found = False
        gtid: Any = None
        j = end - 1
        while j >= start:  # back to the last item that completes a transaction
            item = items[j]
            if item.position is not None:
                self._flushed_pos = item.position
                self._open_gtid = gtid
                return True
            if item.is_gtid and not gtid_found:
                gtid_found = True
                gtid = item.gtid
            j -= 1
        if gtid_found:
            self._open_gtid = gtid
        return False

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

    async def _wait_and_put(self, c: Binlog, batch: _Batch, done: int, until: float) -> int:
        """``c``'s queue has no room for ``batch.entries[done]``: wait for room (every event it reads makes some)
        until the loop time ``until``, then detach it. Returns how far ``batch`` is queued.

        ``until`` is its max_waiting_ms after the moment the dispatcher started waiting for it, the same moment for
        every queue full then (:meth:`_deliver_batch`): when it passed while the dispatcher waited for another
        queue, ``c`` is put what fits if it has room by now, else detached at once."""
        loop = asyncio.get_running_loop()
        c._space_wanted = True
        c._sync_fast()
        try:
            while c._dispatcher is self:
                end = c._fit(batch, done)
                if end > done:
                    part = batch.part(done, end)
                    c._put(part)
                    part.hold(1)
                    return end
                if loop.time() >= until:
                    break
                c._space.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(until):
                        await c._space.wait()
        finally:
            c._space_wanted = False
            c._sync_fast()
        if c._dispatcher is self:
            self._detach(c)
        return done

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
                if c._base is None:
                    c._routed = mine  # the last position routed to it: shared batches do not keep _routed
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

    async def _open_stream(self, start: GtidSet | str | BinlogPosition | None) -> EventSource:
        if isinstance(start, BinlogPosition):
            stream = BinlogStream(self.dsn, resume_from=start, **self._stream_options)
        else:
            stream = BinlogStream(self.dsn, gtid_set=start, **self._stream_options)
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
        source = await self._source_factory(start)
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


_MAX_STATUS_ANSWER: Final = 64 * MiB


async def _read_status_answer(reader: asyncio.StreamReader, where: str) -> bytes:
    """The body of the HTTP answer on ``reader``, which may arrive in any number of pieces: ``Content-Length``
    bytes when the head gives it (the connection may stay open after them), else everything up to EOF."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
        complete = True
    except asyncio.IncompleteReadError as exc:  # EOF before the end of the head
        raw, complete = exc.partial, False
    except asyncio.LimitOverrunError as exc:
        raise StatusReadError(f"{where}: unexpected answer (no end of its head in {exc.consumed} bytes)") from exc
    lines = raw.decode("latin-1").split("\r\n")
    status_line = lines[0]
    if not status_line.startswith("HTTP/") or status_line.split()[1:2] != ["200"]:
        raise StatusReadError(f"{where}: unexpected answer {status_line[:80]!r}")
    if not complete:
        raise StatusReadError(f"{where}: the answer ended inside its head ({len(raw)} bytes)")
    length: int | None = None
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "content-length":
            value = value.strip()
            if not (value.isascii() and value.isdigit()):
                raise StatusReadError(f"{where}: bad Content-Length {value[:40]!r}")
            length = int(value)
    if length is None:  # the answer ends with the connection
        pieces: list[bytes] = []
        size = 0
        while piece := await reader.read(MiB):
            size += len(piece)
            if size > _MAX_STATUS_ANSWER:
                raise StatusReadError(f"{where}: the answer is larger than {_MAX_STATUS_ANSWER // MiB} MiB")
            pieces.append(piece)
        return b"".join(pieces)
    if length > _MAX_STATUS_ANSWER:
        raise StatusReadError(f"{where}: the answer is larger than {_MAX_STATUS_ANSWER // MiB} MiB ({length} bytes)")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise StatusReadError(
            f"{where}: the answer ended after {len(exc.partial)} of the {length} bytes its Content-Length announced"
        ) from exc


async def read_status(address: str, *, timeout_s: float = 5.0) -> dict[str, Any]:
    """The status document served at ``address`` by :func:`serve_status` (another process, usually).

    Over HTTP it reads the whole answer, however many pieces it comes in: the ``Content-Length`` bytes its head
    announces, or everything up to the end of the connection without one.

    Raises :class:`StatusReadError` when nothing serves it there, the answer is cut short (fewer bytes than its
    Content-Length) or is not a mybinlog status, and :class:`~mybinlog.ConfigurationError` for a malformed address.
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
                    body = await _read_status_answer(reader, where)
                finally:
                    writer.close()
                    with contextlib.suppress(OSError):
                        await writer.wait_closed()
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
