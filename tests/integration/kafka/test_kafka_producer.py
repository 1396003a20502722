"""mybinlog.kafka.KafkaProducer against a real broker (Tansu): exactly-once batches, the position read back after a
broker restart, fencing of a former producer, at-least-once mode. Each test ends with tests/kafka_check.py, which
reads the record batches and transaction markers itself and rebuilds the table from the Debezium messages.

No binlog is read here (the sink that connects the replicator is tested with it): the rows come from MariaDB by
SELECT and are published as the sink will publish them. One flavour: the producer does not depend on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from mybinlog.ddl import parse_create_table
from mybinlog.errors import ReplicaLockedError
from mybinlog.kafka import KafkaProducer, KafkaSettings, Message, SourceInfo, TableEncoder, topic_name
from mybinlog.testing import MariaDBServer
from tests.kafka_check import compare_with_mysql, read_partition, read_topic, rebuild

DDL = "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, amount DECIMAL(10,2))"


def _settings(bootstrap: str, replica: str, **kw: Any) -> KafkaSettings:
    return KafkaSettings(bootstrap=bootstrap, replica=replica, prefix="shop", timeout=10, **kw)


def _batch(encoder: TableEncoder, topic: str, changes: list[tuple[str, Any, Any]], pos: int) -> list[Any]:
    source = SourceInfo(name="shop", db="db", table="items", file="bin.000001", pos=pos)
    out = []
    for op, before, after in changes:
        out.extend((topic, m) for m in encoder.change(op, before, after, source, 0))
    return out


def _position(pos: int) -> dict[str, Any]:
    return {"file": "bin.000001", "offset": pos, "gtid_set": None, "flavor": None, "timestamp": 0, "server_id": 1}


async def test_exactly_once_abort_restart_fencing(kafka_factory: Callable[..., Any], mariadb: MariaDBServer) -> None:
    broker = kafka_factory(durable=True)
    table = parse_create_table(DDL, "db")
    encoder = TableEncoder(table)
    topic = topic_name("shop", "db", "items")
    first = await KafkaProducer(_settings(broker.bootstrap, "items_eo")).start()
    assert (first.mode, first.position) == ("exactly-once", None)
    await first.ensure_topics([topic])
    committed = [(1, "one", Decimal("1.50")), (2, "two", Decimal("-2.00")), (3, "three", None)]
    await first.commit(_batch(encoder, topic, [("c", None, r) for r in committed], 100), _position(100))
    await first.commit(_batch(encoder, topic, [("d", committed[2], None)], 200), _position(200))

    # a transaction that aborts after its messages and its position record reached the broker
    producer = first._producer
    producer.begin_transaction()
    for t, m in _batch(encoder, topic, [("c", None, (9, "aborted", None)), ("d", committed[0], None)], 300):
        producer.produce(t, m.value, m.key)
    producer.produce(first.position_topic, json.dumps({"position": _position(300)}).encode(), b"items_eo")
    producer.flush(10)
    producer.abort_transaction(10)

    broker.restart(kill=True)  # S3 storage: the log and the group's offsets survive
    second = await KafkaProducer(_settings(broker.bootstrap, "items_eo")).start()  # fences `first`
    try:
        assert second.position == _position(200)
        with pytest.raises(ReplicaLockedError, match="took over"):
            await first.commit(_batch(encoder, topic, [("c", None, (7, "zombie", None))], 400), _position(400))

        records = read_partition(broker.bootstrap, topic)
        assert [r.visible for r in records if b"aborted" in (r.value or b"")] == [False]
        assert not any(b"zombie" in (r.value or b"") for r in records if r.visible)

        # the source side: the same rows in MariaDB, read back with SELECT and put in Debezium's forms
        name = f"kafka_eo_{mariadb.flavor}"
        mariadb.execute(f"DROP DATABASE IF EXISTS {name}")
        mariadb.execute(f"CREATE DATABASE {name}")
        mariadb.execute(DDL.replace("TABLE items", f"TABLE {name}.items"))
        mariadb.execute(f"INSERT INTO {name}.items VALUES (1, 'one', 1.50), (2, 'two', -2.00), (4, 'four', 4.25)")
        await second.commit(_batch(encoder, topic, [("c", None, (4, "four", Decimal("4.25")))], 500), _position(500))
        source_rows = [encoder.row(r) for r in mariadb.query(f"SELECT id, name, amount FROM {name}.items")]
        compare_with_mysql(rebuild(read_topic(broker.bootstrap, topic)), source_rows, ["id"])
        mariadb.execute(f"DROP DATABASE {name}")
    finally:
        await second.close()
        await first.close()


async def test_at_least_once_mode(kafka_server: Any) -> None:
    table = parse_create_table(DDL, "db")
    encoder = TableEncoder(table)
    topic = topic_name("shop", "db", "items_alo")
    async with KafkaProducer(_settings(kafka_server.bootstrap, "items_alo", transactional=False)) as producer:
        assert producer.mode == "at-least-once"
        await producer.ensure_topics([topic])
        await producer.commit(_batch(encoder, topic, [("c", None, (1, "a", None))], 10), _position(10))
        await producer.commit(_batch(encoder, topic, [("u", (1, "a", None), (1, "b", None))], 20), _position(20))
    async with KafkaProducer(_settings(kafka_server.bootstrap, "items_alo", transactional=False)) as again:
        assert again.position == _position(20)
    assert rebuild(read_topic(kafka_server.bootstrap, topic)) == {'{"id": 1}': {"id": 1, "name": "b", "amount": None}}
    records = read_partition(kafka_server.bootstrap, topic)
    assert all(r.visible and not r.transactional for r in records)


async def test_full_queue_keeps_every_message_in_order(kafka_server: Any) -> None:
    """librdkafka's queue holds 5 messages here: the batch loop meets BufferError again and again, waits for the
    queue and goes on, in order, for a plain batch (send) and an async iterable (commit, the Spark snapshot's way)."""
    topic = topic_name("shop", "db", "items_full")
    messages = [(topic, Message(str(i).encode(), f'{{"n": {i}}}'.encode())) for i in range(400)]

    async def streamed() -> Any:
        for item in messages[200:]:
            yield item

    settings = _settings(kafka_server.bootstrap, "items_full", config={"queue.buffering.max.messages": 5})
    async with KafkaProducer(settings) as producer:
        assert producer.mode == "exactly-once"
        await producer.ensure_topics([topic])
        await producer.send(messages[:200])
        await producer.commit(streamed(), _position(10))
    async with KafkaProducer(_settings(kafka_server.bootstrap, "items_full")) as again:
        assert again.position == _position(10)
    records = [r for r in read_partition(kafka_server.bootstrap, topic) if r.value is not None]
    assert [r.key for r in records] == [m.key for _, m in messages]
    assert all(r.visible for r in records)
