"""An independent reader of what mybinlog wrote into Kafka, for tests: it trusts neither mybinlog nor the client
library nor the broker's isolation level.

* :func:`read_partition` speaks the Kafka protocol itself (Fetch v4, read_uncommitted, over a plain socket) and
  parses the record batches (v2) byte by byte, control batches included. A record of a transactional batch is
  visible only when a COMMIT marker of its producer id follows it; an ABORT marker hides it; without a marker yet it
  is pending (not visible). Tansu ignores ``isolation.level`` (docs/kafka.md) and librdkafka hides the markers, so
  this is the only way a test can know what a read_committed consumer of a correct broker would see.
* :func:`rebuild` replays the Debezium messages of a table topic (key -> ``after``, a delete or a tombstone
  removes the key) and :func:`compare_with_mysql` compares the result row by row with the source table.

Compressed batches are not read (the producer under test does not compress: the check fails loudly if one does).
"""

from __future__ import annotations

import json
import os
import random
import socket
import struct
from dataclasses import dataclass
from typing import Any

from mybinlog.ddl import parse_create_table
from mybinlog.kafka import TableEncoder, topic_name
from mybinlog.testing import MariaDBServer
from tests.faults import PausableWriter

__all__ = [
    "ChainWriter",
    "Record",
    "check_table",
    "compare_with_mysql",
    "once_in_order",
    "random_seed",
    "read_partition",
    "read_topic",
    "rebuild",
    "source_rows",
]

_FETCH = 1
_CONTROL = 0x20
_TRANSACTIONAL = 0x10


@dataclass
class Record:
    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int
    transactional: bool
    visible: bool = False
    pending: bool = False  # in a transaction without a marker yet


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


class _Buf:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values[0] if len(values) == 1 else values

    def raw(self, size: int) -> bytes:
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out

    def string(self) -> str:
        size = self.take(">h")
        return "" if size < 0 else self.raw(size).decode()

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        return (result >> 1) ^ -(result & 1)  # zigzag

    def varbytes(self) -> bytes | None:
        size = self.varint()
        return None if size < 0 else self.raw(size)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _fetch(sock: socket.socket, correlation: int, topic: str, partition: int, offset: int) -> tuple[int, int, bytes]:
    """(error code, high watermark, record bytes) of one Fetch v4 (read_uncommitted: every batch and marker)."""
    body = struct.pack(">iiiib", -1, 100, 0, 16 << 20, 0) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">iiqi", 1, partition, offset, 16 << 20)
    request = struct.pack(">hhi", _FETCH, 4, correlation) + _string("kafka-check") + body
    sock.sendall(struct.pack(">i", len(request)) + request)
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    buf = _Buf(_recv_exact(sock, size))
    assert buf.take(">i") == correlation
    buf.take(">i")  # throttle
    assert buf.take(">i") == 1
    buf.string()
    assert buf.take(">i") == 1
    _, error, high, _lso = buf.take(">ihqq")
    aborted = buf.take(">i")
    for _ in range(max(aborted, 0)):
        buf.take(">qq")
    length = buf.take(">i")
    return error, high, b"" if length < 0 else buf.raw(length)


def _batches(data: bytes) -> list[tuple[int, int, int, list[Record], int | None]]:
    """(attributes, last offset, producer id, records, control type) of each complete batch of ``data``."""
    out = []
    buf = _Buf(data)
    while len(data) - buf.pos >= 12:
        base_offset, length = struct.unpack_from(">qi", data, buf.pos)
        if len(data) - buf.pos - 12 < length:
            break  # a partial batch at the end of the response
        buf.pos += 12
        end = buf.pos + length
        _epoch, magic, _crc, attributes, last_delta = buf.take(">ibIhi")
        assert magic == 2, f"record batch magic {magic}: only v2 is read"
        assert attributes & 0x07 == 0, "a compressed batch: kafka_check reads uncompressed batches only"
        buf.take(">qq")  # timestamps
        producer_id, _producer_epoch, _sequence, count = buf.take(">qhii")
        records: list[Record] = []
        control: int | None = None
        for _ in range(count):
            buf.varint()  # record length
            buf.take(">b")
            buf.varint()  # timestamp delta
            delta = buf.varint()
            key = buf.varbytes()
            value = buf.varbytes()
            for _ in range(buf.varint()):
                buf.varbytes()
                buf.varbytes()
            if attributes & _CONTROL:
                assert key is not None
                control = struct.unpack_from(">hh", key)[1]  # 0 abort, 1 commit
            else:
                records.append(Record(base_offset + delta, key, value, producer_id, bool(attributes & _TRANSACTIONAL)))
        buf.pos = end
        out.append((attributes, base_offset + last_delta, producer_id, records, control))
    return out


def read_partition(bootstrap: str, topic: str, partition: int = 0) -> list[Record]:
    """Every data record of the partition up to its high watermark, with ``visible`` decided from the markers."""
    host, port = bootstrap.rsplit(":", 1)
    records: list[Record] = []
    open_by_producer: dict[int, list[Record]] = {}
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        offset = 0
        correlation = 0
        while True:
            correlation += 1
            error, high, data = _fetch(sock, correlation, topic, partition, offset)
            assert error == 0, f"fetch {topic}/{partition} at {offset}: Kafka error code {error}"
            if offset >= high:
                break
            batches = _batches(data)
            assert batches, f"fetch {topic}/{partition} at {offset} below the high watermark {high} returned no batch"
            for attributes, last, producer_id, batch, control in batches:
                if last < offset:
                    continue
                if attributes & _CONTROL:
                    # COMMIT (1) makes the producer's open records visible, ABORT (0) discards them
                    for record in open_by_producer.pop(producer_id, []):
                        record.visible = control == 1
                for record in batch:
                    if record.offset < offset:
                        continue
                    records.append(record)
                    if record.transactional:
                        open_by_producer.setdefault(record.producer_id, []).append(record)
                    else:
                        record.visible = True
                offset = last + 1
    for pending in open_by_producer.values():
        for record in pending:
            record.pending = True
    return records


