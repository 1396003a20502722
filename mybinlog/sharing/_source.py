"""What a dispatcher reads: the :class:`EventSource` protocol (an opened, positioned ``BinlogStream`` or a test fake),
the :data:`SourceFactory` that opens one at a GTID set or a position, and :class:`SourcePositions`, the positions to
hand over for a source that has only events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ..protocol import BinlogPosition, Event, GtidSet, PositionTracker, TransactionPayloadEvent

__all__ = ["EventSource", "SourceFactory", "SourcePositions"]


class EventSource(Protocol):
    """What a dispatcher reads: an opened, positioned :class:`~mybinlog.BinlogStream` or a test fake.

    ``position`` is read once, right after the source is opened: the boundary the first event follows.

    ``next_with_position`` hands over the next event with the position the source moved to when it handed that
    event out (None: it did not move), or returns None at the end of a non-blocking source. The source derives the
    positions; the dispatcher only passes them on (it runs no position tracker of its own). A source moves its
    position as :meth:`BinlogStream.next_with_position <mybinlog.BinlogStream.next_with_position>` does: at the
    event that completes a transaction (XID, XA_PREPARE, COMMIT, a statement outside BEGIN; the last inner event of
    a compressed transaction), at a ROTATE between transactions, and where it learns more about the boundary it
    stands at (a GTID event fixing the offset of a GTID start, a PREVIOUS_GTIDS event naming the set). The
    dispatcher takes a move as a transaction's end only at an event that can complete one, and as a boundary at a
    ROTATE only between transactions.
    """

    @property
    def position(self) -> BinlogPosition: ...

    async def next_with_position(self) -> tuple[Event, BinlogPosition | None] | None: ...

    async def close(self) -> None: ...


SourceFactory = Callable[[GtidSet | str | BinlogPosition | None], Awaitable[EventSource]]
"""Opens a source positioned after the given executed GTID set, or at the given position (a checkpoint: by its GTID
set where the server logs GTIDs, else by its file and offset), or at the server's current end (None)."""


class SourcePositions:
    """The positions to hand over with the events of a source that has only events (a binlog read from files, a
    recorded or scripted one): ``moved = positions.after(event)`` for each event in order, as
    :meth:`BinlogStream.next_with_position <mybinlog.BinlogStream.next_with_position>` hands them over (a new
    position where its tracker moves; a compressed transaction's at its last inner event, which must follow it).
    ``BinlogStream`` computes its own; the dispatcher uses none of this."""

    def __init__(self, start: BinlogPosition) -> None:
        self._tracker = PositionTracker(start)
        self.position = start
        self._inner = 0  # inner events of a compressed transaction still to come
        self._payload_position: BinlogPosition | None = None

    def after(self, event: Event) -> BinlogPosition | None:
        """The position handing ``event`` out moves the source to, or None."""
        if event.in_payload:
            if self._inner:
                self._inner -= 1
                if not self._inner and self._payload_position is not None:
                    self.position, self._payload_position = self._payload_position, None
                    return self.position
            return None
        tracker = self._tracker
        tracker.update(event)
        position = tracker.position
        if position is self.position:
            return None
        if isinstance(event, TransactionPayloadEvent) and event.events:
            self._inner = len(event.events)
            self._payload_position = position
            return None
        self.position = position
        return position
