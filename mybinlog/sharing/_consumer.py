"""The consumer: :class:`Binlog` (ClickHouse's ``IBinlog``), an anyio object receive stream of events.

:class:`Binlog` is the receiving end of one consumer queue; the queue's state is declared once in
:class:`~._queue._QueueState`, and the dispatcher fills it through the other end, :class:`~._queue._Feed` (bounded in
bytes). The consumer hands the events out one at a time. The common case (an event of a shared batch that does not
move the position) is handed out inline by ``__anext__``/``receive``/``read_event`` with no other work; the rest (a
transaction end, a marker, the end of a batch, waiting for the next one) goes through :meth:`Binlog._poll`.

The client that creates a consumer sits above it (it imports this module): what a consumer uses and shows of it
(:attr:`Binlog.client`) is declared here, :class:`ClientView`; the dispatcher serving it is a
:class:`~._queue.DispatcherView`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from anyio import EndOfStream, WouldBlock
from anyio.abc import ObjectReceiveStream

from ..errors import BinlogClosedError, BinlogDetachedError, BinlogStoppedError, ConfigurationError
from ..protocol import BinlogPosition, Event, GtidSet, Transaction, TransactionCollector, speedups
from ._items import _NO_BATCH, _NOT_FORWARDED, _Item
from ._queue import CLOSED, DETACHED, ENDED, FAILED, DispatcherView, _QueueState
from ._rows import BinlogClientStatistics, BinlogStatus

__all__ = ["Binlog", "BinlogStatistics"]


_Ready: Any = speedups.Ready if speedups is not None else None  # the compiled core's finished awaitable


class ClientView(Protocol):
    """The client that created a consumer (:attr:`Binlog.client`, and a dispatcher's ``client``), as they see it:
    its name (logs, reprs, status rows), :meth:`create_binlog` (what :meth:`Binlog.reopen` calls), and its status
    rows and statistics. :class:`~mybinlog.BinlogClient` is the one implementation (structurally: it does not name
    this class).

    Why a declared view rather than the class: the client creates consumers and dispatchers (it imports their
    modules), and their public API navigates back up to it; naming its class here would close an import circle
    (tests/unit/test_layers.py counts type-checking imports too). What a consumer needs of its client is this much.
    """

    @property
    def name(self) -> str:
        """``user@host:port`` (never the password)."""

    def create_binlog(
        self,
        *,
        name: str = ...,
        executed_gtid_set: GtidSet | str | None = ...,
        databases: Collection[str] | None = ...,
        tables: Collection[str] | None = ...,
        max_bytes_in_binlog_queue: int = ...,
        max_milliseconds_to_wait_in_binlog_queue: int = ...,
        position: BinlogPosition | None = ...,
    ) -> Awaitable[Binlog]:
        """A new consumer (``await`` it; :meth:`BinlogClient.create_binlog <mybinlog.BinlogClient.create_binlog>`)."""

    def status(self) -> list[BinlogStatus]:
        """One status row per live consumer of the client."""

    def statistics(self) -> BinlogClientStatistics:
        """The client's totals (events read, reconnects, merges, detaches, queue waits...)."""


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

    def __init__(self, client: ClientView, q: _QueueState[Binlog]) -> None:
        self.client = client
        """The :class:`~mybinlog.BinlogClient` that created it (typed as the :class:`ClientView` of it: name,
        ``create_binlog``, ``status()``, ``statistics()``)."""
        self.name = q.name
        self._q = q  # the queue's state, shared with the dispatcher's end (_queue._Feed)

    def __repr__(self) -> str:
        q = self._q
        return f"<Binlog {self.name!r} of {self.client.name} {q.ended or 'attached'} at {q.position}>"

    # -- public ----------------------------------------------------------------------------------------------
    @property
    def position(self) -> BinlogPosition:
        """Boundary after the last transaction whose completing event was handed to you (safe to persist)."""
        return self._q.position

    @property
    def max_bytes(self) -> int:
        """``max_bytes_in_binlog_queue`` (0: unlimited)."""
        return self._q.max_bytes

    @property
    def max_waiting_ms(self) -> int:
        """``max_milliseconds_to_wait_in_binlog_queue``."""
        return self._q.max_waiting_ms

    @property
    def databases(self) -> frozenset[str] | None:
        """The databases whose rows events it receives (None: all)."""
        return self._q.databases

    @property
    def tables(self) -> frozenset[str] | None:
        """The tables whose rows events it receives (None: all)."""
        return self._q.tables

    @property
    def dispatcher(self) -> DispatcherView | None:
        """The dispatcher currently serving this consumer (None once detached, closed or stopped): a
        :class:`~mybinlog.BinlogEventsDispatcher`, typed as the :class:`~._queue.DispatcherView` of it (name,
        positions, connection, source server, ``status()``)."""
        return self._q.dispatcher

    @property
    def detached(self) -> bool:
        return self._q.ended == DETACHED

    @property
    def events_received(self) -> int:
        """Events handed out so far."""
        return self._q.read_events + self._q.taken()[1]

    @property
    def bytes_received(self) -> int:
        """Bytes (``Event.size``) of the events handed out so far."""
        return self._q.read_bytes + self._q.taken()[0]

    def statistics(self) -> BinlogStatistics:
        """The queue's use now: events and bytes queued, its limits, the totals handed out, the tasks waiting."""
        q = self._q
        nbytes, nevents = q.taken()
        batch = q.batch
        return BinlogStatistics(
            size=q.batches_events + batch.nevents - nevents,
            bytes=q.batches_bytes + batch.nbytes - nbytes,
            max_bytes=q.max_bytes,
            max_waiting_ms=q.max_waiting_ms,
            events_received=q.read_events + nevents,
            bytes_received=q.read_bytes + nbytes,
            tasks_waiting_receive=q.waiting,
            queue_waits=q.queue_waits,
            queue_wait_seconds=q.queue_wait_seconds,
        )

    def __aiter__(self) -> Binlog:
        return self

    def __anext__(self) -> Awaitable[Event]:  # type: ignore[override]
        # the common case inline: an event of a shared batch that does not move the position (see _poll); with the
        # compiled core it is returned as an awaitable already done (no coroutine per event)
        q = self._q
        i = q.i
        if i < q.fast_end and _Ready is not None:
            q.i = i + 1
            return _Ready(q.items[i].event)  # type: ignore[no-any-return]
        return self._anext()

    async def _anext(self) -> Event:
        q = self._q
        i = q.i
        if i < q.fast_end:
            q.i = i + 1
            return q.items[i].event  # type: ignore[no-any-return]  # an item before the next mark: an event
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
        q = self._q
        i = q.i
        if i < q.fast_end:  # as in __anext__
            q.i = i + 1
            return q.items[i].event  # type: ignore[no-any-return]
        event = self._poll()
        return event if event is not None else await self._wait_for_event()

    def receive_nowait(self) -> Event:
        """The next event if one is queued, else :class:`anyio.WouldBlock`; the end and errors as :meth:`receive`."""
        q = self._q
        i = q.i
        if i < q.fast_end:  # as in __anext__
            q.i = i + 1
            return q.items[i].event  # type: ignore[no-any-return]
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
        q = self._q
        i = q.i
        if i < q.fast_end:  # as in __anext__
            q.i = i + 1
            return q.items[i].event  # type: ignore[no-any-return]
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
            txn = add(event, self._q.position)
            if txn is not None:
                yield txn

    async def aclose(self) -> None:
        """Leave the dispatcher (which stops when this was its last consumer) and drop what is queued; reading
        afterwards raises :class:`BinlogClosedError`. Idempotent. Leaving ``async with binlog`` calls it."""
        q = self._q
        if q.ended == CLOSED:
            return
        q.ended = CLOSED
        self._drop_batch()
        for batch in q.batches:
            batch.release()
        q.batches.clear()
        q.batches_bytes = q.batches_events = 0
        q.space.set()
        q.data.set()
        dispatcher, q.dispatcher = q.dispatcher, None
        await q.left(self, dispatcher)

    close = aclose  # ClickHouse's and the earlier name

    async def reopen(self) -> Binlog:
        """A new consumer with the same settings, starting after :attr:`position` (e.g. after a detach)."""
        q = self._q
        if q.ended is None:
            raise ConfigurationError(f"{self.name}: close the consumer before reopening it")
        if q.position.gtid_set is None and not q.position.file:
            raise ConfigurationError(
                f"{self.name}: cannot reopen from {q.position}: it has neither a GTID set nor a binlog file"
            )
        await self.aclose()
        return await self.client.create_binlog(
            name=self.name,
            position=q.position,
            databases=self.databases,
            tables=self.tables,
            max_bytes_in_binlog_queue=self.max_bytes,
            max_milliseconds_to_wait_in_binlog_queue=self.max_waiting_ms,
        )

    # -- receiving --------------------------------------------------------------------------------------------
    def _poll(self) -> Event | None:
        """The next queued event (its position taken, the sharing window moved), or None when the queue is empty.
        Once the queue is drained it raises what ended the consumer (:meth:`_raise_terminal`)."""
        q = self._q
        while True:
            if q.ended == CLOSED:
                raise BinlogClosedError(f"{self.name}: the consumer is closed; create a new one to read on")
            i = q.i
            if i < q.end:
                q.i = i + 1
                item: _Item | None
                if q.routed_batch:
                    entry = q.items[i]
                    item, pos = entry.item, entry.position
                else:
                    item = q.items[i]
                    pos = item.position
                if pos is not None:
                    q.position = pos
                if q.space_wanted:
                    q.space.set()
                batch = q.batch
                if i >= batch.windowed:
                    q.share(batch, i + 1)
                q.sync_fast()
                if item is None or item.kind == _NOT_FORWARDED:
                    continue
                event = item.event
                assert event is not None
                return event
            batch = q.batch
            if batch is not _NO_BATCH:  # read to its end: let it go
                if batch.windowed < q.end:
                    q.share(batch, q.end)
                self._drop_batch()
            if q.batches:
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
        q = self._q
        q.data.clear()
        q.waiting += 1
        try:
            await q.data.wait()
        finally:
            q.waiting -= 1

    def _drop_batch(self) -> None:
        """Stop holding the current batch (read to its end, or the consumer is closed)."""
        q = self._q
        batch = q.batch
        if batch is _NO_BATCH:
            return
        nbytes, nevents = q.taken()
        q.read_bytes += nbytes
        q.read_events += nevents
        batch.release()
        q.batch, q.items, q.i, q.end, q.fast_end = _NO_BATCH, _NO_BATCH.entries, 0, 0, 0

    def _next_batch(self) -> None:
        q = self._q
        batch = q.batches.popleft()
        q.batches_bytes -= batch.nbytes
        q.batches_events -= batch.nevents
        q.batch = batch
        q.items = batch.entries
        q.i = 0
        q.end = len(batch.entries)
        q.mark = 0
        q.routed_batch = batch.routed
        q.sync_fast()

    @property
    def _queue(self) -> list[tuple[_Item | None, BinlogPosition | None, BaseException | None, int]]:
        """The entries still queued, one per event or position marker (for inspection: tests, debugging)."""
        q = self._q
        out: list[tuple[_Item | None, BinlogPosition | None, BaseException | None, int]] = []
        batches = [(q.batch, q.i), *((b, 0) for b in q.batches)]
        for batch, start in batches:
            for entry in batch.entries[start:]:
                item, pos = (entry.item, entry.position) if batch.routed else (entry, entry.position)
                if item is not None and item.kind == _NOT_FORWARDED:
                    item = None
                out.append((item, pos, None, 0 if item is None else item.size))
        return out

    def _raise_terminal(self) -> None:
        q = self._q
        state = q.ended
        if state is None:
            return
        if state == ENDED:
            raise EndOfStream
        if state == DETACHED:
            gtids = q.position.gtid_set
            raise BinlogDetachedError(
                f"{self.name}: detached from the shared binlog because its queue stayed full for more than "
                f"{q.max_waiting_ms} ms (max_bytes_in_binlog_queue={q.max_bytes}); everything up to "
                f"{q.position} was delivered. Re-create the consumer from that position "
                f"(await binlog.reopen(), or create_binlog(executed_gtid_set={str(gtids)!r})), and read faster "
                "or raise max_bytes_in_binlog_queue / max_milliseconds_to_wait_in_binlog_queue",
                position=q.position,
            )
        if state == FAILED and q.error is not None:
            raise q.error
        raise BinlogStoppedError(
            f"{self.name}: the dispatcher serving this consumer stopped (its client was closed); create a new "
            f"consumer from the position you committed (last delivered: {q.position})"
        )
