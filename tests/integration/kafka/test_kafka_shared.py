"""``mybinlog replicate --config FILE`` with a ClickHouse (chdb) replica and a Kafka replica of one source database:
the binlog is read once for both (the status document shows them on one dispatcher of one binlog client), a writer
runs meanwhile, and both replicas end exact: chdb compared with the source row by row (tests/compare.py), the topic
rebuilt from the visible messages (tests/kafka_check.py) and each key's chain of changes unbroken.

MariaDB only: the shared connection is the same code for both flavours (tests/integration/cli/test_replicate_config.py
runs it on both with ClickHouse replicas); what is new here is a Kafka replica on it.

A slow Kafka replica on the shared connection: the broker process (Tansu) is SIGSTOPped (a proxy in front of it
would not slow the producer: a Kafka client connects to the addresses the broker advertises), the Kafka replica's
queue fills and it is detached while the chdb replica goes on; once the broker is resumed the Kafka replica catches
up and ends exact.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mybinlog.errors import StatusReadError
from mybinlog.status import read_status
from tests.compare import assert_replica_equal
from tests.faults import ReplicateProcess, source_dsn
from tests.kafka_check import ChainWriter, check_table, once_in_order, random_seed
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

PASSWORD_VARIABLE = "KAFKA_SHARED_PASSWORD"


async def _poll(predicate: Callable[[], Awaitable[bool]], what: str, limit_s: float = 60.0) -> None:
    """Until ``await predicate()`` holds: the state is in another process, nothing to wait on."""

    async def loop() -> None:
        while not await predicate():  # noqa: ASYNC110 - polling another process
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(loop(), limit_s)
    except TimeoutError:
        raise AssertionError(f"timed out waiting until {what}") from None


async def test_clickhouse_and_kafka_replicas_share_one_binlog_connection(
    mariadb: MariaDBServer, kafka_server: Any, tmp_path: Path
) -> None:
    server = mariadb
    db = server.create_database("kafka_shared")
    server.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
    server.execute(f"INSERT INTO `{db}`.t VALUES (-1, 1), (-2, 2)")
    chdb_dir = tmp_path / "chdb"
    sock = tmp_path / "status.sock"
    ch_name, kafka_name = "shared_ch", "shared_kafka"
    config = tmp_path / "replicas.toml"
    config.write_text(
        f"""
[status]
address = "unix:{sock}"

[settings]
max_flush_data_time = 100
max_rows_in_buffer = 500

[sources.main]
dsn = "{source_dsn(server)}"
password_env = "{PASSWORD_VARIABLE}"

[targets.local]
url = "chdb://{chdb_dir}"

[targets.bus]
url = "kafka://{kafka_server.bootstrap}?prefix=shared"

[replicas.{ch_name}]
target = "local"
database = "{db}"
target_database = "{ch_name}"

