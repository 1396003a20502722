"""One consumer queue: its state, declared in one place (:class:`_QueueState`, as anyio's
``_MemoryObjectStreamState``), and the dispatcher's end of it (:class:`_Feed`).

A queue has two ends over one state: :class:`~._consumer.Binlog`, the consumer's (the receiving end, what the user
reads), and :class:`_Feed`, the dispatcher's (the sending end: it routes events for the consumer, puts batches in,
waits for room, detaches). Neither end reaches into the other; both read and write only the :class:`_QueueState`.

The dispatcher's interface to a consumer is :class:`_Feed`, all of it:

==============================  =====================================================================================
``name``, ``binlog``            the consumer's name and its receiving end (status rows, logs, ``consumers``)
``served_by(d)``                whether dispatcher ``d`` serves the consumer now (False once it left, detached...)
``attached_to(d, skip, open)``  ``d`` serves it from now on; ``skip``: executed transactions to skip; ``open``: the
                                dispatcher stands inside a transaction, which the consumer waits out
``merge_into(at)``              moved by a merge at the delivered boundary ``at``: the skip set it attaches with
``needs_routing``               whether it needs entries routed for it (:meth:`route`) rather than a shared batch
``route(item)``                 what it gets for one item (skip sets, positions with what it executed beyond ``d``)
``wants_table(schema, table)``  its table filter
``fit(batch, start)``/``put``   how much of a batch fits its byte limit now / queue (part of) a batch
``want_space(flag)``            the dispatcher waits (or stopped waiting) for room: every event read signals
``wait_for_space(until)``       wait until it read something or the loop time ``until`` passed
``waited(seconds)``             count one wait for room (``Binlog.statistics``)
``finish(kind, error)``         end it: ended, detached, stopped or failed (it reads what was queued first)
==============================  =====================================================================================

The queue sits below the consumer, the dispatcher and the client in the module order (``_queue`` -> ``_consumer`` ->
``_dispatcher`` -> ``_client``; no module imports one above it, not even for type checking:
tests/unit/test_layers.py). What it holds of the objects above is declared here: the dispatcher serving the consumer
as a :class:`DispatcherView` (what the state keeps and what ``Binlog.dispatcher`` shows), and the receiving end as
the type parameter ``R`` of :class:`_QueueState` and :class:`_Feed` (handed back to the client and the dispatcher,
never used here).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from ..protocol import BinlogPosition, GtidSet, RowsEvent
from ._items import (
    _ERROR,
    _FORWARDED,
    _NO_BATCH,
    _ROWS,
    _WINDOW_STEP,
    _Batch,
    _Entry,
    _gtid_set_contains,
    _Item,
    _union,
)
from ._rows import BinlogStatus

ENDED = "ended"
DETACHED = "detached"
STOPPED = "stopped"
FAILED = "failed"
CLOSED = "closed"


class DispatcherView(Protocol):
    """The dispatcher serving a consumer, as the objects below it see it: what the queue state keeps
    (:attr:`_QueueState.dispatcher`, compared by identity only) and what :attr:`Binlog.dispatcher
    <mybinlog.Binlog.dispatcher>` shows you, its name, positions, connection and source server.
    :class:`~mybinlog.BinlogEventsDispatcher` is the one implementation (structurally: it does not name this class).

    Why a declared view rather than the class: the dispatcher sits above the queue and the consumer (it imports
    them), and the consumer's public API navigates back up to it; naming the class here would close an import circle
    (tests/unit/test_layers.py counts type-checking imports too). The consumer and its queue only keep the dispatcher
    and hand it back (to the client when the consumer closes: ``BinlogClient`` finds its own dispatcher by identity).
    """

    @property
    def name(self) -> str:
        """``dispatcher-N`` (status rows, logs)."""

    @property
    def position(self) -> BinlogPosition:
        """The boundary after the last transaction read from the source."""

    @property
    def delivered_position(self) -> BinlogPosition:
        """The boundary after the last transaction handed to the consumers."""

    @property
    def connected(self) -> bool:
        """Whether its source connection is up now."""

    @property
    def reconnects(self) -> int:
        """Reconnects of its source so far."""

    @property
    def failovers(self) -> int:
        """Moves of its source to another server so far."""

    @property
    def last_failover(self) -> str | None:
        """Why its source last moved to another server, or None."""

    @property
    def source_server(self) -> str:
        """``host:port`` of the server its source reads ("" when unknown or stopped)."""

    @property
    def source_server_id(self) -> int | None:
        """The ``server_id`` of the server its source reads, or None before it connected to it."""

    def status(self) -> list[BinlogStatus]:
        """One status row per consumer it serves."""


R = TypeVar("R")
"""The receiving end of a queue (:class:`~._consumer.Binlog`): the state and :class:`_Feed` only hand it back (to the
client when it closes, to the dispatcher as its consumer)."""


def _no_entries() -> list[Any]:
    return _NO_BATCH.entries


@dataclass(eq=False, slots=True)
class _QueueState(Generic[R]):
    """Everything about one consumer queue, shared by its two ends (the consumer's :class:`Binlog` and the
    dispatcher's :class:`_Feed`); ``R``: the type of the receiving end (``_QueueState[Binlog]``)."""

    name: str
    max_bytes: int
    """``max_bytes_in_binlog_queue`` (0: unlimited)."""
    max_waiting_ms: int
    """``max_milliseconds_to_wait_in_binlog_queue``."""
    databases: frozenset[str] | None
    tables: frozenset[str] | None
    share: Callable[[_Batch, int], None]
    """The client's sharing window of decoded rows: called with (batch, entry) when the consumer read a batch
    that far, the first of the consumers to do so (``BinlogClient._share``)."""
    window_step: int
    """Bytes of rows events the fast path hands out at most between two calls of ``share`` (1/8 of the window)."""
    left: Callable[[R, DispatcherView | None], Awaitable[None]]
    """Tells the client the consumer was closed (and the dispatcher that served it)."""

    # -- positions --------------------------------------------------------------------------------------------------
    position: BinlogPosition
    """The boundary after the last transaction whose completing event was handed out (``Binlog.position``)."""
    routed: BinlogPosition
    """The position of the last entry routed for it (what :meth:`_Feed.route` merges ``base`` into)."""
    base: GtidSet | None = None
    """What the consumer executed beyond its dispatcher's positions (None: nothing); merged into the positions of
    the entries routed for it, so that a merge (which raises it) never moves the position of entries queued before."""

    # -- the queue: batches put by the dispatcher; the first is being read (``items`` up to ``i``) --------------------
    batch: _Batch = _NO_BATCH
    items: list[Any] = field(default_factory=_no_entries)
    i: int = 0
    end: int = 0
    fast_end: int = 0
    """The fast path hands out the current batch's items inline up to here (its next mark)."""
    mark: int = 0
    """The first of the current batch's marks not passed yet."""
    routed_batch: bool = False
    """The current batch has :class:`_Routed` entries."""
    batches: deque[_Batch] = field(default_factory=deque)
    batches_bytes: int = 0
    batches_events: int = 0
    read_bytes: int = 0
    """Bytes of the batches read (to their end, or dropped)."""
    read_events: int = 0

    # -- waiters ----------------------------------------------------------------------------------------------------
    data: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when something is queued or the consumer ends (the receiving end waits on it)."""
    space: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the consumer read something or ended (the dispatcher waits on it when the queue is full)."""
    space_wanted: bool = False
    """The dispatcher waits for room: every event read must set ``space`` (no fast path meanwhile)."""
    waiting: int = 0
    """Tasks waiting in ``receive``/``read_event``/``__anext__`` for the next event."""
    queue_waits: int = 0
    queue_wait_seconds: float = 0.0

    # -- detach state -----------------------------------------------------------------------------------------------
    ended: str | None = None
    """None while attached; ENDED, DETACHED, STOPPED, FAILED or CLOSED after."""
    error: BaseException | None = None
    dispatcher: DispatcherView | None = None

    # -- routing (the dispatcher's end) -----------------------------------------------------------------------------
    skip: GtidSet | None = None
    """Transactions to skip (already executed)."""
    skipping: bool = False
    await_boundary: bool = False
    """Attached inside a transaction: wait for the next boundary."""
    wants: dict[tuple[str, str], bool] = field(default_factory=dict)

    # -- what both ends compute from the state ----------------------------------------------------------------------
    def taken(self) -> tuple[int, int]:
        """(bytes, events) handed out from the current batch."""
        i = self.i
        if i == 0:
            return 0, 0
        batch = self.batch
        if i >= self.end:
            return batch.nbytes, batch.nevents
        cum, counts = batch.prefix()
        return cum[i], counts[i]

    def queued_bytes(self) -> int:
        """Bytes queued (what counts against ``max_bytes``)."""
        return self.batches_bytes + self.batch.nbytes - self.taken()[0]

    def sync_fast(self) -> None:
        """Where the fast path of the current batch stops: its next mark (never while the dispatcher waits for room,
        which every event read must signal)."""
        if self.space_wanted:
            self.fast_end = 0
            return
        marks = self.batch.marks
        k = self.mark
        i = self.i
        n = len(marks)
        while k < n and marks[k] < i:
            k += 1
        self.mark = k
        end = marks[k] if k < n else self.end
        if end - i > 1:
            # stop at least every _WINDOW_STEP events or 1/8 of the sharing window's bytes, so that the rows events
            # read go to the window in time (see BinlogClient._share)
            end = min(end, i + _WINDOW_STEP)
            cum = self.batch.prefix()[0]
            step = self.window_step
            if cum[end] - cum[i] > step:
                end = max(bisect.bisect_right(cum, cum[i] + step, i, end) - 1, i + 1)
        self.fast_end = end


class _Feed(Generic[R]):
    """The dispatcher's end of one consumer queue (see the module docstring for the whole interface); ``R``: the
    type of its receiving end, ``binlog`` (the dispatcher's ``_Feed[Binlog]``)."""

    __slots__ = ("binlog", "name", "q")

    def __init__(self, binlog: R, q: _QueueState[R]) -> None:
        self.binlog = binlog
        self.name = q.name
        self.q = q

    def __repr__(self) -> str:
        return f"<_Feed of {self.binlog!r}>"

    @property
    def max_bytes(self) -> int:
        return self.q.max_bytes

    @property
    def max_waiting_ms(self) -> int:
        return self.q.max_waiting_ms

    @property
    def position(self) -> BinlogPosition:
        return self.q.position

    # -- serving ----------------------------------------------------------------------------------------------------
    def served_by(self, d: DispatcherView) -> bool:
        return self.q.dispatcher is d

    def attached_to(self, d: DispatcherView, skip: GtidSet | None, open_transaction: bool) -> None:
        q = self.q
        q.dispatcher = d
        q.skip = skip
        q.skipping = False
        q.await_boundary = open_transaction

    def merge_into(self, at: BinlogPosition) -> GtidSet | None:
        """Moved by a merge at the boundary ``at`` its old dispatcher delivered: the skip set it attaches to the new
        dispatcher with (what it executed)."""
        q = self.q
        if q.base is None:
            q.routed = at  # the last position routed to it: shared batches do not keep `routed`
        skip = _union(q.base, at.gtid_set)
        q.base = skip
        return skip

    def leave(self, d: DispatcherView) -> None:
        """``d`` no longer serves it (it still may have ended: see :meth:`finish`)."""
        if self.q.dispatcher is d:
            self.q.dispatcher = None

    def finish(self, kind: str, error: BaseException | None = None) -> None:
        """End it (ENDED, DETACHED, STOPPED or FAILED): the consumer reads what was queued, then gets the end."""
        q = self.q
        if q.ended is None:
            q.ended = kind
            q.error = error
            q.dispatcher = None
        q.data.set()
        q.space.set()

    # -- queueing ---------------------------------------------------------------------------------------------------
    def queued_bytes(self) -> int:
        return self.q.queued_bytes()

    def fit(self, batch: _Batch, start: int) -> int:
        """How far (an entry index of ``batch``) its entries from ``start`` fit in the queue now. Markers always
        fit; one event larger than ``max_bytes`` fits an empty queue."""
        total = len(batch.entries)
        q = self.q
        limit = q.max_bytes
        if not limit:
            return total
        room = limit - q.queued_bytes()
        if start == 0 and batch.nbytes <= room:
            return total
        cum, _ = batch.prefix()
        end = bisect.bisect_right(cum, cum[start] + max(room, 0), start) - 1
        if end == start and start < total and q.i >= q.end and not q.batches:  # the queue is empty
            end = bisect.bisect_right(cum, cum[start + 1], start + 1) - 1  # that event, and the markers after it
        return end

    def put(self, batch: _Batch) -> None:
        q = self.q
        q.batches.append(batch)
        q.batches_bytes += batch.nbytes
        q.batches_events += batch.nevents
        q.data.set()

    async def wait_for_space(self, until: float) -> None:
        """Wait until the consumer read something (or ended) or the loop time ``until`` passed."""
        q = self.q
        q.space.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(until):
                await q.space.wait()

    def want_space(self, wanted: bool) -> None:
        """The dispatcher waits (or stopped waiting) for room in this queue."""
        q = self.q
        q.space_wanted = wanted
        q.sync_fast()

    def waited(self, seconds: float) -> None:
        """The dispatcher waited ``seconds`` for room in this queue (one more wait, counted in its statistics)."""
        q = self.q
        q.queue_waits += 1
        q.queue_wait_seconds += seconds

    # -- routing ----------------------------------------------------------------------------------------------------
    @property
    def needs_routing(self) -> bool:
        """Whether it has routing state of its own (a skip set, what it executed beyond its dispatcher, a
        transaction to wait out): then it gets entries routed for it, not the shared batch of its table filter."""
        q = self.q
        return q.base is not None or q.skip is not None or q.skipping or q.await_boundary

    @property
    def databases(self) -> frozenset[str] | None:
        return self.q.databases

    @property
    def tables(self) -> frozenset[str] | None:
        return self.q.tables

    def wants_table(self, schema: str, table: str) -> bool:
        q = self.q
        key = (schema, table)
        want = q.wants.get(key)
        if want is None:
            dbs, tables = q.databases, q.tables
            want = (dbs is None or schema in dbs) and (
                tables is None or table in tables or f"{schema}.{table}" in tables
            )
            q.wants[key] = want
        return want

    def _effective(self, pos: BinlogPosition) -> BinlogPosition:
        """The consumer's position once it has been handed the entry at the dispatcher's ``pos``: that position
        with everything the consumer had executed beyond it (``base``), never going backwards."""
        q = self.q
        base = q.base
        if base is None:
            q.routed = pos
            return pos
        if _gtid_set_contains(pos.gtid_set, base):
            q.base = None
            q.routed = pos
            return pos
        cur = q.routed
        gtids = _union(base, pos.gtid_set)
        if (pos.file, pos.offset) > (cur.file, cur.offset):
            eff = replace(pos, gtid_set=gtids)
        else:
            eff = replace(cur, gtid_set=gtids)
        q.routed = eff
        return eff

    def route(self, item: _Item) -> _Entry | None:
        """What this consumer gets for ``item``: an entry to queue, or None."""
        q = self.q
        raw = item.position
        pos = None if raw is None else self._effective(raw)
        if q.await_boundary:
            if pos is None:
                return None
            q.await_boundary = False
            return (None, pos, None)
        if item.is_gtid:
            skip = q.skip
            q.skipping = skip is not None and item.gtid is not None and item.gtid in skip
        if q.skipping:
            if pos is None:
                return None
            q.skipping = False
            if q.skip is not None and raw is not None and _gtid_set_contains(raw.gtid_set, q.skip):
                q.skip = None
            return (None, pos, None)
        if raw is not None and q.skip is not None and _gtid_set_contains(raw.gtid_set, q.skip):
            q.skip = None
        kind = item.kind
        if kind == _FORWARDED:
            return (item, pos, None)
        if kind == _ROWS:
            event = item.event
            assert isinstance(event, RowsEvent)
            if self.wants_table(event.table.schema, event.table.name):
                return (item, pos, None)
        elif kind == _ERROR:
            table = item.table
            if table is None or self.wants_table(*table):
                return (None, pos, item.error)
        return (None, pos, None) if pos is not None else None
