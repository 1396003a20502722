"""``mybinlog replicate --target kafka://...`` through broker faults and a takeover, against a real broker (Tansu):

* the broker (durable: S3 storage) SIGKILLed and restarted while a writer runs: replicate goes on (a failed batch's
  Kafka transaction is aborted and retried within ``--target-retry-seconds``; if the broker stays away longer the
  process exits 75 and is started again, as a supervisor would) and ends exact;
* a paused former leader: replicate A (``--lease-seconds 2``) is SIGSTOPped, B takes the replica over once A's lease
  has expired and writes, A is resumed: its transactional producer is fenced (``ReplicaLockedError``, exit 4) and
  nothing it sends becomes visible.

Each ends with tests/kafka_check.py: visibility from the transaction markers, the topic rebuilt and compared with
the source row by row, each key's chain of changes unbroken (every change once, in order).

MariaDB only: what is under test is the Kafka side (the broker's restart, the producer's fencing), the same for both
flavours; the flavours' binlogs into Kafka are covered by test_kafka_sink.py.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from mybinlog.kafka import topic_name
from mybinlog.testing import MariaDBServer
from tests.faults import ReplicateProcess, execute, source_dsn
from tests.kafka_check import ChainWriter, check_table, once_in_order, random_seed, read_partition

pytestmark = pytest.mark.integration


def _replicate(
    server: MariaDBServer, db: str, target: str, *extra: str, failpoints: str | None = None
) -> ReplicateProcess:
    return ReplicateProcess(source_dsn(server), server.repl_password, target, db, *extra, failpoints=failpoints)


async def test_broker_killed_and_restarted_mid_stream(
    mariadb: MariaDBServer, kafka_factory: Callable[..., Any]
) -> None:
    server = mariadb
    broker = kafka_factory(durable=True)
    db = server.create_database("kafka_broker_restart")
    target = f"kafka://{broker.bootstrap}?prefix=brk&timeout=5"  # a batch in flight fails after 5 s, not 30
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    writer = ChainWriter(server, db, random_seed())
    writer.start()
    runs: list[ReplicateProcess] = []
    try:
        rep = _replicate(server, db, target, "--target-retry-seconds", "60")
        runs.append(rep)
        rep.wait_for("checkpoint at")
        rep.wait_for("checkpoint at", start=len(rep.lines))  # streaming, with batches committed
        broker.kill()
        mark = len(rep.lines)
        # a batch fails against the dead broker (or replicate exits: then it is restarted below, as by a supervisor)
        rep.wait_for(lambda line: "mybinlog.kafka: FAIL" in line, start=mark, timeout=60)
        broker.start()
        # the batch in flight fails (its transaction aborted); the replicator starts again from the checkpoint
        # with a new producer, within --target-retry-seconds
        rep.wait_for(lambda line: "starting again from the checkpoint" in line, start=mark, timeout=60)
        if rep.proc.poll() is not None:
            assert rep.wait_exit() == 75, rep.tail()  # retriable: a supervisor starts it again
            rep = _replicate(server, db, target)
            runs.append(rep)
        rep.wait_for("checkpoint at", start=mark if len(runs) == 1 else 0, timeout=60)
        writer.finish()
        rep.wait_caught_up(server, timeout=60)
        assert rep.stop() == 0, rep.tail()
    finally:
        writer.finish() if writer.is_alive() else None
        for run in runs:
            run.kill()
    assert len(runs) == 1, f"replicate exited instead of retrying:\n{runs[0].tail()}"
    assert writer.transactions > 0
    once_in_order(check_table(broker.bootstrap, "brk", db, server, "t"))
    server.drop_database(db)


def _wait_lock_free(server: MariaDBServer, name: str, timeout: float = 60.0) -> None:
    """Until the source released the replica lock ``name`` (it drops a paused holder's connection after the lease)."""
    deadline = time.monotonic() + timeout
    while server.query(f"SELECT IS_FREE_LOCK('{name}')")[0][0] != 1:
        assert time.monotonic() < deadline, f"the source kept the lock {name} for {timeout} s"
        time.sleep(0.05)  # polling the server's state until the condition holds (bounded by the deadline)


async def test_paused_former_leader_is_fenced(mariadb: MariaDBServer, kafka_server: Any) -> None:
    """A pauses itself (fail point ``kafka.before_commit=3@stop``) with a batch's messages and position sent and its
    transaction open: the window no lease closes. Once the source released its lock (the lease), B starts on the
    same replica: its ``init_transactions`` fences A's producer and aborts A's transaction; B writes. Resumed, A's
    commit is refused (``ReplicaLockedError``, exit 4), and none of A's open batch is visible."""
    server = mariadb
    db = server.create_database("kafka_paused_leader")
    target = f"kafka://{kafka_server.bootstrap}?prefix=pause"
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    writer = ChainWriter(server, db, random_seed())
    writer.start()
    a = _replicate(server, db, target, "--lease-seconds", "2", failpoints="kafka.before_commit=3@stop")
    try:
        lock = re.search(r"holds the replica lock (\S+)", a.wait_for("holds the replica lock"))
        assert lock is not None
        a.wait_for("fail point kafka.before_commit reached: stopping", timeout=60)
        pending = [r for r in read_partition(kafka_server.bootstrap, topic_name("pause", db, "t")) if r.pending]
        assert pending, "A's paused batch should be in the log without a marker"
        _wait_lock_free(server, lock.group(1))
        with _replicate(server, db, target, "--lease-seconds", "2") as b:
            b.wait_for("EXACTLY-ONCE")  # its init_transactions fenced A's producer
            b.wait_for("checkpoint at", start=len(b.lines))  # B wrote after the takeover
            os.kill(a.proc.pid, signal.SIGCONT)
            rc = a.wait_exit(60)
            assert rc == 4, f"the paused former leader went on (exit {rc}):\n{a.tail()}"
            writer.finish()
            b.wait_caught_up(server, timeout=60)
            assert b.stop() == 0, b.tail()
    finally:
        if a.proc.poll() is None:
            os.kill(a.proc.pid, signal.SIGCONT)
        a.kill()
        if writer.is_alive():
            writer.finish()
    assert "ReplicaLockedError" in a.log or "another producer" in a.log, a.tail()
    records = {r.offset: r for r in read_partition(kafka_server.bootstrap, topic_name("pause", db, "t"))}
    assert not any(records[r.offset].visible for r in pending), "a record of the fenced leader's batch is visible"
    once_in_order(check_table(kafka_server.bootstrap, "pause", db, server, "t"))
    server.drop_database(db)
