"""The executor side of a snapshot into Kafka: each chunk's rows as Debezium ``op: r`` messages, exactly once.

A chunk is one Kafka transaction of a producer of its own (:func:`chunk_replica`: transactional id
``mybinlog.snapshot.<snapshot id>.<ordinal>``), made with the Kafka sink's producer
(:class:`~mybinlog.kafka.KafkaProducer`): the chunk's messages, then its *chunk record* (the producer's position
record: the attempt, its low watermark, the rows) on the position topic, and the group offset that points at that
record, committed together. So:

* a chunk's rows are all visible or none (an attempt killed mid-chunk leaves an open or aborted transaction);
* a retried or speculative attempt of the chunk starts the same transactional id, which fences the former one (its
  open transaction is aborted, its commit refused with ``ReplicaLockedError``);
* an attempt that finds the chunk's record committed already (the task was retried after its commit) publishes
  nothing again;
* the driver decides which chunks are done by reading each chunk's committed record back
  (:func:`committed_chunks`), the way the sink reads its position: through the group offset the broker applies only
  at a commit, not by trusting the broker to hide aborted records (Tansu does not).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..kafka import KafkaProducer, KafkaSettings, SourceInfo, TableEncoder, topic_name
from ._copy import ChunkResult, _wait_until
from ._source import Watermark, connect_source, open_chunk_snapshot, stream_query

if TYPE_CHECKING:
    from ..kafka import KafkaTarget, Message
    from ._chunks import Chunk
    from ._copy import CopyJob

__all__ = ["chunk_replica", "committed_chunks", "publish_chunk", "publish_partition"]

#: at most this many chunk producers read their records back at once on the driver
_READERS = 8


def chunk_replica(snapshot_id: str, ordinal: int) -> str:
    """The producer name of one chunk: its transactional id and group are ``mybinlog.<this>``."""
    return f"snapshot.{snapshot_id}.{ordinal}"


def _settings(target: KafkaTarget, snapshot_id: str, ordinal: int) -> KafkaSettings:
    return KafkaSettings(
        bootstrap=target.bootstrap,
        replica=chunk_replica(snapshot_id, ordinal),
        prefix=target.prefix,
        transactional=True,  # a chunk is exactly once or not at all (docs/kafka.md)
        partitions=target.partitions,
        timeout=target.timeout,
    )


def _result(ordinal: int, record: dict[str, Any], seconds: float) -> ChunkResult:
    wm = Watermark(str(record["file"]), int(record["offset"]), record.get("gtids"), bool(record.get("exact")))
    return ChunkResult(ordinal, str(record["attempt"]), wm, int(record["rows"]), seconds)


async def publish_chunk(job: CopyJob, target: KafkaTarget, chunk: Chunk) -> ChunkResult:
    """Publish one chunk (one attempt) in one transaction with its record; returns what is committed."""
    table = job.tables[chunk.table]
    definition = table.definition
    started = time.monotonic()
    producer = KafkaProducer(_settings(target, job.snapshot_id, chunk.ordinal))
    try:
        await producer.start()  # fences a former attempt of this chunk; reads its committed record back
        if producer.position is not None:  # committed by an earlier attempt (retried after its commit)
            return _result(chunk.ordinal, producer.position, time.monotonic() - started)
        topic = topic_name(target.prefix, definition.schema, definition.name, target.topic_pattern)
        await producer.ensure_topics([topic])
        encoder = TableEncoder(definition, tombstones=target.tombstones)
        hold = job.hold[1] if job.hold is not None and chunk.ordinal >= job.hold[0] else None
        src = await connect_source(job.source)
        try:
            watermark = await open_chunk_snapshot(src)
            record: dict[str, Any] = {
                "snapshot_id": job.snapshot_id,
                "ordinal": chunk.ordinal,
                "table": chunk.table,
                "attempt": uuid.uuid4().hex[:12],
                "file": watermark.file,
                "offset": watermark.offset,
                "gtids": watermark.gtids,
                "exact": watermark.exact,
                "rows": 0,
            }

            async def messages() -> AsyncIterator[tuple[str, Message]]:
                now = int(time.time() * 1000)
                rows = 0
                async for batch in stream_query(src, table.select_sql(chunk), job.fetch_rows):
                    for values in batch:
                        source = SourceInfo(
                            name=target.prefix,
                            db=definition.schema,
                            table=definition.name,
                            server_id=src.info.server_id,
                            file=watermark.file,
                            pos=watermark.offset,
                            ts_ms=now,
                            snapshot="true",
                            row=rows,
                        )
                        for message in encoder.change("r", None, values, source, now):
                            yield topic, message
                        rows += 1
                    record["rows"] = rows  # the chunk record is written after the last message
                    if hold is not None:  # tests: an attempt that stops half-way, its transaction open
                        await _wait_until(lambda: not os.path.exists(hold))

            await producer.commit(messages(), record)
        finally:
            await src.close()
        return _result(chunk.ordinal, record, time.monotonic() - started)
    finally:
        await producer.close()


async def _publish_chunks(job: CopyJob, chunks: list[Chunk]) -> list[dict[str, Any]]:
    from ..kafka import parse_kafka_url

    target = parse_kafka_url(job.target_url)
    return [(await publish_chunk(job, target, chunk)).to_dict() for chunk in chunks]


def publish_partition(job: CopyJob, chunks: Iterable[Chunk]) -> Iterator[dict[str, Any]]:
    """``mapPartitions`` function of a Kafka target (``_copy.copy_partition``'s twin): publish the partition's
    chunks one after the other; one result dict per chunk."""
    chunk_list = list(chunks)
    if not chunk_list:
        return iter(())
    return iter(asyncio.run(_publish_chunks(job, chunk_list)))


async def committed_chunks(target: KafkaTarget, snapshot_id: str, chunks: Iterable[Chunk]) -> dict[int, ChunkResult]:
    """The chunks whose transaction committed (ordinal -> the committed attempt), read back by each chunk's own
    transactional id: this also fences every attempt still running (a lost executor), so what is decided here is
    what stays visible."""
    limit = asyncio.Semaphore(_READERS)

    async def read(chunk: Chunk) -> tuple[int, dict[str, Any] | None]:
        async with limit:
            producer = KafkaProducer(_settings(target, snapshot_id, chunk.ordinal))
            try:
                await producer.start()
                return chunk.ordinal, producer.position
            finally:
                await producer.close()

    found = await asyncio.gather(*(read(c) for c in chunks))
    return {ordinal: _result(ordinal, record, 0.0) for ordinal, record in found if record is not None}
