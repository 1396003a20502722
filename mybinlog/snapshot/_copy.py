"""The executor side: copy chunks from MySQL into ClickHouse (runs inside Spark Python workers).

For each chunk a task connects to the source, opens a consistent-snapshot transaction and takes its low watermark
(:func:`~._source.open_chunk_snapshot`), announces the attempt (``started`` with the watermark, before writing
anything), streams the chunk through an unbuffered cursor, encodes each row to TabSeparated with the same
encoders the binlog replicator uses plus ``_sign = 1`` and ``_version = snapshot_version(watermark)``, and
inserts in large batches (``batch_rows`` / ``batch_bytes``), one insert in flight while the next batch is read.

Where the rows go (a *sink*):

* a ClickHouse server: the task inserts over HTTP itself, and writes its state events into the same server;
* embedded ClickHouse (chdb): one process at a time may open a chdb directory, and the driver holds it, so the
  task writes each batch as a file into a spool directory (``<name>.tsv``, renamed into place when complete) and
  the driver inserts the files and records the state (:class:`SpoolLoader` in ``_job.py``). A task waits while
  the spool holds ``spool_max_files`` unloaded batches, so the spool stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..clickhouse import snapshot_version
from ..protocol import BinlogPosition
from ..source import DSN, select_where
from ._chunks import Chunk, chunk_predicate
from ._source import Watermark, connect_source, open_chunk_snapshot, stream_query

if TYPE_CHECKING:
    from ..clickhouse import Capabilities, Target
    from ..ddl import TableDef
    from ._state import StateStore

__all__ = ["ChunkResult", "CopyJob", "CopyTable", "copy_partition", "meta_columns", "meta_suffix"]

logger = logging.getLogger("mybinlog.snapshot")


def meta_columns(engine: str) -> tuple[str, ...]:
    return ("_sign", "_version", "_is_deleted") if engine == "replacing_is_deleted" else ("_sign", "_version")


def meta_suffix(meta: tuple[str, ...], version: int) -> str:
    """The end of every snapshot row: alive (``_sign = 1``, ``_is_deleted = 0``) with the chunk's version, for a
    table with the meta columns ``meta``."""
    return f"\t1\t{version}\t0\n" if "_is_deleted" in meta else f"\t1\t{version}\n"


@dataclass(frozen=True)
class CopyTable:
    """One source table as the executors need it."""

    name: str
    definition: TableDef
    source_table: str  # `db`.`t`
    ch_table: str  # `db`.`t` in ClickHouse
    key: tuple[str, ...]
    key_charsets: tuple[str | None, ...]
    filters: tuple[str, ...] = ()  # extra SQL conditions (key range, --where), ANDed
    meta: tuple[str, ...] = ("_sign", "_version")  # the ClickHouse table's meta columns

    @property
    def columns(self) -> list[str]:
        return [c.name for c in self.definition.columns]

    @property
    def insert_columns(self) -> list[str]:
        return [*self.columns, *self.meta]

    def select_sql(self, chunk: Chunk) -> str:
        from ..clickhouse.types import select_expression

        cols = [select_expression(c) for c in self.definition.columns]  # VECTOR as its bytes
        conditions = [chunk_predicate(self.key, chunk, self.key_charsets)] if self.key else []
        conditions += [f"({f})" for f in self.filters]
        where = " AND ".join(c for c in conditions if c != "1") or "1"
        return select_where(self.source_table, cols, where)


@dataclass(frozen=True)
class CopyJob:
    """Everything a task needs; shipped to the executors (it holds credentials: never log it)."""

    snapshot_id: str
    source: DSN
    tables: dict[str, CopyTable]
    capabilities: Capabilities | None  # None for a Kafka target
    sink: str  # "http" | "spool" | "kafka" (_kafka_copy.py)
    target_url: str = field(repr=False)
    meta_database: str = "mybinlog_meta"
    spool_dir: str | None = None
    batch_rows: int = 100_000
    batch_bytes: int = 32 << 20
    fetch_rows: int = 5_000
    progress_rows: int = 10_000  # rows read between progress events (at most two a second)
    spool_max_files: int = 8
    # tests only: a chunk with ordinal >= N stops after its first inserted batch while the file exists
    hold: tuple[int, str] | None = None


@dataclass
class ChunkResult:
    ordinal: int
    attempt: str
    watermark: Watermark
    rows: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        wm = self.watermark
        return {
            "ordinal": self.ordinal,
            "attempt": self.attempt,
            "file": wm.file,
            "offset": wm.offset,
            "gtids": wm.gtids,
            "exact": wm.exact,
            "rows": self.rows,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkResult:
        wm = Watermark(str(d["file"]), int(d["offset"]), d.get("gtids"), bool(d.get("exact")))
        return cls(int(d["ordinal"]), str(d["attempt"]), wm, int(d["rows"]), float(d["seconds"]))


# --- sinks --------------------------------------------------------------------------------------------------


class _Sink(Protocol):
    async def started(self, chunk: Chunk, attempt: str, watermark: Watermark) -> None: ...
    async def write(self, table: CopyTable, chunk: Chunk, attempt: str, data: bytes, rows: int) -> None: ...
    async def done(self, chunk: Chunk, attempt: str, watermark: Watermark, rows: int) -> None: ...
    async def progress(self, chunk: Chunk, attempt: str, rows: int) -> None: ...
    async def aclose(self) -> None: ...


class _HttpSink:
    def __init__(self, target: Target, state: StateStore) -> None:
        self.target = target
        self.state = state

    async def started(self, chunk: Chunk, attempt: str, watermark: Watermark) -> None:
        await self.state.record(chunk.ordinal, attempt, "started", watermark)

    async def write(self, table: CopyTable, chunk: Chunk, attempt: str, data: bytes, rows: int) -> None:
        await self.target.insert_tsv(table.ch_table, table.insert_columns, data)
        await self.state.record(chunk.ordinal, attempt, "rows", None, rows)

    async def done(self, chunk: Chunk, attempt: str, watermark: Watermark, rows: int) -> None:
        await self.state.record(chunk.ordinal, attempt, "done", watermark, rows)

    async def progress(self, chunk: Chunk, attempt: str, rows: int) -> None:
        await self.state.record(chunk.ordinal, attempt, "read", None, rows)

    async def aclose(self) -> None:
        await self.target.aclose()


def spool_name(ordinal: int, attempt: str, kind: str, batch: int = 0, rows: int = 0) -> str:
    """Spool file names; the driver parses them back with :func:`parse_spool_name`."""
    if kind == "tsv":
        return f"c{ordinal:07d}-{attempt}-b{batch:06d}-r{rows}.tsv"
    return f"c{ordinal:07d}-{attempt}.{kind}.json"


def parse_spool_name(name: str) -> tuple[int, str, str, int, int] | None:
    """(ordinal, attempt, kind, batch, rows) of a spool file name, None for other files (and temporaries)."""
    if not name.startswith("c") or name.startswith("."):
        return None
    try:
        if name.endswith(".tsv"):
            head, attempt, b, r = name[: -len(".tsv")].split("-")
            return int(head[1:]), attempt, "tsv", int(b[1:]), int(r[1:])
        if name.endswith(".json"):
            stem, kind, _ = name.rsplit(".", 2)
            head, attempt = stem.split("-")
            return int(head[1:]), attempt, kind, 0, 0
    except ValueError:
        return None
    return None


async def _wait_until(condition: Callable[[], bool], interval: float = 0.02) -> None:
    """Poll a condition on the file system (written by another process: there is nothing to wait on)."""
    while True:
        if await asyncio.to_thread(condition):
            return
        await asyncio.sleep(interval)


def _write_atomic(directory: Path, name: str, data: bytes) -> None:
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, directory / name)


class _SpoolSink:
    def __init__(self, directory: Path, max_files: int) -> None:
        self.dir = directory
        self.max_files = max_files
        self.batches: dict[str, int] = {}
        directory.mkdir(parents=True, exist_ok=True)

    async def started(self, chunk: Chunk, attempt: str, watermark: Watermark) -> None:
        doc = {"file": watermark.file, "offset": watermark.offset, "gtids": watermark.gtids}
        _write_atomic(self.dir, spool_name(chunk.ordinal, attempt, "started"), json.dumps(doc).encode())

    def _pending(self) -> int:
        return sum(1 for n in os.listdir(self.dir) if n.endswith(".tsv") and not n.startswith("."))

    async def write(self, table: CopyTable, chunk: Chunk, attempt: str, data: bytes, rows: int) -> None:
        await _wait_until(lambda: self._pending() < self.max_files)  # the driver is behind: let it load files
        n = self.batches.get(attempt, 0)
        self.batches[attempt] = n + 1
        await asyncio.to_thread(_write_atomic, self.dir, spool_name(chunk.ordinal, attempt, "tsv", n, rows), data)

    async def done(self, chunk: Chunk, attempt: str, watermark: Watermark, rows: int) -> None:
        doc = {
            "file": watermark.file,
            "offset": watermark.offset,
            "gtids": watermark.gtids,
            "rows": rows,
            "batches": self.batches.get(attempt, 0),
        }
        _write_atomic(self.dir, spool_name(chunk.ordinal, attempt, "done"), json.dumps(doc).encode())

    async def progress(self, chunk: Chunk, attempt: str, rows: int) -> None:
        # one file per attempt, rewritten: the driver records the newest count it finds
        _write_atomic(self.dir, spool_name(chunk.ordinal, attempt, "read"), json.dumps({"rows": rows}).encode())

    async def aclose(self) -> None:
        return None


async def _open_sink(job: CopyJob) -> _Sink:
    if job.sink == "spool":
        assert job.spool_dir is not None
        return _SpoolSink(Path(job.spool_dir), job.spool_max_files)
    from ..clickhouse import open_target
    from ._state import StateStore

    target = await open_target(job.target_url)
    return _HttpSink(target, StateStore(target, job.meta_database, job.snapshot_id))


# --- copying ------------------------------------------------------------------------------------------------


def _rows_encoder(table: CopyTable, caps: Capabilities) -> Callable[[Any], list[str]]:
    from ..clickhouse import types as _types

    # a SELECT returns JSON as text (parsed_json=False), like MariaDB's binlog; a fetched batch of rows in one call
    return _types.make_rows_encoder(table.definition.columns, caps, parsed_json=False)


def _held(job: CopyJob, chunk: Chunk) -> str | None:
    if job.hold is None or chunk.ordinal < job.hold[0]:
        return None
    return job.hold[1]


async def copy_chunk(job: CopyJob, sink: _Sink, chunk: Chunk, encode_rows: Callable[[Any], list[str]]) -> ChunkResult:
    """Copy one chunk (one attempt) and return what it did."""
    table = job.tables[chunk.table]
    attempt = uuid.uuid4().hex[:12]
    hold = _held(job, chunk)
    started = time.monotonic()
    total = 0
    reported, reported_at = 0, started
    src = await connect_source(job.source)
    try:
        watermark = await open_chunk_snapshot(src)
        version = snapshot_version(BinlogPosition(watermark.file, watermark.offset))
        suffix = meta_suffix(table.meta, version)
        await sink.started(chunk, attempt, watermark)
        sql = table.select_sql(chunk)
        blocks: list[str] = []  # one string per fetched batch of rows: whole lines, the meta columns appended
        pending = 0  # rows in blocks
        size = 0
        async with asyncio.TaskGroup() as tg:
            in_flight: asyncio.Task[None] | None = None

            async def flush() -> None:
                nonlocal blocks, pending, size, in_flight
                if not blocks:
                    return
                data = "".join(blocks).encode("utf-8", "surrogateescape")
                n = pending
                blocks = []
                pending = 0
                size = 0
                if in_flight is not None:
                    await in_flight  # one insert in flight: reading goes on while it runs
                in_flight = tg.create_task(sink.write(table, chunk, attempt, data, n))
                if hold is not None:  # tests: an attempt that stops half-way (then gets killed)
                    await in_flight
                    await _wait_until(lambda: not os.path.exists(hold))

            async for rows in stream_query(src, sql, job.fetch_rows):
                if not rows:
                    continue
                # one join per fetched batch, not a concatenation per row (the suffix ends every line)
                block = suffix.join(encode_rows(rows)) + suffix
                blocks.append(block)
                pending += len(rows)
                size += len(block)
                total += len(rows)
                if pending >= job.batch_rows or size >= job.batch_bytes:
                    await flush()
                elif total - reported >= job.progress_rows and time.monotonic() - reported_at >= 0.5:
                    # progress between inserts: the driver counts rows as they are read, not per batch or chunk
                    reported, reported_at = total, time.monotonic()
                    await sink.progress(chunk, attempt, total)
            with contextlib.suppress(Exception):
                await src.commit()  # end the read view early; the rows are all in memory or inserted
            await flush()
    finally:
        await src.close()
    await sink.done(chunk, attempt, watermark, total)
    seconds = time.monotonic() - started
    logger.info("chunk %s: %d rows in %.1f s (watermark %s)", chunk.label, total, seconds, watermark)
    return ChunkResult(chunk.ordinal, attempt, watermark, total, seconds)


async def _copy_chunks(job: CopyJob, chunks: list[Chunk]) -> list[dict[str, Any]]:
    assert job.capabilities is not None  # a Kafka target's chunks go to _kafka_copy.publish_partition
    sink = await _open_sink(job)
    results = []
    encoders: dict[str, Callable[[Any], list[str]]] = {}
    try:
        for chunk in chunks:
            enc = encoders.get(chunk.table)
            if enc is None:
                enc = encoders[chunk.table] = _rows_encoder(job.tables[chunk.table], job.capabilities)
            results.append((await copy_chunk(job, sink, chunk, enc)).to_dict())
    finally:
        await sink.aclose()
    return results


def copy_partition(job: CopyJob, chunks: Iterable[Chunk]) -> Iterator[dict[str, Any]]:
    """``mapPartitions`` function: copy the partition's chunks one after the other (``functools.partial(
    copy_partition, job)``). Returns one result dict per chunk."""
    chunk_list = list(chunks)
    if not chunk_list:
        return iter(())
    return iter(asyncio.run(_copy_chunks(job, chunk_list)))
