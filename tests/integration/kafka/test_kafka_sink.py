"""``mybinlog replicate --target kafka://...`` (mybinlog.kafka.KafkaSink) against a real broker (Tansu): the
initial load, DML and a DDL become Debezium messages that rebuild the source tables row by row; SIGKILLs of the
replicating process mid-stream and a crash between the messages and the position commit (fail point
``kafka.before_commit``) end with every change visible once, in order per key. Visibility is decided from the
transaction markers by tests/kafka_check.py, which trusts neither mybinlog nor the client library nor the broker.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest

from mybinlog.kafka import topic_name
from mybinlog.testing import MariaDBServer
from tests.faults import STREAMING, ReplicateProcess, execute, source_dsn
from tests.kafka_check import (
    check_table,
    once_in_order,
    read_partition,
    read_topic,
)

pytestmark = pytest.mark.integration


_GTID = {"mysql": re.compile(r"^[0-9a-f-]{36}:\d+$"), "mariadb": re.compile(r"^\d+-\d+-\d+$")}


def _last_gtid(server: Any) -> str:
    """The GTID of the server's last transaction: MariaDB's ``@@gtid_binlog_pos`` (one domain here), the last
    number of MySQL's ``gtid_executed`` (one server uuid here)."""
    position = server.gtid_position().replace("\n", "")
    if server.flavor == "mariadb":
        return str(position)
    uuid, _, ranges = position.rpartition(",")[2].partition(":")
    return f"{uuid}:{ranges.rsplit(':', 1)[-1].rsplit('-', 1)[-1]}"


def _replicate(server: Any, db: str, target: str, *extra: str, failpoints: str | None = None) -> ReplicateProcess:
    return ReplicateProcess(source_dsn(server), server.repl_password, target, db, *extra, failpoints=failpoints)


async def test_replicate_into_kafka_load_dml_ddl(server: MariaDBServer, kafka_server: Any, tmp_path: Path) -> None:
    db = server.create_database(f"kafka_cli_{server.flavor}")
    prefix = f"cli_{server.flavor}"
    target = f"kafka://{kafka_server.bootstrap}?prefix={prefix}"
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2), ts DATETIME)",
            "INSERT INTO t VALUES (1, 'a', 1.50, '2026-01-01 10:00:00'), (2, 'b', NULL, NULL), (3, 'c', 0, NULL)",
            )  # fmt: skip
    with _replicate(server, db, target, "--once") as rep:  # the initial load
        assert rep.wait_exit(60) == 0, rep.tail()
        assert "EXACTLY-ONCE" in rep.log
    loaded = check_table(kafka_server.bootstrap, prefix, db, server, "t")
    assert [json.loads(r.value or b"{}")["op"] for r in loaded] == ["r", "r", "r"]
    execute(server, db, "INSERT INTO t VALUES (4, 'd', 4.25, '2026-02-02 00:00:01')")
    inserted_gtid = _last_gtid(server)  # the transaction's GTID, in the flavour's form
    execute(server, db, "UPDATE t SET v = 'bb', d = 2.00 WHERE id = 2", "UPDATE t SET id = 10 WHERE id = 1",
            "DELETE FROM t WHERE id = 3", "ALTER TABLE t ADD COLUMN n INT", "UPDATE t SET n = id",
            "CREATE TABLE u (k VARCHAR(10) PRIMARY KEY, x INT)", "INSERT INTO u VALUES ('p', 1), ('q', 2)",
            "TRUNCATE TABLE u", "INSERT INTO u VALUES ('r', 3)")  # fmt: skip
    # the same replica again, from a TOML file (a kafka:// target there): it goes on from the CLI's checkpoint
    config = tmp_path / "replicas.toml"
    config.write_text(f"""
[sources.main]
dsn = "{source_dsn(server)}"
password_env = "KAFKA_TEST_PASSWORD"

[targets.bus]
url = "{target}"

[replicas.{db}]
database = "{db}"
""")
    with ReplicateProcess.with_config(config, "--once", env={"KAFKA_TEST_PASSWORD": server.repl_password}) as rep:
        assert rep.wait_exit(60) == 0, rep.tail()
    streamed = check_table(kafka_server.bootstrap, prefix, db, server, "t")
    once_in_order(streamed)
    # source.gtid: the transaction's GTID (MySQL uuid:n, MariaDB domain-server-seq), as Debezium writes it
    changes = [json.loads(r.value) for r in streamed if r.value is not None]
    changes = [m for m in changes if m["op"] != "r"]
    assert [m["source"]["gtid"] for m in changes if m["op"] == "c" and m["after"]["id"] == 4] == [inserted_gtid]
    assert all(_GTID[server.flavor].match(m["source"]["gtid"]) for m in changes), [m["source"] for m in changes]
    # a TRUNCATE: Debezium's truncate event on the table's topic (no key, before and after null), between the rows
    # before it and after it (check_table replays it: only ('r', 3) is left)
    u = check_table(kafka_server.bootstrap, prefix, db, server, "u")
    (truncated,) = [json.loads(r.value) for r in u if r.key is None and r.value is not None]
    assert (truncated["op"], truncated["before"], truncated["after"]) == ("t", None, None)
    assert truncated["source"]["table"] == "u"
    assert _GTID[server.flavor].match(truncated["source"]["gtid"]), truncated["source"]
    assert [json.loads(r.value)["op"] for r in u if r.value is not None] == ["c", "c", "t", "c"]
    ddl = [json.loads(r.value or b"{}") for r in read_topic(kafka_server.bootstrap, prefix)]
    altered = [m for m in ddl if m["tableChanges"] and m["tableChanges"][0]["type"] == "ALTER"]
    altered = [m for m in altered if m["source"]["table"] == "t"]  # (u's truncate is an ALTER too)
    assert [c["name"] for c in altered[-1]["tableChanges"][0]["table"]["columns"]] == ["id", "v", "d", "ts", "n"]
    server.drop_database(db)


