"""What a dispatcher reads: the :class:`EventSource` protocol (an opened, positioned ``BinlogStream`` or a test fake)
and the :data:`SourceFactory` that opens one at a GTID set or a position."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ..protocol._events import Event
from ..protocol._gtid import GtidSet
from ..protocol._position import BinlogPosition

__all__ = ["EventSource", "SourceFactory"]


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
