"""Helpers of the source failover tests (stream level)."""

from __future__ import annotations

import asyncio

from mybinlog import BinlogStream
from mybinlog.protocol._events import WriteRowsEvent

__all__ = ["inserted_ids"]


async def inserted_ids(stream: BinlogStream, want: int, table: str = "t") -> list[int]:
    """The ids (first column) of the rows inserted into ``table``, read until ``want`` of them came (deadline: 120 s;
    fewer when a non-blocking stream ends)."""
    seen: list[int] = []
    async with asyncio.timeout(120):
        async for event in stream:
            if isinstance(event, WriteRowsEvent) and event.table.name == table:
                seen.extend(int(row[0]) for row in event.rows)
                if len(seen) >= want:
                    break
    return seen
