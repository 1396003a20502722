"""The dispatcher: :class:`BinlogEventsDispatcher` reads one upstream connection and fans its events out.

Its reader task moves events from the source into the dispatcher buffer as :class:`~._items._Item` objects (with the
positions the source hands over: the dispatcher derives none itself; it never decodes rows); its flusher delivers the
buffer to the consumer queues (:meth:`_deliver_batch`: shared batches, routing, backpressure and detaching) through
each queue's dispatcher end (:class:`~._queue._Feed`, the whole interface it has to a consumer), attaches consumers
and merges a catch-up dispatcher into the one it syncs to. See docs/sharing.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection
from types import TracebackType
from typing import Any

from ..errors import DecodeError, MybinlogError
from ..protocol import (
    BinlogPosition,
    Event,
    GtidEvent,
    GtidSet,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    TransactionPayloadEvent,
    XaPrepareEvent,
    XidEvent,
    can_attach,
)
from ._consumer import Binlog, ClientView
from ._items import (
    _ERROR,
    _FORWARD_TYPES,
    _FORWARDED,
    _KIND,
    _NOT_FORWARDED,
    _ROWS,
    _Batch,
    _gtid_set_contains,
    _Item,
    _Routed,
)
from ._queue import DETACHED, ENDED, FAILED, STOPPED, _Feed
from ._rows import BinlogStatus, _Rate
from ._source import EventSource

__all__ = ["BinlogEventsDispatcher"]

logger = logging.getLogger("mybinlog.sharing")

_ENDINGS = (XidEvent, XaPrepareEvent, QueryEvent)  # the events that can complete a transaction (and its payload's)


class BinlogEventsDispatcher:
    """Reads one upstream connection and fans its events out to the attached consumers.

    A reader task pulls events from the source into the dispatcher buffer (with the positions the source hands
    over, never decoding rows); the flusher delivers the buffer to every consumer queue when it holds
    ``max_bytes_in_binlog_dispatcher_buffer`` bytes or ``max_flush_milliseconds_in_binlog_dispatcher`` passed
    since the last flush. A catch-up dispatcher (``sync_to`` non-empty) moves its consumers to one of those
    dispatchers as soon as it stands at a transaction boundary the other has not passed yet (see
    docs/sharing.md), then closes its connection.

    The dispatcher owns its tasks: a supervisor task (holding a TaskGroup with the reader) started by
    :meth:`start` and awaited by :meth:`aclose` (or ``async with``).
    """

    def __init__(
        self,
        client: ClientView,
        name: str,
        source: EventSource,
        *,
        max_bytes: int,
        max_flush_ms: int,
        sync_to: Collection[BinlogEventsDispatcher] = (),
        clock: Callable[[], float] = time.monotonic,
        on_stopped: Callable[[BinlogEventsDispatcher], None] | None = None,
        on_detached: Callable[[Binlog], None] | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.max_bytes = max_bytes
        self.max_flush_ms = max_flush_ms
        self._on_stopped = on_stopped  # the client's bookkeeping: this dispatcher stopped / let a consumer go
        self._on_detached = on_detached
        self._source: EventSource | None = source
        start = source.position
        self._read_pos = start  # where the source stands: the last position it handed over
        self._in_txn = False  # the events read last are inside a transaction (the source starts at a boundary)
        self._flushed_pos = start
        self._flushed_open = False
        self._open_gtid: Any = None
        self._consumers: dict[Binlog, _Feed[Binlog]] = {}  # the consumers it serves, in the order they attached
        self._buffer: list[_Item] = []
        self._buffer_bytes = 0
        self._buffer_limit = max(1, max_bytes)
        self._wake = asyncio.Event()
        self._taken = asyncio.Event()
        self._reader_done = False
        self._reader_error: BaseException | None = None
        self._sync_to: list[BinlogEventsDispatcher] = list(sync_to)
        self._followers: set[BinlogEventsDispatcher] = set()
        for leader in self._sync_to:
            leader._followers.add(self)
        self._merge_requested = bool(self._sync_to)
        self._merged_into: BinlogEventsDispatcher | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.stopped = False
        self._reconnects = 0  # of the source, kept when it is closed
        self._failovers = 0  # moves of the source to another server (BinlogStream.failovers), kept when closed
        self._last_failover: str | None = None
        self._server_seen: tuple[str, int | None] = ("", None)  # (host:port, its server_id) last seen connected
        self._last_flush = time.monotonic()
        self._read_events = _Rate(clock)
        self._read_bytes = _Rate(clock)
        self._flush_events = _Rate(clock)
        self._flush_bytes = _Rate(clock)
        self.events_read = 0
        self.bytes_read = 0
        self.merges = 0
        self.queue_waits = 0  # times it waited for room in a full consumer queue
        self.queue_wait_seconds = 0.0
        self.detaches = 0  # consumers it detached (their queue stayed full too long)

    def __repr__(self) -> str:
        return f"<BinlogEventsDispatcher {self.name} of {self.client.name} at {self._read_pos}>"

    @property
    def position(self) -> BinlogPosition:
        """The boundary after the last transaction read from the source (the last position it handed over)."""
        return self._read_pos

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

    @property
    def stopping(self) -> bool:
        """Stopping or stopped: it takes no consumer any more (a merged catch-up dispatcher stops at once)."""
        return self._stopping or self.stopped

    @property
    def task(self) -> asyncio.Task[None] | None:
        """Its supervisor task (started by :meth:`start`)."""
        return self._task

    @property
    def connected(self) -> bool:
        """Whether its source connection is up now (False while a :class:`~mybinlog.BinlogStream` reconnects)."""
        source = self._source
        return source is not None and not self.stopped and bool(getattr(source, "connected", True))

    @property
    def reconnects(self) -> int:
        """Reconnects of its source so far (a :class:`~mybinlog.BinlogStream`'s ``reconnects``; 0 for others)."""
        if self._source is None:
            return self._reconnects
        return int(getattr(self._source, "reconnects", 0))

    @property
    def failovers(self) -> int:
        """Moves of its source to another server so far (a :class:`~mybinlog.BinlogStream`'s ``failovers``; 0 for
        other sources)."""
        if self._source is None:
            return self._failovers
        return int(getattr(self._source, "failovers", 0))

    @property
    def last_failover(self) -> str | None:
        """Why its source last moved to another server (``BinlogStream.last_failover``), or None."""
        if self._source is None:
            return self._last_failover
        reason = getattr(self._source, "last_failover", None)
        return reason if isinstance(reason, str) else None

    @property
    def source_server(self) -> str:
        """``host:port`` of the server its source reads (``BinlogStream.source``; "" when unknown or stopped)."""
        server = getattr(self._source, "source", "") if self._source is not None else ""
        return server if isinstance(server, str) else ""

    @property
    def source_server_id(self) -> int | None:
        """The ``server_id`` of the server its source reads (``BinlogStream.server``; kept while it reconnects to
        the same server), or None before it connected to it."""
        server = self.source_server
        try:
            info = getattr(self._source, "server", None) if self._source is not None else None
        except MybinlogError:  # not connected now (reconnecting): the id seen last on this server, if any
            info = None
        server_id = getattr(info, "server_id", None)
        if isinstance(server_id, int) and not isinstance(server_id, bool):
            self._server_seen = (server, server_id)
            return server_id
        seen_server, seen_id = self._server_seen
        return seen_id if seen_server == server and server else None

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
        self._reconnects = self.reconnects
        self._failovers, self._last_failover = self.failovers, self.last_failover
        source, self._source = self._source, None
        if source is not None:
            try:
                await source.close()
            except Exception:
                logger.warning("%s %s: error closing the source", self.client.name, self.name, exc_info=True)
        if error is None:
            error = self._reader_error
        consumers, self._consumers = self._consumers, {}
        for c in consumers.values():
            if error is not None:
                c.finish(FAILED, error)
            elif self._reader_done:
                c.finish(ENDED)
            else:
                c.finish(STOPPED)
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
        if self._on_stopped is not None:
            self._on_stopped(self)
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
                got = await source.next_with_position()
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
                item = _Item(None, _ERROR, None, self._in_txn, error=exc, table=table)
                self._buffer.append(item)
                self._wake.set()
                continue
            if got is None:
                return
            event, moved = got
            self.events_read += 1
            self.bytes_read += event.size
            self._read_events.add(1)
            self._read_bytes.add(event.size)
            made = self._make_item(event, moved)
            if made is None:
                continue
            item = made
            buffer_items = self._buffer
            was_empty = not buffer_items
            buffer_items.append(item)
            self._buffer_bytes += event.size
            if was_empty or immediate or self._buffer_bytes >= limit:
                self._wake.set()

    def _make_item(self, event: Event, moved: BinlogPosition | None) -> _Item | None:
        """``event`` as an item (None: nobody gets it), with the position the source moved to at it (``moved``) when
        that is a boundary: the end of a transaction, or a ROTATE or other move between transactions. A move inside
        a transaction (a GTID event fixing the offset of a GTID start, the ROTATE that reopens a dump in the middle
        of a transaction after a reconnect) only moves the dispatcher's own :attr:`position`."""
        if moved is not None:
            self._read_pos = moved
        if event.in_payload or isinstance(event, _ENDINGS):
            # an inner event of a compressed transaction: the source moves at its last one
            if moved is not None:
                self._in_txn = False
                return self._classify(event, moved, False)
            self._in_txn = True
            return self._classify(event, None, True)
        if isinstance(event, (GtidEvent, MariadbGtidEvent, RowsEvent)):
            self._in_txn = True
            return self._classify(event, None, True)
        if isinstance(event, RotateEvent):
            # between transactions a boundary too: the position moves to the next file (or stays where it is)
            return self._classify(event, None if self._in_txn else self._read_pos, self._in_txn)
        if isinstance(event, TransactionPayloadEvent):
            if event.events:  # the source moves at its last inner event
                self._in_txn = True
                return None
            if moved is not None:  # nothing inside: the payload itself completes the transaction
                self._in_txn = False
                return _Item(event, _NOT_FORWARDED, moved, False)
            return None
        if moved is not None and not self._in_txn:  # e.g. PREVIOUS_GTIDS naming the set of a file read from its start
            return _Item(event, _NOT_FORWARDED, moved, False)
        return None

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
        # consumer -> [its batch, entries queued, the item index after it]
        progress: dict[_Feed[Binlog], list[Any]] = {}
        # full queue -> loop time its wait ends (detached then, unless it has room)
        waits: dict[_Feed[Binlog], float] = {}
        committed = 0  # items[:committed] are part of the dispatcher's delivered state
        completed = False
        while True:
            stop = n  # the first item some queue has no room for
            held: dict[int, list[Any]] = {}
            for c in tuple(self._consumers.values()):
                if not c.served_by(self):
                    continue
                state = progress.get(c)
                if state is None:
                    state = progress[c] = [*self._batch_for(c, items, committed, shared)]
                while True:
                    batch, done, after = state
                    total = len(batch.entries)
                    if done < total:
                        end = c.fit(batch, done)
                        if end > done:
                            if done == 0 and end == total:
                                c.put(batch)
                                count = held.get(id(batch))
                                if count is None:
                                    held[id(batch)] = [batch, 1]
                                else:
                                    count[1] += 1
                            else:
                                part = batch.part(done, end)
                                c.put(part)
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
            blocking: list[_Feed[Binlog]] = []
            for c in tuple(self._consumers.values()):
                state = progress.get(c)
                if state is None or not c.served_by(self):
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
                if not c.served_by(self):
                    continue
                state = progress[c]
                batch, done, _ = state
                state[1] = await self._wait_and_put(c, batch, done, waits.pop(c))  # it has room now, or is gone

    def _batch_for(
        self, c: _Feed[Binlog], items: list[_Item], start: int, shared: dict[tuple[Any, Any, int], _Batch]
    ) -> list[Any]:
        """``[batch, 0, end]``: what consumer ``c`` gets of ``items[start:end]``."""
        n = len(items)
        if c.needs_routing:
            entries: list[_Routed] = []
            index: list[int] = []
            route = c.route
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
                if raw.position is not None and not c.needs_routing:  # where routing state changes
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
                wants = c.wants_table
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
        for c in tuple(self._consumers.values()):
            if not c.served_by(self):
                continue
            entry = c.route(item)
            if entry is None or entry[2] is None:
                continue
            logger.warning(
                "%s %s: consumer %s stops at %s: %s", self.client.name, self.name, c.name, c.position, entry[2]
            )
            self._let_go(c)
            c.finish(FAILED, entry[2])  # it still gets what is queued, then this error, every time

    async def _wait_and_put(self, c: _Feed[Binlog], batch: _Batch, done: int, until: float) -> int:
        """``c``'s queue has no room for ``batch.entries[done]``: wait for room (every event it reads makes some)
        until the loop time ``until``, then detach it. Returns how far ``batch`` is queued.

        ``until`` is its max_waiting_ms after the moment the dispatcher started waiting for it, the same moment for
        every queue full then (:meth:`_deliver_batch`): when it passed while the dispatcher waited for another
        queue, ``c`` is put what fits if it has room by now, else detached at once."""
        loop = asyncio.get_running_loop()
        c.want_space(True)
        began = loop.time()
        self.queue_waits += 1
        try:
            while c.served_by(self):
                end = c.fit(batch, done)
                if end > done:
                    part = batch.part(done, end)
                    c.put(part)
                    part.hold(1)
                    return end
                if loop.time() >= until:
                    break
                await c.wait_for_space(until)
        finally:
            c.want_space(False)
            waited = loop.time() - began
            self.queue_wait_seconds += waited
            c.waited(waited)
        if c.served_by(self):
            self._detach(c)
        return done

    def _detach(self, c: _Feed[Binlog]) -> None:
        logger.warning(
            "%s %s: consumer %s detached: its queue (%d bytes, limit %d) stayed full for %d ms",
            self.client.name,
            self.name,
            c.name,
            c.queued_bytes(),
            c.max_bytes,
            c.max_waiting_ms,
        )
        self._let_go(c)
        self.detaches += 1
        c.finish(DETACHED)

    def _let_go(self, c: _Feed[Binlog]) -> None:
        """``c`` leaves for good (detached, or failed by its table's decode error): the client forgets it too."""
        self._remove(c.binlog)
        if self._on_detached is not None:
            self._on_detached(c.binlog)

    def _remove(self, binlog: Binlog) -> None:
        c = self._consumers.pop(binlog, None)
        if c is not None:
            c.leave(self)
        if not self._consumers:
            self._wake.set()  # the flusher notices and stops

    async def leave(self, binlog: Binlog) -> None:
        """``binlog`` was closed: stop serving it; the dispatcher stops when that was its last consumer."""
        self._remove(binlog)
        if not self._consumers:
            await self.aclose()

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

    def attach(self, c: _Feed[Binlog], skip: GtidSet | None) -> None:
        """Serve the consumer ``c`` from the next flush on (ClickHouse's ``attach``), skipping the transactions in
        ``skip`` it executed already; attached inside a transaction, it waits for the next boundary."""
        c.attached_to(self, skip, self._flushed_open)
        self._consumers[c.binlog] = c

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
            self._consumers = {}
            for c in moved.values():
                leader.attach(c, c.merge_into(mine))
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
        dpos = self._read_pos
        rates = (
            self._read_events.per_sec(),
            self._read_bytes.per_sec(),
            self._flush_events.per_sec(),
            self._flush_bytes.per_sec(),
        )
        server = self.source_server
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
                    size=stats.size,
                    bytes=stats.bytes,
                    max_bytes=c.max_bytes,
                    max_waiting_ms=c.max_waiting_ms,
                    dispatcher_events_read_per_sec=rates[0],
                    dispatcher_bytes_read_per_sec=rates[1],
                    dispatcher_events_flush_per_sec=rates[2],
                    dispatcher_bytes_flush_per_sec=rates[3],
                    dispatcher_source_server=server,
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