[replicas.{kafka_name}]
target = "bus"
database = "{db}"
""",
        encoding="utf-8",
    )
    names = {ch_name, kafka_name}
    address = f"unix:{sock}"
    status: dict[str, Any] = {}

    async def one_dispatcher() -> bool:
        nonlocal status
        try:
            status = await read_status(address)
        except StatusReadError:
            return False
        rows = status["mysql_binlogs"]
        return {r["name"] for r in rows} == names and len({r["dispatcher_name"] for r in rows}) == 1

    writer = ChainWriter(server, db, random_seed())
    with ReplicateProcess.with_config(config, env={PASSWORD_VARIABLE: server.repl_password}) as rep:
        await _poll(one_dispatcher, "both replicas stream on one dispatcher")
        assert len({r["binlog_client_name"] for r in status["mysql_binlogs"]}) == 1, status["mysql_binlogs"]
        writer.start()
        try:
            for name in names:  # both write while the writer runs
                rep.wait_for(f" {name}: checkpoint at ", start=len(rep.lines))
        finally:
            writer.finish()
        assert writer.transactions > 0
        for name in names:
            rep.wait_caught_up(server, replica=name, timeout=60)
        await _poll(one_dispatcher, "both replicas still on one dispatcher")
        replicas = {r["replica"]: r for r in status["replicas"]}
        assert all(r["detaches"] == 0 and r["state"] == "streaming" for r in replicas.values()), replicas
        assert replicas[kafka_name]["delivery"] == "exactly-once", replicas[kafka_name]
        assert replicas[ch_name]["delivery"] is None, replicas[ch_name]
        assert rep.stop() == 0, rep.tail()
    assert " ERROR " not in rep.log, rep.tail()
    assert await assert_replica_equal(server, db, f"chdb://{chdb_dir}", target_database=ch_name) > 2
    once_in_order(check_table(kafka_server.bootstrap, "shared", db, server, "t"))
    server.drop_database(db)


async def test_a_frozen_broker_detaches_the_kafka_replica_and_the_chdb_replica_goes_on(
    mariadb: MariaDBServer, kafka_factory: Any, tmp_path: Path
) -> None:
    server = mariadb
    broker = kafka_factory()  # of its own: it is frozen
    db = server.create_database("kafka_frozen")
    server.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
    server.execute(f"INSERT INTO `{db}`.t VALUES (-1, 1)")
    chdb_dir = tmp_path / "chdb"
    sock = tmp_path / "status.sock"
    ch_name, kafka_name = "frozen_ch", "frozen_kafka"
    config = tmp_path / "replicas.toml"
    # a small queue and a short wait: the Kafka replica is detached soon after it stops reading
    config.write_text(
        f"""
[status]
address = "unix:{sock}"

[settings]
max_flush_data_time = 100
max_rows_in_buffer = 500

[sources.main]
dsn = "{source_dsn(server)}"
password_env = "{PASSWORD_VARIABLE}"

[targets.local]
url = "chdb://{chdb_dir}"

[targets.bus]
url = "kafka://{broker.bootstrap}?prefix=frozen&timeout=3"

[replicas.{ch_name}]
target = "local"
database = "{db}"
target_database = "{ch_name}"

[replicas.{kafka_name}]
target = "bus"
database = "{db}"
max_bytes_in_binlog_queue = 1024
max_milliseconds_to_wait_in_binlog_queue = 200
""",
        encoding="utf-8",
    )
    address = f"unix:{sock}"
    status: dict[str, Any] = {}

    async def replicas_hold(check: Callable[[dict[str, dict[str, Any]]], bool]) -> bool:
        nonlocal status
        try:
            status = await read_status(address)
        except StatusReadError:
            return False
        return check({r["replica"]: r for r in status.get("replicas") or []})

    writer = ChainWriter(server, db, random_seed())
    with ReplicateProcess.with_config(config, env={PASSWORD_VARIABLE: server.repl_password}) as rep:
        for name in (ch_name, kafka_name):
            rep.wait_for(
                lambda line, n=name: f"consumer {n} on new dispatcher" in line or f"consumer {n} attached" in line
            )
        pid = broker.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            writer.start()
            detached = rep.wait_for(f"consumer {kafka_name} detached", timeout=60)
            start = rep.lines.index(detached)
            rep.wait_for(f" {ch_name}: checkpoint at ", start=start)  # the chdb replica goes on
            writer.finish()
            assert writer.transactions > 0
            rep.wait_caught_up(server, replica=ch_name, timeout=60)
            await _poll(
                lambda: replicas_hold(lambda r: r[kafka_name]["detaches"] >= 1 and r[ch_name]["detaches"] == 0),
                "the status says the Kafka replica was detached, the chdb replica not",
            )
            assert rep.proc.poll() is None, rep.tail()
        finally:
            writer.finish()
            os.kill(pid, signal.SIGCONT)
        rep.wait_caught_up(server, replica=kafka_name, timeout=90)  # its catch-up after the broker is back
        await _poll(
            lambda: replicas_hold(lambda r: all(x["state"] == "streaming" for x in r.values())),
            "both replicas stream again",
        )
        assert rep.stop() == 0, rep.tail()
    assert " ERROR " not in rep.log, rep.tail()
    assert await assert_replica_equal(server, db, f"chdb://{chdb_dir}", target_database=ch_name) > 1
    once_in_order(check_table(broker.bootstrap, "frozen", db, server, "t"))
    server.drop_database(db)
