"""The copy step of the replicator's initial load: every table's rows, read inside the load's consistent snapshot,
into a new ClickHouse table (see :meth:`Replicator._initial_load` for the rest: scope, crash marker, checkpoint).

Many small tables (a schema of thousands) must not cost a string of round trips each (issue 24: 25 ms a table,
50 s for 2,000 tables of 10 rows). The snapshot is one source connection, so tables are read one after the other;
but the ClickHouse side of a small table (its CREATE and its insert) runs in a task while the next tables are read,
with at most :data:`CONCURRENT_TABLES` of them in flight and at most :data:`SMALL_TABLE_BYTES` held for each. A
bigger table is created at once and its rows inserted as they are read, as before. The target tables that exist
are listed once (only those are dropped first), and the columns come from the definitions already parsed (no
information_schema look-up per table).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from .. import _failpoints
from .. import ddl as _ddl
from ..clickhouse import quote_string
from ..source._session import SourceConnection
from ._observe import _LoadProgress
from ._schema import TableOwner, _Table

if TYPE_CHECKING:
    from ._settings import ReplicaStatus

__all__ = ["CONCURRENT_TABLES", "SMALL_TABLE_BYTES", "Loading", "copy_tables"]


class Loading(TableOwner, Protocol):
    """What the copy reads and calls of the replica it loads (the replicator)."""

    @property
    def replica(self) -> str: ...
    @property
    def status(self) -> ReplicaStatus: ...
    async def _confirm_lease(self) -> None: ...
    async def _create_ch_table(self, definition: _ddl.TableDef) -> None: ...
    def _wrote(self, what: str) -> None: ...


CONCURRENT_TABLES = 4  # small tables whose ClickHouse writes may be in flight while the next ones are read
SMALL_TABLE_BYTES = 1 << 20  # a table whose encoded rows stay under this is held and written by a task


async def copy_tables(
    r: Loading,
    src: SourceConnection,
    names: Sequence[str],
    definitions: dict[str, _ddl.TableDef],
    suffix: str,
    progress: _LoadProgress,
) -> int:
    """Copy ``names`` (their definitions given) into new ClickHouse tables; the number of rows copied."""
    existing = {
        row[0]
        for row in await r.target.query(
            f"SELECT name FROM system.tables WHERE database = {quote_string(r.target_database)}"
        )
    }
    copied = 0
    pending: set[asyncio.Task[None]] = set()

    def counted(rows: int, name: str) -> None:
        nonlocal copied
        copied += rows
        r.status.load_rows = copied
        progress.update(copied, name)
        if _failpoints.ACTIVE:
            _failpoints.reached("load.after_rows")

    async def create(table: _Table) -> None:
        await r._confirm_lease()
        if table.name in existing:
            await r.target.execute(f"DROP TABLE IF EXISTS {table.ch_table}")
        await r._create_ch_table(table.definition)

    async def insert(table: _Table, data: bytes, rows: int) -> None:
        await r._confirm_lease()
        await r.target.insert_tsv(table.ch_table, table.insert_columns, data)
        r._wrote(f"an initial-load insert into {table.ch_table}")
        counted(rows, table.name)

    async def write(table: _Table, chunks: list[tuple[bytes, int]]) -> None:
        await create(table)
        for data, rows in chunks:
            await insert(table, data, rows)

    async def reap(limit: int) -> None:
        nonlocal pending
        while len(pending) > limit:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # the first failure ends the load

    try:
        for name in names:
            table = _Table(r, definitions[name])
            chunks: list[tuple[bytes, int]] = []
            held = 0
            streaming = False  # a big table: created, its rows inserted as they are read
            async for rows in src.stream_rows(r.database, name, table.definition.columns):
                encode = table.select_encoder
                data = "".join([encode(row) + suffix for row in rows]).encode("utf-8", "surrogateescape")
                if streaming:
                    await insert(table, data, len(rows))
                    continue
                chunks.append((data, len(rows)))
                held += len(data)
                if held > SMALL_TABLE_BYTES:
                    streaming = True
                    await create(table)
                    for data, count in chunks:
                        await insert(table, data, count)
                    chunks = []
            if not streaming:
                await reap(CONCURRENT_TABLES - 1)
                pending.add(asyncio.create_task(write(table, chunks), name=f"mybinlog load {r.replica}.{name}"))
        await reap(0)
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)  # cancelled (or failed: the first failure is already raised)
    return copied