def _writes(server: MariaDBServer, db: str, rng: random.Random, ids: list[int], count: int) -> None:
    """``count`` small transactions: an insert, an update (``v = v + 1``) of a live row, sometimes a delete."""
    for _ in range(count):
        new = (ids[-1] if ids else 0) + 1
        statements = ["BEGIN", f"INSERT INTO t VALUES ({new}, 0)"]
        ids.append(new)
        statements.append(f"UPDATE t SET v = v + 1 WHERE id = {rng.choice(ids)}")
        if rng.random() < 0.2 and len(ids) > 2:
            gone = ids.pop(rng.randrange(len(ids) - 1))
            statements.append(f"DELETE FROM t WHERE id = {gone}")
        execute(server, db, *statements, "COMMIT")


# MariaDB only for the kills: the path under test is the Kafka transaction of a batch and its position, the same for
# both flavours (the flavours' binlogs are covered by the test above)
async def test_sigkills_mid_stream_each_change_once_in_order(mariadb: MariaDBServer, kafka_server: Any) -> None:
    server = mariadb
    db = server.create_database("kafka_kill")
    target = f"kafka://{kafka_server.bootstrap}?prefix=kill"
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    ids: list[int] = []
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    _writes(server, db, rng, ids, 5)
    for round_ in range(4):
        with _replicate(server, db, target) as rep:
            if round_ == 0:
                rep.wait_for("checkpoint at")  # the load's kills: test_kafka_replay.py
            _writes(server, db, rng, ids, rng.randint(10, 40))
            if rng.random() < 0.5:  # killed at once (mid-batch, mid-transaction), or once it caught up
                # (waiting for "the next checkpoint" could wait forever: the writes may all be in one batch already)
                rep.wait_caught_up(server, timeout=60)
            rep.kill()
    with _replicate(server, db, target, "--once") as rep:
        assert rep.wait_exit(60) == 0, rep.tail()
    once_in_order(check_table(kafka_server.bootstrap, "kill", db, server, "t"))
    server.drop_database(db)


# MariaDB only: as above
async def test_crash_between_the_messages_and_the_position_commit(mariadb: MariaDBServer, kafka_server: Any) -> None:
    server = mariadb
    db = server.create_database("kafka_failpoint")
    target = f"kafka://{kafka_server.bootstrap}?prefix=fp"
    rng = random.Random(7)
    ids: list[int] = []
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    _writes(server, db, rng, ids, 5)
    with _replicate(server, db, target, failpoints="kafka.before_commit=3") as rep:
        # streaming first: the two checkpoints around the initial load are commits 1 and 2, so a batch of the writes
        # below is the 3rd (written before the load ends, they were all in the load: no 3rd commit ever came)
        rep.wait_for(STREAMING)
        _writes(server, db, rng, ids, 30)
        assert rep.wait_exit(60) == -9, rep.tail()  # killed itself with the batch sent, its transaction open
    records = read_partition(kafka_server.bootstrap, topic_name("fp", db, "t"))
    assert any(r.pending for r in records), "the killed batch's messages should be in the log, without a marker"
    with _replicate(server, db, target, "--once") as rep:
        assert rep.wait_exit(60) == 0, rep.tail()
    records = read_partition(kafka_server.bootstrap, topic_name("fp", db, "t"))
    assert any(not r.visible for r in records), "the killed batch's messages are in the log but not visible"
    once_in_order(check_table(kafka_server.bootstrap, "fp", db, server, "t"))
    server.drop_database(db)