def read_topic(bootstrap: str, topic: str) -> list[Record]:
    """The visible records of every partition of ``topic`` (partition by partition)."""
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    out: list[Record] = []
    for partition in sorted(metadata.topics[topic].partitions):
        out.extend(r for r in read_partition(bootstrap, topic, partition) if r.visible)
    return out


def rebuild(records: list[Record]) -> dict[str, dict[str, Any]]:
    """Replay the Debezium messages of a table topic: key (JSON text) -> the row (``after``)."""
    rows: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.key is None and record.value is not None and json.loads(record.value)["op"] == "t":
            rows.clear()  # a truncate (no key: it is about the whole table)
            continue
        assert record.key is not None, f"offset {record.offset}: a message without a key"
        key = json.dumps(json.loads(record.key), sort_keys=True)
        if record.value is None:  # tombstone
            rows.pop(key, None)
            continue
        message = json.loads(record.value)
        if message["op"] == "d":
            rows.pop(key, None)
        else:
            rows[key] = message["after"]
    return rows


def compare_with_mysql(rows: dict[str, dict[str, Any]], source_rows: list[dict[str, Any]], key: list[str]) -> None:
    """Assert that the rebuilt table equals the source rows (already in Debezium's value forms), row by row."""
    expected = {json.dumps({k: row[k] for k in key}, sort_keys=True): row for row in source_rows}
    missing = sorted(set(expected) - set(rows))
    extra = sorted(set(rows) - set(expected))
    assert not missing, f"{len(missing)} keys missing from Kafka: {missing[:5]}"
    assert not extra, f"{len(extra)} keys only in Kafka: {extra[:5]}"
    for k, row in expected.items():
        assert rows[k] == row, f"row {k}: Kafka has {rows[k]}, the source {row}"


# ---------------------------------------------------------------------------------------------------------------
# the Kafka tests' checks and workload


def source_rows(server: Any, db: str, table: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of ``db.table`` in Debezium's value forms (the envelope's encoder, fed by SELECT), and its key."""
    create = server.query(f"SHOW CREATE TABLE `{db}`.`{table}`")[0][1]
    encoder = TableEncoder(parse_create_table(create, db))
    rows = [encoder.row(values) for values in server.query(f"SELECT * FROM `{db}`.`{table}`")]
    return rows, list(encoder.table.primary_key)


def check_table(bootstrap: str, prefix: str, db: str, server: Any, table: str) -> list[Record]:
    records = read_partition(bootstrap, topic_name(prefix, db, table))
    assert not any(r.pending for r in records), "a transaction without a marker after the replica stopped"
    visible = [r for r in records if r.visible]
    rows, key = source_rows(server, db, table)
    compare_with_mysql(rebuild(visible), rows, key)
    return visible


def once_in_order(records: list[Record]) -> None:
    """Each key's messages form one chain: a create (or load read) on an absent key, then updates whose ``before``
    is the previous ``after``, a delete of the current row (and its tombstone): a repeated or missing change breaks
    the chain."""
    state: dict[str, dict[str, Any] | None] = {}
    for r in records:
        if r.key is None and r.value is not None and json.loads(r.value)["op"] == "t":
            state.clear()  # a truncate: every key is absent again
            continue
        key = json.dumps(json.loads(r.key or b"null"), sort_keys=True)
        if r.value is None:
            assert state.get(key) is None, f"offset {r.offset}: a tombstone of a live key {key}"
            continue
        message = json.loads(r.value)
        op, before, after = message["op"], message["before"], message["after"]
        if op in ("c", "r"):
            assert state.get(key) is None, f"offset {r.offset}: {op} of {key}, which exists: a change repeated"
            state[key] = after
        else:
            now = state.get(key)
            # a column added by a DDL since the row's last message appears in ``before`` only
            same = now is not None and {c: v for c, v in before.items() if c in now} == now
            assert same, f"offset {r.offset}: {op} of {key} from {before}, not {now}"
            state[key] = after if op == "u" else None


class ChainWriter(PausableWriter):
    """Small transactions into ``t (id INT PRIMARY KEY, v INT)``: an insert, an update of a live row, sometimes a
    delete (the chain check of each key then sees every kind of change)."""

    autocommit = False

    def __init__(self, server: MariaDBServer, db: str, seed: int) -> None:
        super().__init__(server, db)
        self.rng = random.Random(seed)
        self.ids: list[int] = []

    def write_some(self, conn: Any) -> int:
        new = (self.ids[-1] if self.ids else 0) + 1
        self.ids.append(new)
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO t VALUES ({new}, 0)")
            cur.execute(f"UPDATE t SET v = v + 1 WHERE id = {self.rng.choice(self.ids)}")
            if self.rng.random() < 0.2 and len(self.ids) > 2:
                cur.execute(f"DELETE FROM t WHERE id = {self.ids.pop(self.rng.randrange(len(self.ids) - 1))}")
        conn.commit()
        self._stop_flag.wait(0.005)  # pacing (not synchronisation): a few thousand transactions over the test
        return 1


def random_seed() -> int:
    return int.from_bytes(os.urandom(4), "big")
