"""The copy step of the replicator's initial load: every table's rows, read inside the load's consistent snapshot,
into new tables of the sink (see :meth:`Replicator._initial_load` for the rest: scope, crash marker, checkpoint).

Many small tables (a schema of thousands) must not cost a string of round trips each (issue 24: 25 ms a table,
50 s for 2,000 tables of 10 rows). The snapshot is one source connection, so tables are read one after the other;
but the sink's side of a small table (its CREATE and its insert) runs in a task while the next tables are read,
with at most :data:`CONCURRENT_TABLES` of them in flight and at most :data:`SMALL_TABLE_BYTES` held for each. A
bigger table is created at once and its rows inserted as they are read, as before. The target tables that exist
are listed once (only those are dropped first), and the columns come from the definitions already parsed (no
information_schema look-up per table).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .. import _failpoints
from .. import ddl as _ddl
from ..protocol._position import BinlogPosition
from ..source._session import SourceConnection
from ._observe import _LoadProgress

if TYPE_CHECKING:
    from ._settings import ReplicaStatus
    from ._sink import Guard, Sink, SinkTable

__all__ = ["CONCURRENT_TABLES", "SMALL_TABLE_BYTES", "copy_tables"]

CONCURRENT_TABLES = 4  # small tables whose target writes may be in flight while the next ones are read
SMALL_TABLE_BYTES = 1 << 20  # a table whose encoded rows stay under this is held and written by a task


async def copy_tables(
    sink: Sink,
    leader: Guard,
    status: ReplicaStatus,
    src: SourceConnection,
    database: str,
    definitions: dict[str, _ddl.TableDef],
    position: BinlogPosition,
    progress: _LoadProgress,
) -> int:
    """Copy the tables ``definitions`` names into new tables of ``sink`` as of ``position``; the rows copied."""
    existing = await sink.existing_tables()
    copied = 0
    pending: set[asyncio.Task[None]] = set()

    def counted(rows: int, name: str) -> None:
        nonlocal copied
        copied += rows
        status.load_rows = copied
        progress.update(copied, name)
        if _failpoints.ACTIVE:
            _failpoints.reached("load.after_rows")

    async def create(table: SinkTable) -> None:
        await leader.confirm()
        if table.name in existing:
            await sink.drop_table(table.name)
        await sink.create_table(table.definition)

    async def insert(table: SinkTable, payload: Any, rows: int) -> None:
        await leader.confirm()
        await sink.load_write(table, payload)
        leader.wrote(f"an initial-load write of {table.name}")
        counted(rows, table.name)

    async def write(table: SinkTable, chunks: list[tuple[Any, int, int]]) -> None:
        await create(table)
        for payload, rows, _size in chunks:
            await insert(table, payload, rows)

    async def reap(limit: int) -> None:
        nonlocal pending
        while len(pending) > limit:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # the first failure ends the load

    try:
        for name, definition in definitions.items():
            table = sink.table(definition)
            chunks: list[tuple[Any, int, int]] = []
            held = 0
            streaming = False  # a big table: created, its rows inserted as they are read
            async for rows in src.stream_rows(database, name, definition.columns):
                payload = sink.load_payload(table, rows, position)
                if streaming:
                    await insert(table, payload, len(rows))
                    continue
                size = len(payload) if isinstance(payload, bytes | str) else SMALL_TABLE_BYTES
                chunks.append((payload, len(rows), size))
                held += size
                if held > SMALL_TABLE_BYTES:
                    streaming = True
                    await create(table)
                    for data, count, _size in chunks:
                        await insert(table, data, count)
                    chunks = []
            if not streaming:
                await reap(CONCURRENT_TABLES - 1)
                pending.add(asyncio.create_task(write(table, chunks), name=f"mybinlog load {name}"))
        await reap(0)
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)  # cancelled (or failed: the first failure is already raised)
    return copied
