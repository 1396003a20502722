"""``mybinlog replicate --config FILE``: one process, one TOML file, three replicas of two databases of one source.

``shop`` goes twice (into the ClickHouse server, replacing, and into embedded chdb, collapsing, under another
database name), ``crm`` once, into the server, with a tiny consumer queue (1 KiB, 5 ms): its own flushes into
ClickHouse take longer than the dispatcher waits for it, so it is detached, catches up on a connection of its own
and merges back, while the other two go on. Two writers run meanwhile; then SIGTERM (exit 0) and every replica is
compared with its source database row by row (tests/compare.py).

What is asserted about connections to the source (one source, so one binlog connection):

* before the writers start: the status document shows the three consumers on one dispatcher of one client, and
  the server one ``Binlog Dump`` connection of the replication user;
* while they write (status samples after the slow replica's first detach): the two other replicas are on one
  dispatcher and never detached, and there are at most two dispatchers (that one and the slow replica's catch-up);
* after they stopped and every replica caught up: one dispatcher again for the three (the slow replica's catch-up
  dispatcher merged into it, the log says so), and the server shows exactly one ``Binlog Dump`` connection (polled:
  the dump thread of a merged catch-up connection ends when the server next writes to it, at the latest with the
  next heartbeat).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from mybinlog import parse_gtid_set
from mybinlog.errors import StatusReadError
from mybinlog.status import read_status
from tests.compare import assert_replica_equal
from tests.faults import ReplicateProcess, TxnWriter, create_tables, source_dsn
from tests.proxy import ProxyThread
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

# replica names (and target databases) get the source's flavour as a suffix: the ClickHouse server and its
# checkpoints are the session's, and a replica's checkpoint of one flavour is refused by the other
FAST = ("cfg_shop", "cfg_shop_local")
SLOW = "cfg_crm_slow"
PASSWORD_VARIABLE = "CFG_TEST_REPL_PASSWORD"


async def poll(predicate: Callable[[], Awaitable[bool]], what: str, limit_s: float = 60.0) -> None:
    """Until ``await predicate()`` holds: the state is in another process and a server, nothing to wait on."""

    async def loop() -> None:
        while not await predicate():  # noqa: ASYNC110 - polling another process and a server
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(loop(), limit_s)
    except TimeoutError:
        raise AssertionError(f"timed out waiting until {what}") from None


def dump_connections(server: MariaDBServer) -> int:
    """The binlog dump connections of the replication user the server shows (SHOW PROCESSLIST's Command)."""
    return int(
        server.query_value(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%%' AND USER = %s",
            (server.repl_user,),
        )
    )


@pytest.fixture
def slow_link(clickhouse_server: Any) -> Iterator[ProxyThread]:
    """A link to the ClickHouse server that adds 30 ms to each request: a batch of the slow replica (several
    requests) takes longer than the dispatcher's flush interval, so its 1 KiB queue is still full when the next
    batch comes (a detach whatever the machine's speed; its own speed used to decide)."""
    parts = urlsplit(clickhouse_server.url(with_password=False))
    link = ProxyThread(parts.hostname or "127.0.0.1", parts.port or 8123)
    link.proxy.delay = 0.03
    try:
        yield link
    finally:
        link.close()


async def test_three_replicas_of_two_databases_one_connection_a_slow_one_detaches_and_merges_back(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path, slow_link: ProxyThread
) -> None:
    server = fresh_server
    flavor = server.flavor
    fast_names = tuple(f"{name}_{flavor}" for name in FAST)
    slow = f"{SLOW}_{flavor}"
    for db in ("shop", "crm"):
        server.create_database(db)
        create_tables(server, db, filler=2_000)
    (tmp_path / "ch.pw").write_text(clickhouse_server.password + "\n", encoding="utf-8")
    (tmp_path / "ch.pw").chmod(0o600)
    chdb_dir = tmp_path / "chdb"
    sock = tmp_path / "status.sock"
    server_url = clickhouse_server.url(with_password=False)
    port = urlsplit(server_url).port or 8123
    slow_url = server_url.replace(f":{port}", f":{slow_link.port}", 1)
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

[targets.server]
url = "{server_url}"
password_file = "ch.pw"          # relative to this file

[targets.slow]
url = "{slow_url}"
password_file = "ch.pw"

[targets.local]
url = "chdb://{chdb_dir}"

[replicas.cfg_shop_{flavor}]
target = "server"
database = "shop"
target_database = "cfg_shop_{flavor}"

[replicas.cfg_shop_local_{flavor}]
target = "local"
database = "shop"
target_database = "cfg_shop_local_{flavor}"
engine = "collapsing"

[replicas.{slow}]
target = "slow"
database = "crm"
target_database = "cfg_crm_{flavor}"
max_bytes_in_binlog_queue = 1024
max_milliseconds_to_wait_in_binlog_queue = 5
""",
        encoding="utf-8",
    )
    names = (*fast_names, slow)
    address = f"unix:{sock}"
    status: dict[str, Any] = {}

    async def status_holds(check: Callable[[dict[str, Any]], bool]) -> bool:
        nonlocal status
        try:
            status = await read_status(address)
        except StatusReadError:
            return False
        return check(status)

    def on_one_dispatcher(doc: dict[str, Any]) -> bool:
        rows = doc["mysql_binlogs"]
        return {r["name"] for r in rows} == set(names) and len({r["dispatcher_name"] for r in rows}) == 1

    async def one_dump_connection() -> bool:
        return await asyncio.to_thread(dump_connections, server) == 1

    writers = [TxnWriter(server, db) for db in ("shop", "crm")]
    with ReplicateProcess.with_config(config, env={PASSWORD_VARIABLE: server.repl_password}) as rep:
        for name in names:
            rep.wait_for(
                lambda line, n=name: f"consumer {n} on new dispatcher" in line or f"consumer {n} attached" in line
            )
        await poll(lambda: status_holds(on_one_dispatcher), "the three replicas stream on one dispatcher")
        assert len({r["binlog_client_name"] for r in status["mysql_binlogs"]}) == 1
        await poll(one_dump_connection, "the server shows one binlog dump connection before the writers start")

        for writer in writers:
            writer.start()
        try:
            detached = rep.wait_for(f"consumer {slow} detached")
            start = rep.lines.index(detached)
            rep.wait_for(lambda line: f" {slow}: " in line and "reopening" in line, start=start)
            for round_ in range(3):
                # the others go on: each writes checkpoints after the slow replica's detach
                for name in fast_names:
                    line = rep.wait_for(f" {name}: checkpoint at ", start=start)
                    start = max(start, rep.lines.index(line))
                doc = await read_status(address)
                rows = doc["mysql_binlogs"]
                fast = {r["dispatcher_name"] for r in rows if r["name"] in fast_names}
                assert len(fast) == 1, f"sample {round_}: the fast replicas are on {fast}"
                assert len({r["dispatcher_name"] for r in rows}) <= 2, rows
                assert len({r["binlog_client_name"] for r in rows}) == 1, rows
                replicas = {r["replica"]: r for r in doc["replicas"]}
                assert set(replicas) == set(names)
                for name in fast_names:
                    assert replicas[name]["detaches"] == 0, replicas[name]
                    assert replicas[name]["state"] == "streaming", replicas[name]
        finally:
            for writer in writers:
                writer.finish()
        assert all(w.transactions > 0 for w in writers)

        for name in names:
            rep.wait_caught_up(server, replica=name)
        final = parse_gtid_set(server.gtid_binlog_pos(), server.flavor)

        def merged_and_current(doc: dict[str, Any]) -> bool:
            rows = doc["mysql_binlogs"]
            return on_one_dispatcher(doc) and all(
                parse_gtid_set(r["mysql_binlog_executed_gtid_set"], server.flavor).contains(final)  # type: ignore[arg-type]
                for r in rows
            )

        await poll(lambda: status_holds(merged_and_current), "the slow replica merged back: one dispatcher")
        replicas = {r["replica"]: r for r in status["replicas"]}
        assert replicas[slow]["detaches"] >= 1
        assert all(replicas[name]["detaches"] == 0 for name in fast_names)
        assert all(r["state"] == "streaming" for r in replicas.values()), replicas
        await poll(one_dump_connection, "the server shows one binlog dump connection again")

        log = rep.log
        # the slow replica's catch-up dispatchers (opened after its first detach): one of them merged back
        catch_up = set(re.findall(rf"consumer {slow} on new dispatcher (\S+)", log[log.index(detached) :]))
        merges = set(re.findall(r" (\S+): merged \d+ consumer\(s\) into ", log))
        assert catch_up & merges, f"no merge of {sorted(catch_up)}:\n{rep.tail()}"
        assert rep.proc.poll() is None, rep.tail()  # nothing stopped the process ...
        assert " ERROR " not in log, rep.tail()  # ... or any replica
        assert rep.stop() == 0, rep.tail()

    out = "".join(rep.out)
    final_status = {d["replica"]: d for d in (json.loads(line) for line in rep.out if line.startswith("{"))}
    assert set(final_status) == set(names)
    assert all(d["state"] == "stopped" and d["error"] is None for d in final_status.values()), final_status
    assert server.repl_password not in rep.log + out
    assert clickhouse_server.password not in rep.log + out

    readable = clickhouse_server.url()
    assert await assert_replica_equal(server, "shop", readable, target_database=f"cfg_shop_{flavor}") > 2_000
    assert await assert_replica_equal(server, "crm", readable, target_database=f"cfg_crm_{flavor}") > 2_000
    assert (
        await assert_replica_equal(
            server, "shop", f"chdb://{chdb_dir}", engine="collapsing", target_database=f"cfg_shop_local_{flavor}"
        )
        > 2_000
    )
