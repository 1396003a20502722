"""The Spark snapshot into Kafka (``--target kafka://``): each chunk's rows are Debezium ``op: r`` messages published
in one Kafka transaction with the chunk's record, and the snapshot hands over to ``replicate --target kafka://``
through the replica's position record, as the ClickHouse snapshot hands over through its checkpoint.

Visibility is decided from the transaction markers by tests/kafka_check.py (Tansu ignores read_committed).

MariaDB only: what is under test is the Kafka side (chunk transactions, fencing, the handover record); the chunk
reads and their watermarks on both flavours are covered by the ClickHouse snapshot tests, and a second flavour would
add a second Spark run (seconds of CI) proving nothing new here.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from mybinlog.kafka import topic_name
from mybinlog.testing import MariaDBServer
from tests.faults import ReplicateProcess, execute, source_dsn
from tests.kafka_check import ChainWriter, check_table, once_in_order, random_seed, read_partition
from tests.live import snapshot_options
from tests.live import spark as spark

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _replicate(server: MariaDBServer, db: str, target: str, *extra: str) -> ReplicateProcess:
    return ReplicateProcess(source_dsn(server), server.repl_password, target, db, *extra)


TYPED = (
    "CREATE TABLE typed (id INT PRIMARY KEY, s VARCHAR(20), d DECIMAL(10,2), dt DATETIME(3), day DATE, "
    "j JSON, b VARBINARY(8), e ENUM('x','y'), f DOUBLE, big BIGINT UNSIGNED)"
)


async def test_spark_snapshot_into_kafka_then_replicate_goes_on_from_it(
    mariadb: MariaDBServer, kafka_server: Any, spark: Any
) -> None:
    from mybinlog.snapshot import run_snapshot

    server = mariadb
    db = server.create_database("snap_kafka")
    prefix = "snapk"
    bootstrap = kafka_server.bootstrap
    target = f"kafka://{bootstrap}?prefix={prefix}"
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", TYPED,
            "CREATE TABLE s (k VARCHAR(12) PRIMARY KEY, n INT, t TIME)",
            "INSERT INTO t VALUES " + ",".join(f"({i}, {i % 5})" for i in range(1, 61)),
            "INSERT INTO typed VALUES " + ",".join(
                f"({i}, 'str{i}', {i}.25, '2026-01-0{1 + i % 9} 10:00:0{i % 10}.123', '2026-03-{1 + i % 28:02d}', "
                f"'{{\"k\": {i}}}', X'{i:04x}', '{'xy'[i % 2]}', {i}.5, {2**63 + i})" for i in range(1, 41)),
            "INSERT INTO s VALUES " + ",".join(f"('key{i:03d}', {i}, '{i % 24}:10:00')" for i in range(30)),
            )  # fmt: skip
    result = await run_snapshot(
        snapshot_options(source=server.repl_dsn, target=target, database=db, chunk_rows=16), spark=spark
    )
    assert result.kind == "initial"
    assert result.checkpoint_saved
    assert result.chunks >= 6  # several chunks per table: several chunk transactions
    assert result.rows == 60 + 40 + 30
    for table, count in (("t", 60), ("typed", 40), ("s", 30)):
        records = check_table(bootstrap, prefix, db, server, table)  # rebuilt from the visible messages == source
        values = [json.loads(r.value or b"{}") for r in records]
        assert len(values) == count, f"{table}: {len(values)} messages for {count} rows"
        assert {v["op"] for v in values} == {"r"}
        assert {v["source"]["snapshot"] for v in values} == {"true"}
        assert {v["source"]["db"] for v in values} == {db}
    # replicate goes on from the snapshot's position: no initial load of its own (no second op r of any key), every
    # change of the writer once and in order per key
    writer = ChainWriter(server, db, random_seed())
    writer.ids = list(range(1, 61))
    writer.start()
    try:
        with _replicate(server, db, target) as rep:
            deadline = time.monotonic() + 60
            while writer.transactions < 40:
                assert time.monotonic() < deadline, "the writer is stuck"
                assert writer.error is None, writer.error
                await asyncio.sleep(0.05)  # polls the writer's counter
            writer.finish()
            rep.wait_caught_up(server, timeout=60)
            assert "initial load" not in rep.log.lower(), rep.tail()
    finally:
        if writer.is_alive():
            writer.finish()
    records = check_table(bootstrap, prefix, db, server, "t")
    once_in_order(records)
    ops = [json.loads(r.value)["op"] for r in records if r.value is not None]
    assert ops[:60] == ["r"] * 60
    assert "r" not in ops[60:]
    assert len(ops) > 100
    check_table(bootstrap, prefix, db, server, "typed")
    check_table(bootstrap, prefix, db, server, "s")
    server.drop_database(db)


async def test_a_chunk_published_by_two_attempts_is_visible_once(
    mariadb: MariaDBServer, kafka_server: Any, tmp_path: Path
) -> None:
    """A Spark task retried mid-chunk: attempt A stops with its transaction open (some messages sent), attempt B of
    the same chunk (same transactional id) fences it and publishes the chunk, A's commit is refused; a third attempt
    after B's commit publishes nothing. The driver then finds the chunk done with B's rows, once."""
    from mybinlog.ddl import parse_create_table
    from mybinlog.errors import ReplicaLockedError, TargetError
    from mybinlog.kafka import parse_kafka_url
    from mybinlog.snapshot._chunks import Chunk
    from mybinlog.snapshot._copy import CopyJob, CopyTable
    from mybinlog.snapshot._kafka_copy import committed_chunks, publish_chunk
    from mybinlog.source._dsn import DSN

    server = mariadb
    db = server.create_database("snap_kafka_fence")
    prefix = "snapfence"
    bootstrap = kafka_server.bootstrap
    target_url = f"kafka://{bootstrap}?prefix={prefix}&timeout=5"  # A's abort after its fencing waits that long
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
            "INSERT INTO t VALUES " + ",".join(f"({i}, {i})" for i in range(1, 31)))  # fmt: skip
    definition = parse_create_table(server.query(f"SHOW CREATE TABLE `{db}`.`t`")[0][1], db)
    table = CopyTable(name="t", definition=definition, source_table=f"`{db}`.`t`", ch_table="", key=("id",),
                      key_charsets=(None,))  # fmt: skip
    hold = tmp_path / "hold"
    hold.touch()
    snapshot_id = f"fence-{os.getpid()}-{random_seed()}"

    def job(held: bool) -> CopyJob:
        return CopyJob(snapshot_id=snapshot_id, source=DSN.parse(server.repl_dsn), tables={"t": table},
                       capabilities=None, sink="kafka", target_url=target_url, fetch_rows=10,
                       hold=(0, str(hold)) if held else None)  # fmt: skip

    target = parse_kafka_url(target_url)
    chunk = Chunk(ordinal=0, table="t", index=0, lower=None, upper=None, estimated_rows=30)
    topic = topic_name(prefix, db, "t")
    first = asyncio.ensure_future(publish_chunk(job(True), target, chunk))
    deadline = time.monotonic() + 60
    while True:  # A has sent messages in its open transaction
        assert not first.done(), first
        assert time.monotonic() < deadline, "attempt A sent nothing"
        records = (
            await asyncio.to_thread(read_partition, bootstrap, topic) if await _has_topic(bootstrap, topic) else []
        )
        if any(r.pending for r in records):
            break
        await asyncio.sleep(0.1)  # polls the topic
    second = await publish_chunk(job(False), target, chunk)
    assert second.rows == 30
    hold.unlink()
    # refused: fenced (librdkafka reports it as the fatal PRODUCER_FENCED, or as the purge of the queued messages of
    # the transaction it must abort)
    with pytest.raises((ReplicaLockedError, TargetError)):
        await first
    third = await publish_chunk(job(False), target, chunk)
    assert (third.attempt, third.rows) == (second.attempt, 30)  # the committed record: nothing published again
    records = check_table(bootstrap, prefix, db, server, "t")
    assert len(records) == 30, f"{len(records)} visible messages for 30 rows"
    once_in_order(records)
    assert any(not r.visible for r in read_partition(bootstrap, topic)), "A's messages should be in the log, hidden"
    done = await committed_chunks(target, snapshot_id, [chunk])
    assert list(done) == [0]
    assert done[0].attempt == second.attempt
    assert done[0].rows == 30
    server.drop_database(db)


async def _has_topic(bootstrap: str, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    metadata = await asyncio.to_thread(AdminClient({"bootstrap.servers": bootstrap}).list_topics, None, 10)
    return topic in metadata.topics
