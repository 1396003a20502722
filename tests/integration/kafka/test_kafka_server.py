"""The Tansu fixture (mybinlog.testing.KafkaServer) and what Tansu does with transactions (docs/kafka.md, "Tansu,
the test broker"): each fact written there is asserted here, so that a Tansu upgrade that changes one fails a test
and the page is corrected with it. No MySQL involved: these tests run once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")  # in the test extra; conftest fails under CI without Tansu

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.kafka_check import read_partition  # noqa: E402


def _create(bootstrap: str, *topics: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(timeout=10)


def _consume(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Every value of partition 0 up to its high watermark, with librdkafka's own visibility rules."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "facts", "isolation.level": isolation, "enable.auto.commit": False}
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, low)])
        values: list[bytes] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            position = consumer.position([TopicPartition(topic, 0)])[0].offset
            if position >= high:
                break
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        return values
    finally:
        consumer.close()


def test_memory_broker_restart_loses_and_durable_keeps(kafka_factory: Callable[..., Any]) -> None:
    memory = kafka_factory()
    durable = kafka_factory(durable=True)
    for broker in (memory, durable):
        _create(broker.bootstrap, "kept")
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce("kept", key=b"k", value=b"v")
        assert producer.flush(10) == 0
        port = broker.port
        broker.restart(kill=True)
        assert broker.port == port
    assert [r.value for r in read_partition(durable.bootstrap, "kept", 0)] == [b"v"]
    assert "kept" not in AdminClient({"bootstrap.servers": memory.bootstrap}).list_topics(timeout=10).topics


def test_tansu_transaction_facts(kafka_server: Any) -> None:
    bootstrap = kafka_server.bootstrap
    _create(bootstrap, "facts", "facts_pos")
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "facts-group", "enable.auto.commit": False})
    first = Producer({"bootstrap.servers": bootstrap, "transactional.id": "facts-1"})
    first.init_transactions(10)
    first.begin_transaction()
    first.produce("facts", value=b"committed")
    first.send_offsets_to_transaction([TopicPartition("facts_pos", 0, 7)], group.consumer_group_metadata(), 10)
    first.commit_transaction(10)
    first.begin_transaction()
    first.produce("facts", value=b"aborted")
    first.send_offsets_to_transaction([TopicPartition("facts_pos", 0, 9)], group.consumer_group_metadata(), 10)
    first.flush(10)
    first.abort_transaction(10)
    # offsets sent to a transaction count only once it commits
    assert group.committed([TopicPartition("facts_pos", 0)], timeout=10)[0].offset == 7
    group.close()

    # a second producer with the same transactional.id fences the first (a fatal _FENCED error)
    second = Producer({"bootstrap.servers": bootstrap, "transactional.id": "facts-1"})
    second.init_transactions(10)
    first.begin_transaction()
    first.produce("facts", value=b"zombie")
    with pytest.raises(KafkaException) as fenced:
        first.commit_transaction(10)
    assert fenced.value.args[0].code() == confluent_kafka.KafkaError._FENCED
    assert fenced.value.args[0].fatal()

    # the markers are in the log: a reader of the record batches sees commit and abort
    records = read_partition(bootstrap, "facts", 0)
    assert [(r.value, r.visible) for r in records] == [(b"committed", True), (b"aborted", False)]
    # Tansu's fetch ignores isolation.level: read_committed still returns the aborted record (docs/kafka.md)
    assert _consume(bootstrap, "facts", "read_committed") == [b"committed", b"aborted"]
