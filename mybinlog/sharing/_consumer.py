"""The consumer: :class:`Binlog` (ClickHouse's ``IBinlog``), an anyio object receive stream of events.

A dispatcher puts batches into its queue (:meth:`Binlog._put`, bounded in bytes); the consumer hands their events out
one at a time. The common case (an event of a shared batch that does not move the position) is handed out inline by
``__anext__``/``receive``/``read_event`` with no other work; the rest (a transaction end, a marker, the end of a
batch, waiting for the next one) goes through :meth:`Binlog._poll`. Routing state (skip sets, what the consumer
executed beyond its dispatcher) is kept here and used by the dispatcher that serves the consumer.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Collection
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from anyio import EndOfStream, WouldBlock
from anyio.abc import ObjectReceiveStream

from ..errors import BinlogClosedError, BinlogDetachedError, BinlogStoppedError, ConfigurationError
from ..protocol._accel import speedups
from ..protocol._events import Event, RowsEvent
from ..protocol._gtid import GtidSet
from ..protocol._position import BinlogPosition
from ..protocol._transaction import Transaction, TransactionCollector
from ._items import (
    _ERROR,
    _FORWARDED,
    _NO_BATCH,
    _NOT_FORWARDED,
    _ROWS,
    _WINDOW_STEP,
    _Batch,
    _Entry,
    _gtid_set_contains,
    _Item,
    _union,
)

if TYPE_CHECKING:
    from ._client import BinlogClient
    from ._dispatcher import BinlogEventsDispatcher

__all__ = ["Binlog", "BinlogStatistics"]


_ENDED = "ended"
_DETACHED = "detached"
_STOPPED = "stopped"
_FAILED = "failed"
_CLOSED = "closed"

_Ready: Any = speedups.Ready if speedups is not None else None  # the compiled core's finished awaitable


@dataclass(frozen=True, slots=True)
class BinlogStatistics:
    """A snapshot of a consumer's queue, from :meth:`Binlog.statistics` (like anyio's
    ``MemoryObjectStreamStatistics``). ``size`` and ``bytes`` are the status row's columns of the same names."""

    size: int
    """Events queued and not handed out yet."""
    bytes: int
    """Their bytes (``Event.size``): what counts against ``max_bytes``."""
    max_bytes: int
    """``max_bytes_in_binlog_queue`` (0: unlimited)."""
    max_waiting_ms: int
    """``max_milliseconds_to_wait_in_binlog_queue``."""
    events_received: int
    """Events handed out so far."""
    bytes_received: int
    """Their bytes."""
    tasks_waiting_receive: int
    """Tasks waiting for the next event (in ``receive``, ``read_event``, ``async for``)."""
    queue_waits: int = 0
    """Times its dispatcher found this queue full and waited for room (every consumer of the dispatcher waits
    with it; a wait longer than ``max_waiting_ms`` ends in a detach)."""
    queue_wait_seconds: float = 0.0
    """How long those waits took in all."""


