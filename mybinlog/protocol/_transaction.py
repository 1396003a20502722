"""Whole transactions out of a sequence of events: :class:`Transaction` and the sans-IO :class:`TransactionCollector`
behind ``Binlog.transactions()`` and ``BinlogStream.transactions()``.

The collector is fed each event with the reader's position after it (``Binlog.position``/``BinlogStream.position``:
the boundary after the last transaction whose completing event was handed out). It tells the completing event by the
rule of :class:`~mybinlog.protocol._position.PositionTracker` (XID, XA PREPARE, COMMIT/ROLLBACK, or a statement
outside BEGIN), not by the position moving: a reader also moves its position between transactions (a ROTATE, the
first event after a reconnect, a transaction the consumer skips). The events between transactions (ROTATE,
FORMAT_DESCRIPTION, heartbeats, GTID lists) belong to none and are left out. Nothing here performs IO.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._events import (
    BinlogCheckpointEvent,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    StopEvent,
    TransactionPayloadEvent,
    XaPrepareEvent,
    XidEvent,
)
from ._gtid import Gtid
from ._position import BinlogPosition, _statement_kind

__all__ = ["Transaction", "TransactionCollector"]

# events that start, end or name no transaction (a compressed transaction's payload event is left out too: its inner
# events are handed out after it)
_BETWEEN = (
    RotateEvent,
    FormatDescriptionEvent,
    PreviousGtidsEvent,
    MariadbGtidListEvent,
    BinlogCheckpointEvent,
    HeartbeatEvent,
    StopEvent,
    TransactionPayloadEvent,
)


@dataclass(frozen=True, slots=True)
class Transaction:
    """One whole transaction as a reader handed it out.

    ``events``: its events in order (GTID, BEGIN, table maps and rows events, ..., XID or COMMIT; a DDL statement is a
    transaction of its own; the inner events of a compressed transaction). ``position``: the boundary after it, the
    position to persist once it is handled and to start from again (``create_binlog(position=...)``,
    ``BinlogStream(resume_from=...)``). ``gtid``: its GTID, None where the server logs none.
    """

    events: list[Event]
    position: BinlogPosition
    gtid: Gtid | None = None


class TransactionCollector:
    """Groups events into :class:`Transaction` objects (sans-IO: events in, transactions out).

    :meth:`add` takes each event with the reader's position right after it was handed out, and returns the
    transaction it completed, or None.
    """

    __slots__ = ("_began", "_events", "_gtid")

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._gtid: Gtid | None = None
        self._began = False  # inside BEGIN (explicit, or implied by a MariaDB GTID that is not standalone)

    def add(self, event: Event, position: BinlogPosition) -> Transaction | None:
        if isinstance(event, _BETWEEN):
            return None
        self._events.append(event)
        if isinstance(event, (XidEvent, XaPrepareEvent)):
            return self._complete(position)
        if isinstance(event, QueryEvent):
            kind = _statement_kind(event.query)
            if kind == "begin":
                self._began = True
            elif kind == "end" or (kind == "statement" and not self._began):
                return self._complete(position)
        elif isinstance(event, GtidEvent):
            self._gtid = event.gtid
            self._began = False
        elif isinstance(event, MariadbGtidEvent):
            self._gtid = event.gtid
            self._began = not event.standalone
        return None

    def _complete(self, position: BinlogPosition) -> Transaction:
        txn = Transaction(self._events, position, self._gtid)
        self._events = []
        self._gtid = None
        self._began = False
        return txn
