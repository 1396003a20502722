"""Kafka output: Debezium-compatible messages (:mod:`._envelope`, pure) and an exactly-once transactional producer
(:mod:`._producer`, confluent-kafka). docs/kafka.md says what is written, how, and what differs from Debezium.

Layer rules: imports ``protocol`` (values, JSON rendering) and ``errors``; the table model is duck-typed
(:class:`mybinlog.ddl.TableDef` fits); confluent-kafka is imported by ``_producer`` only (the ``kafka`` extra).
"""

from ._envelope import Message, SourceInfo, TableEncoder, column_encoder, encode_decimal, schema_change, topic_name
from ._producer import KafkaProducer, KafkaSettings, position_topic_name, transactional_id

__all__ = [
    "KafkaProducer",
    "KafkaSettings",
    "Message",
    "SourceInfo",
    "TableEncoder",
    "column_encoder",
    "encode_decimal",
    "schema_change",
    "topic_name",
    "position_topic_name",
    "transactional_id",
]