class Binlog(ObjectReceiveStream[Event]):
    """One consumer of a shared binlog connection (ClickHouse's ``IBinlog``): an anyio object receive stream of events.

    Create it with :meth:`BinlogClient.create_binlog`. It receives the transaction events (GTID, QUERY, XID,
    XA_PREPARE, ROTATE and rows events) of every transaction it has not executed yet, in order; rows events only
    for its ``databases``/``tables``. ``position`` is the boundary after the last transaction whose completing
    event (XID, COMMIT, DDL QUERY...) has been handed to you: persist it once you have handled that transaction
    and create the consumer again from it after a restart or a detach (:meth:`transactions` does the grouping).

    Reading: ``async for event in binlog``, ``await binlog.receive()`` (anyio's ``ObjectReceiveStream``; it works in
    anyio task groups and cancel scopes on the asyncio backend), :meth:`receive_nowait`, ``await
    binlog.read_event(timeout=seconds)`` (None: the timeout passed, nothing else) or :meth:`transactions`. Like an
    anyio memory stream, the end is an exception, never a sentinel: at the end of a non-blocking source ``receive``
    and ``read_event`` raise :class:`anyio.EndOfStream` (``async for`` ends); after a detach, a stop or a failure of
    the dispatcher they raise :class:`BinlogDetachedError`, :class:`BinlogStoppedError` or the dispatcher's error,
    every time, once the events queued before it were handed out; once closed (:meth:`aclose`, or leaving ``async
    with``), :class:`BinlogClosedError`.

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
        self._fast_end = 0  # __anext__ & co hand out the current batch's items inline up to here (the next mark)
        self._mark = 0  # the first of the current batch's marks not passed yet
        self._routed_batch = False  # the current batch has _Routed entries
        self._batches: deque[_Batch] = deque()
        self._batches_bytes = 0
        self._batches_events = 0
        self._read_bytes = 0  # totals of the batches read (to their end, or dropped)
        self._read_events = 0
        self._space_wanted = False  # the dispatcher waits for room: every event read sets _space
        self._waiting = 0  # tasks waiting in receive/read_event/__anext__ for the next event
        self._queue_waits = 0  # times the dispatcher waited for room in this queue (counted by the dispatcher)
        self._queue_wait_seconds = 0.0
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

    def statistics(self) -> BinlogStatistics:
        """The queue's use now: events and bytes queued, its limits, the totals handed out, the tasks waiting."""
        nbytes, nevents = self._taken()
        batch = self._batch
        return BinlogStatistics(
            size=self._batches_events + batch.nevents - nevents,
            bytes=self._batches_bytes + batch.nbytes - nbytes,
            max_bytes=self.max_bytes,
            max_waiting_ms=self.max_waiting_ms,
            events_received=self._read_events + nevents,
            bytes_received=self._read_bytes + nbytes,
            tasks_waiting_receive=self._waiting,
            queue_waits=self._queue_waits,
            queue_wait_seconds=self._queue_wait_seconds,
        )

    def __aiter__(self) -> Binlog:
        return self

    def __anext__(self) -> Awaitable[Event]:  # type: ignore[override]
        # the common case inline: an event of a shared batch that does not move the position (see _poll); with the
        # compiled core it is returned as an awaitable already done (no coroutine per event)
        i = self._i
        if i < self._fast_end and _Ready is not None:
            self._i = i + 1
            return _Ready(self._items[i].event)  # type: ignore[no-any-return]
        return self._anext()

    async def _anext(self) -> Event:
        i = self._i
        if i < self._fast_end:
            self._i = i + 1
            return self._items[i].event  # type: ignore[no-any-return]  # an item before the next mark: an event
        try:
            event = self._poll()
            return event if event is not None else await self._wait_for_event()
        except EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> Event:
        """The next event, waiting for it as long as it takes (anyio's ``ObjectReceiveStream.receive``).

        Raises :class:`anyio.EndOfStream` at the end of a non-blocking source, :class:`BinlogDetachedError` after a
        detach, :class:`BinlogStoppedError` after the dispatcher stopped, the dispatcher's error after it failed (each
        once the events queued before it were handed out, then every time), :class:`BinlogClosedError` once closed.
        """
        i = self._i
        if i < self._fast_end:  # as in __anext__
            self._i = i + 1
            return self._items[i].event  # type: ignore[no-any-return]
        event = self._poll()
        return event if event is not None else await self._wait_for_event()

    def receive_nowait(self) -> Event:
        """The next event if one is queued, else :class:`anyio.WouldBlock`; the end and errors as :meth:`receive`."""
        i = self._i
        if i < self._fast_end:  # as in __anext__
            self._i = i + 1
            return self._items[i].event  # type: ignore[no-any-return]
        event = self._poll()
        if event is None:
            raise WouldBlock
        return event

    async def read_event(
        self,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - ClickHouse's tryReadEvent: None when the timeout passed
    ) -> Event | None:
        """The next event, or None when ``timeout`` seconds pass first (ClickHouse's ``tryReadEvent``); None: wait as
        long as it takes; 0: only what is already queued.

        None means only "the timeout passed": the end and errors are raised as by :meth:`receive`
        (:class:`anyio.EndOfStream` at the end of a non-blocking source).
        """
        i = self._i
        if i < self._fast_end:  # as in __anext__
            self._i = i + 1
            return self._items[i].event  # type: ignore[no-any-return]
        event = self._poll()
        if event is not None:
            return event
        if timeout is None:
            return await self._wait_for_event()
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                async with asyncio.timeout(remaining):
                    await self._wait()
            except TimeoutError:
                return None
            event = self._poll()
            if event is not None:
                return event

    async def transactions(self) -> AsyncIterator[Transaction]:
        """The events as whole transactions: ``async for txn in binlog.transactions()`` yields a
        :class:`~mybinlog.Transaction` (``events``, ``position`` to persist after it, ``gtid``) each time a
        transaction's completing event was received, so you never look at GTIDs yourself.

        Persist ``txn.position`` once you have handled ``txn.events``; after a crash or a detach create the consumer
        again with ``create_binlog(position=...)`` from it: the transaction you were in the middle of comes again,
        whole. Reading the same consumer with ``receive``/``read_event`` at the same time would split transactions.
        Errors and the end are those of :meth:`receive` (``async for`` ends at the end of a non-blocking source).
        """
        collector = TransactionCollector()
        add = collector.add
        async for event in self:
            txn = add(event, self._position)
            if txn is not None:
                yield txn

    async def aclose(self) -> None:
        """Leave the dispatcher (which stops when this was its last consumer) and drop what is queued; reading
        afterwards raises :class:`BinlogClosedError`. Idempotent. Leaving ``async with binlog`` calls it."""
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

    close = aclose  # ClickHouse's and the earlier name

    async def reopen(self) -> Binlog:
        """A new consumer with the same settings, starting after :attr:`position` (e.g. after a detach)."""
        if self._state is None:
            raise ConfigurationError(f"{self.name}: close the consumer before reopening it")
        if self._position.gtid_set is None and not self._position.file:
            raise ConfigurationError(
                f"{self.name}: cannot reopen from {self._position}: it has neither a GTID set nor a binlog file"
            )
        await self.aclose()
        return await self.client.create_binlog(
            name=self.name,
            position=self._position,
            databases=self.databases,
            tables=self.tables,
            max_bytes_in_binlog_queue=self.max_bytes,
            max_milliseconds_to_wait_in_binlog_queue=self.max_waiting_ms,
        )

    # -- receiving --------------------------------------------------------------------------------------------
    def _poll(self) -> Event | None:
        """The next queued event (its position taken, the sharing window moved), or None when the queue is empty.
        Once the queue is drained it raises what ended the consumer (:meth:`_raise_terminal`)."""
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
            return None

    async def _wait_for_event(self) -> Event:
        """Wait until an event is queued (or the consumer ends): the queue was found empty just before."""
        while True:
            await self._wait()
            event = self._poll()
            if event is not None:
                return event

    async def _wait(self) -> None:
        """Wait for the dispatcher to queue something or end the consumer (the queue was found empty just before,
        with no await since)."""
        self._data.clear()
        self._waiting += 1
        try:
            await self._data.wait()
        finally:
            self._waiting -= 1

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
            raise EndOfStream
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
