"""Kafka output: Debezium-compatible messages (:mod:`._envelope`, pure) and an exactly-once transactional producer
(:mod:`._producer`, confluent-kafka). docs/kafka.md says what is written, how, and what differs from Debezium.

:mod:`._sink` wires them to the replicator: :class:`KafkaSink`, a :class:`mybinlog.replication.TransactionalSink`
(``Replicator(dsn, KafkaSink(...), database=...)``), and the ``kafka://`` target URL (:func:`parse_kafka_url`).

Layer rules: the envelope and the producer import ``protocol`` (values, JSON rendering) and ``errors`` (the table
model is duck-typed: :class:`mybinlog.ddl.TableDef` fits); the sink imports ``replication``, ``_checkpoint`` (the
checkpoint's JSON form) and ``ddl`` too, never ``clickhouse``; confluent-kafka is imported by ``_producer`` only
(the ``kafka`` extra).
"""

from ._envelope import (
    Message,
    SourceInfo,
    TableEncoder,
    column_encoder,
    column_text,
    encode_decimal,
    schema_change,
    topic_name,
    truncate,
)
from ._producer import KafkaProducer, KafkaSettings, position_topic_name, transactional_id
from ._sink import KafkaSink, KafkaTarget, parse_kafka_url

__all__ = [
    "KafkaProducer",
    "KafkaSettings",
    "KafkaSink",
    "KafkaTarget",
    "Message",
    "SourceInfo",
    "TableEncoder",
    "column_encoder",
    "column_text",
    "encode_decimal",
    "parse_kafka_url",
    "schema_change",
    "topic_name",
    "truncate",
    "position_topic_name",
    "transactional_id",
]
