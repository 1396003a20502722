"""``mybinlog replicate --target kafka://...`` into librdkafka's mock cluster (confluent-kafka,
``test.mock.num.brokers``), a second Kafka implementation at the protocol level: the load, DML and a DDL published,
a restart that goes on from the position it reads back. Visibility is decided from the transaction markers by
tests/kafka_check.py. The mock is not a faithful broker (docs/kafka.md): it cannot create topics through the admin
API (its metadata names no controller: they are created by asking for their metadata, with 4 partitions), it does
not keep a transaction's consumer offsets (the replica then commits them after each transaction, at-least-once, and
says so), it does not hide aborted records nor fence: the crash and fencing tests run against Tansu.

MariaDB only: the protocol spoken to the broker is the same for both flavours.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from mybinlog.kafka import topic_name
from mybinlog.testing import MariaDBServer
from tests.faults import ReplicateProcess, execute, source_dsn
from tests.kafka_check import (
    Record,
    compare_with_mysql,
    once_in_order,
    read_partition,
    read_topic,
    rebuild,
    source_rows,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def mock_bootstrap() -> Iterator[str]:
    """A mock cluster of one broker, alive while the client that made it is."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    holder = confluent_kafka.Producer({"test.mock.num.brokers": 1, "bootstrap.servers": ""})
    metadata = holder.list_topics(timeout=10)
    broker = next(iter(metadata.brokers.values()))
    yield f"{broker.host}:{broker.port}"
    holder.flush(1)


def _visible(bootstrap: str, topic: str) -> list[Record]:
    """The visible records of every partition (each key lives in one), none left without a marker."""
    from confluent_kafka.admin import AdminClient

    partitions = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions
    out: list[Record] = []
    for partition in sorted(partitions):
        records = read_partition(bootstrap, topic, partition)
        assert not any(r.pending for r in records), f"{topic}/{partition}: a transaction without a marker"
        out.extend(r for r in records if r.visible)
    return out


async def test_replicate_into_the_mock_cluster(mariadb: MariaDBServer, mock_bootstrap: str) -> None:
    server = mariadb
    db = server.create_database("kafka_mock")
    target = f"kafka://{mock_bootstrap}?prefix=mock&timeout=2"
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1), (2, 2)")
    with ReplicateProcess(source_dsn(server), server.repl_password, target, db, "--once") as rep:
        assert rep.wait_exit(60) == 0, rep.tail()
        assert "did not keep the consumer offset of a committed transaction" in rep.log, rep.tail()
    execute(server, db, "ALTER TABLE t ADD COLUMN n INT", "UPDATE t SET v = 20, n = 2 WHERE id = 2",
            "DELETE FROM t WHERE id = 1", "INSERT INTO t VALUES (3, 3, 3)")  # fmt: skip
    # a second process reads the position back (the group's offset) and goes on from it
    with ReplicateProcess(source_dsn(server), server.repl_password, target, db, "--once") as rep:
        assert rep.wait_exit(60) == 0, rep.tail()
        assert "initial load" not in rep.log, rep.tail()
    records = _visible(mock_bootstrap, topic_name("mock", db, "t"))
    rows, key = source_rows(server, db, "t")
    compare_with_mysql(rebuild(records), rows, key)
    once_in_order(records)
    assert sorted(json.loads(r.value)["op"] if r.value else "-" for r in records) == ["-", "c", "d", "r", "r", "u"]
    ddl = [json.loads(r.value or b"{}")["ddl"] for r in read_topic(mock_bootstrap, "mock")]
    assert len(ddl) == 2, ddl  # the load's CREATE and the ALTER, once each
    server.drop_database(db)
