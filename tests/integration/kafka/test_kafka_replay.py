"""What a restart of ``mybinlog replicate --target kafka://...`` replays is published once: a DDL between the
checkpoint and a crash (fail point ``ddl.after_apply``: the DDL handled, its checkpoint not written) and an initial
load cut short by a crash (fail point ``load.after_rows``: some tables' rows sent). Visibility is decided from the
transaction markers by tests/kafka_check.py.

MariaDB only: what is under test is which Kafka transaction the schema change and load messages are in (the sink's),
the same for both flavours (test_kafka_sink.py runs the load, DML and DDL on both).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from mybinlog.testing import MariaDBServer
from tests.faults import STREAMING, ReplicateProcess, execute, source_dsn
from tests.kafka_check import check_table, once_in_order, read_topic

pytestmark = pytest.mark.integration


def _replicate(server: Any, db: str, target: str, *extra: str, failpoints: str | None = None) -> ReplicateProcess:
    return ReplicateProcess(source_dsn(server), server.repl_password, target, db, *extra, failpoints=failpoints)


def _ddl(bootstrap: str, prefix: str) -> Counter[str]:
    """How many times each DDL statement is visible on the schema change topic ``prefix``."""
    return Counter(json.loads(r.value or b"{}")["ddl"] for r in read_topic(bootstrap, prefix))


async def test_a_ddl_replayed_after_a_crash_is_published_once(mariadb: MariaDBServer, kafka_server: Any) -> None:
    server = mariadb
    db = server.create_database("kafka_ddl_replay")
    prefix = "ddlreplay"
    target = f"kafka://{kafka_server.bootstrap}?prefix={prefix}"
    execute(server, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)")
    # killed with the ALTER handled and its checkpoint not written: the restart reads the ALTER again
    with _replicate(server, db, target, failpoints="ddl.after_apply") as rep:
        rep.wait_for(STREAMING)
        execute(server, db, "ALTER TABLE t ADD COLUMN n INT", "UPDATE t SET n = 5")
        assert rep.wait_exit(60) == -9, rep.tail()
    # killed after the checkpoint that follows a CREATE TABLE: nothing of it is read again
    with _replicate(server, db, target) as rep:
        rep.wait_for(STREAMING)
        execute(server, db, "CREATE TABLE u (k INT PRIMARY KEY)", "INSERT INTO u VALUES (7)")
        rep.wait_caught_up(server, timeout=60)
        rep.kill()
    with _replicate(server, db, target, "--once") as rep:
        assert rep.wait_exit(60) == 0, rep.tail()
    published = _ddl(kafka_server.bootstrap, prefix)
    assert sorted(published.values()) == [1, 1, 1], published  # CREATE t (the load), the ALTER's t, CREATE u
    records = check_table(kafka_server.bootstrap, prefix, db, server, "t")
    once_in_order(records)
    # each DDL at its own binlog position: the load's CREATE at the load's snapshot (its rows'), then each DDL's end
    loaded = json.loads(records[0].value or b"{}")["source"]
    sources = [json.loads(r.value or b"{}")["source"] for r in read_topic(kafka_server.bootstrap, prefix)]
    positions = [(s["file"], s["pos"]) for s in sources]
    assert positions[0] == (loaded["file"], loaded["pos"]), (positions, loaded)
    assert positions == sorted(set(positions)), positions
    check_table(kafka_server.bootstrap, prefix, db, server, "u")
    server.drop_database(db)


async def test_a_crash_in_the_initial_load_publishes_it_once(mariadb: MariaDBServer, kafka_server: Any) -> None:
    server = mariadb
    db = server.create_database("kafka_load_replay")
    prefix = "loadreplay"
    target = f"kafka://{kafka_server.bootstrap}?prefix={prefix}"
    tables = ["a", "b", "c"]
    for i, name in enumerate(tables):
        execute(server, db, f"CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(10))",
                f"INSERT INTO {name} VALUES " + ", ".join(f"({k}, 'x{i}')" for k in range(1, 5)))  # fmt: skip
    # killed once two tables' rows were written (the load's marker is committed, the load not finished)
    with _replicate(server, db, target, failpoints="load.after_rows=2") as rep:
        assert rep.wait_exit(60) == -9, rep.tail()
    with _replicate(server, db, target, "--once") as rep:
        assert rep.wait_exit(60) == 0, rep.tail()
    snapshot: list[str] = []
    for name in tables:
        records = check_table(kafka_server.bootstrap, prefix, db, server, name)
        once_in_order(records)
        assert [json.loads(r.value or b"{}")["op"] for r in records] == ["r"] * 4, name
        snapshot.extend(json.loads(r.value or b"{}")["source"]["snapshot"] for r in records)
    assert sorted(snapshot) == ["last"] + ["true"] * 11, snapshot  # the load's last row is "last", as Debezium
    published = _ddl(kafka_server.bootstrap, prefix)
    assert sorted(published.values()) == [1, 1, 1], published
    assert all(d.startswith("CREATE") for d in published), published
    server.drop_database(db)
