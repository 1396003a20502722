"""Faults around a running ``mybinlog replicate``: every case kills or restarts a real process (replicate, MariaDB or
MySQL, ClickHouse) or cuts a real connection, then compares the replica with the source row by row (tests/compare.py).

* the source restarted mid-stream (clean shutdown and SIGKILL), then UPDATEs and DELETEs: the new binlog file's
  positions must give higher versions than the old file's (the bug: they were stamped with the old file's name);
* replicate SIGKILLed in every phase, at fail points: in the middle of the initial load (then a DDL and changes
  before the restart), right after a DDL was applied in ClickHouse, between the tables of a batch, between the
  inserts and the checkpoint, after a collapsing batch was announced;
* binlog rotations while streaming;
* the ClickHouse server restarted mid-stream, and connections to both servers cut through a proxy;
* each engine on both targets where the server supports it (18.16 has no ``replacing_is_deleted``).

The probes (grants, purged binlogs, history going backwards, a second writer, budgets) are in test_fault_probes.py;
the long randomized run with random kills and restarts is in test_replication_crash.py.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.compare import assert_replica_equal
from tests.faults import (
    STREAMING,
    ReplicateProcess,
    TxnWriter,
    create_tables,
    execute,
    source_dsn,
    target_for,
    write,
)
from tests.proxy import ProxyThread
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

DB = "shop"


def _start(server: MariaDBServer, target: str, env: dict[str, str], *extra: str, **kw: Any) -> ReplicateProcess:
    return ReplicateProcess(source_dsn(server), server.repl_password, target, DB, *extra, env=env, **kw)


def _readable(kind: str, url: str, clickhouse: Any) -> str:
    """The target URL for this process to read (the child got the server's password from the environment)."""
    return clickhouse.url() if kind == "server" else url


# --- the source restarted mid-stream -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "engine", "how"),
    [
        ("server", "replacing", "clean"),
        ("server", "replacing", "kill"),
        ("server", "collapsing", "kill"),
        ("chdb", "replacing", "kill"),
        ("chdb", "collapsing", "clean"),
        ("chdb", "replacing_is_deleted", "kill"),
    ],
)
async def test_source_restart_mid_stream(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path, kind: str, engine: str, how: str
) -> None:
    """The issue's minimal case: 20k filler rows, rows (-1, 'old') and (-2, 'old'); the server restarts while the
    replica streams; then UPDATE -1, DELETE -2, INSERT -3 and more transactions."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB)
    url, env = target_for(kind, clickhouse_server, tmp_path / "ch")
    name = f"{DB}_{server.flavor}_{kind}_{engine}_{how}"
    with _start(server, url, env, "--engine", engine, "--target-database", name, "--replica", name) as rep:
        rep.wait_for(STREAMING)
        file_before = server.master_status()[0]
        if how == "clean":
            server.restart()
        else:
            server.kill()
            server.start()
        assert server.master_status()[0] != file_before  # a restart opens a new binlog file
        execute(
            server,
            DB,
            "UPDATE t1 SET v = 'new' WHERE id = -1",
            "DELETE FROM t1 WHERE id = -2",
            "INSERT INTO t1 VALUES (-3, 'new', 3, NULL)",
        )
        write(server, DB, 1, 20)
        rep.wait_caught_up(server)
        assert rep.stop() == 0, rep.tail()
    last_file = rep.checkpoints()[-1][0]
    assert last_file == server.master_status()[0], f"the checkpoint names {last_file}, the server writes another file"
    rows = await assert_replica_equal(
        server, DB, _readable(kind, url, clickhouse_server), engine=engine, target_database=name
    )
    assert rows > 20_000


# --- replicate killed in every phase -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "engine"),
    [
        ("server", "replacing"),
        ("server", "collapsing"),
        ("chdb", "replacing"),
        ("chdb", "collapsing"),
        ("chdb", "replacing_is_deleted"),
    ],
)
async def test_sigkill_in_every_phase(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path, kind: str, engine: str
) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB)
    url, env = target_for(kind, clickhouse_server, tmp_path / "ch")
    name = f"{DB}_{server.flavor}_{kind}_{engine}"
    args = ("--engine", engine, "--target-database", name, "--replica", name)

    def killed(failpoint: str, then: Any = None) -> str:
        with _start(server, url, env, *args, failpoints=failpoint) as rep:
            if then is not None:
                rep.wait_for(STREAMING)
                then()
            rc = rep.wait_exit()
            assert rc == -9, f"expected a SIGKILL at {failpoint}, got exit {rc}:\n{rep.tail()}"
            assert f"fail point {failpoint.split('=')[0]} reached" in rep.log
            return rep.log

    # 1. in the middle of the initial load (nokey, then the first block of t1 inserted); then a DDL and changes
    killed("load.after_rows=2")
    execute(
        server,
        DB,
        "ALTER TABLE t1 ADD COLUMN extra INT NOT NULL DEFAULT 7",
        "UPDATE t1 SET v = 'changed', extra = 8 WHERE id % 97 = 0",
        "DELETE FROM t1 WHERE id % 89 = 0",
    )
    n = write(server, DB, 1, 5)
    # 2. right after a DDL was applied in ClickHouse, before its checkpoint (this start loads again first)
    log = killed("ddl.after_apply=1", lambda: execute(server, DB, "ALTER TABLE t2 ADD COLUMN z VARCHAR(5) DEFAULT 'z'"))
    assert "an earlier initial load did not finish" in log
    n = write(server, DB, n, 5)
    # 3. between the tables of a batch, 4. between the inserts and the checkpoint
    killed("flush.after_table=1", lambda: write(server, DB, n, 1))
    n = write(server, DB, n + 1, 5)
    killed("flush.after_inserts=1", lambda: write(server, DB, n, 1))
    n = write(server, DB, n + 1, 5)
    if engine == "collapsing":  # 5. a collapsing batch announced in the checkpoint, nothing inserted yet
        killed("flush.after_pending=1", lambda: write(server, DB, n, 1))
        n = write(server, DB, n + 1, 5)
    execute(server, DB, "ALTER TABLE nokey ADD COLUMN q INT")
    write(server, DB, n, 5)
    with _start(server, url, env, *args, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
        assert "an earlier initial load did not finish" not in rep.log  # the second start already redid the load
    await assert_replica_equal(server, DB, _readable(kind, url, clickhouse_server), engine=engine, target_database=name)


# --- rotations, a ClickHouse restart, connections cut ------------------------------------------------------------


async def test_collapsing_batch_killed_between_inserts_then_merged_replays_exactly(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path
) -> None:
    """The process is SIGKILLed after an insert of a collapsing batch (18.16: no deduplication tokens) and a merge
    collapses what that batch wrote before the restart: the checkpoint says which inserts returned, so the restart
    writes only the others (a tail delete and a full replay would add the merged-away cancel rows again)."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=2_000)
    url, env = target_for("server", clickhouse_server, tmp_path)
    writer = TxnWriter(server, DB)
    name = f"{DB}_{server.flavor}_killed_merged"
    extra = ("--engine", "collapsing", "--target-database", name, "--replica", name)
    with _start(server, url, env, *extra, failpoints="flush.after_table=9") as rep:
        rep.wait_for(STREAMING)
        writer.start()
        assert rep.wait_exit() != 0  # killed by its fail point, between two inserts or before the checkpoint
    assert "fail point flush.after_table reached" in rep.log
    for table in clickhouse_server.execute(f"SELECT name FROM system.tables WHERE database = '{name}'").split():
        clickhouse_server.execute(f"OPTIMIZE TABLE `{name}`.`{table}` FINAL")
    with _start(server, url, env, *extra) as again:
        again.wait_for("tables other than")
        assert writer.finish() > 0
        again.wait_caught_up(server)
        assert again.stop() == 0, again.tail()
    assert "deleting rows with _version" not in again.log
    await assert_replica_equal(server, DB, clickhouse_server.url(), engine="collapsing", target_database=name)


@pytest.mark.parametrize("failpoint", ["flush.after_inserts=6@stop", "flush.after_table=9@stop"])
async def test_collapsing_batch_merged_before_its_checkpoint_is_not_replayed(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path, failpoint: str
) -> None:
    """ClickHouse (18.16: no insert deduplication tokens) fails after some or all of a collapsing batch's inserts
    returned and before its checkpoint, and a merge meanwhile collapses the batch's cancel rows with the rows they
    cancel. Deleting the batch and replaying it would add those cancel rows again (sum(_sign) too low): the
    replicator knows which inserts returned, writes only the others again and saves the checkpoint."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=2_000)
    url, env = target_for("server", clickhouse_server, tmp_path)
    writer = TxnWriter(server, DB)
    # the ClickHouse server is the session's, shared by both flavours
    name = f"{DB}_{server.flavor}_merged_{failpoint.split('=')[0].replace('.', '_')}"
    extra = ("--engine", "collapsing", "--target-database", name, "--replica", name)
    with _start(server, url, env, *extra, failpoints=failpoint) as rep:
        rep.wait_for(STREAMING)
        writer.start()
        rep.wait_for(f"fail point {failpoint.split('=')[0]} reached: stopping")
        tables = clickhouse_server.execute(f"SELECT name FROM system.tables WHERE database = '{name}'").split()
        assert tables
        for table in tables:  # the merge a busy server could have made by itself in that moment
            clickhouse_server.execute(f"OPTIMIZE TABLE `{name}`.`{table}` FINAL")
        clickhouse_server.stop()
        start = len(rep.lines)
        os.kill(rep.proc.pid, signal.SIGCONT)
        rep.wait_for("ClickHouse failed", start=start)  # its next insert, or its checkpoint save
        clickhouse_server.start()
        rep.wait_for(lambda line: "before ClickHouse failed" in line or "tables other than" in line, start=start)
        assert writer.finish() > 0
        rep.wait_caught_up(server)
        assert rep.stop() == 0, rep.tail()
    assert "deleting rows with _version" not in "".join(rep.lines)
    await assert_replica_equal(server, DB, clickhouse_server.url(), engine="collapsing", target_database=name)


async def test_rotations_and_clickhouse_restart_mid_stream(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path
) -> None:
    """FLUSH BINARY LOGS several times and a restart of the ClickHouse server while a writer runs: replicate rides
    the outage (restarting from its checkpoint) and ends equal, without exiting."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=2_000)
    url, env = target_for("server", clickhouse_server, tmp_path)
    writer = TxnWriter(server, DB)
    name = f"{DB}_{server.flavor}_chrestart"
    with _start(server, url, env, "--engine", "collapsing", "--target-database", name, "--replica", name) as rep:
        rep.wait_for(STREAMING)
        writer.start()
        for _ in range(3):
            newest = server.flush_binary_logs()
            rep.wait_for(f"checkpoint at {newest}:")
        clickhouse_server.stop()
        start = len(rep.lines)
        rep.wait_for("ClickHouse failed", start=start)  # the outage was hit while the writer kept writing
        clickhouse_server.start()
        rep.wait_for("checkpoint at", start=len(rep.lines))
        assert writer.finish() > 0
        rep.wait_caught_up(server)
        assert rep.proc.poll() is None, rep.tail()
        assert rep.stop() == 0, rep.tail()
    assert len({f for f, _ in rep.checkpoints()}) >= 3  # it followed the rotations
    await assert_replica_equal(server, DB, clickhouse_server.url(), engine="collapsing", target_database=name)


async def test_connections_cut_through_a_proxy(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path
) -> None:
    """The source connection (binlog dump and the replica lock) and the ClickHouse connection cut again and again
    under a writer: replicate reconnects, restarts from its checkpoint where needed, and ends equal."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=2_000)
    source_proxy = ProxyThread(server.host, server.port)
    target_proxy = ProxyThread(clickhouse_server.host, clickhouse_server.http_port)
    writer = TxnWriter(server, DB)
    try:
        url = f"http://default@127.0.0.1:{target_proxy.port}"
        env = {"MYBINLOG_CH_PASSWORD": clickhouse_server.password}
        rep = ReplicateProcess(
            source_dsn(server, port=source_proxy.port),
            server.repl_password,
            url,
            DB,
            "--target-database",
            f"{DB}_{server.flavor}_cut",
            "--replica",
            f"{DB}_{server.flavor}_cut",
            env=env,
        )
        with rep:
            rep.wait_for(STREAMING)
            writer.start()
            for i in range(6):
                proxy = source_proxy if i % 2 == 0 else target_proxy
                for _ in range(50):  # between requests an HTTP connection may be closed: cut one that is open
                    rep.wait_for("checkpoint at", start=len(rep.lines))
                    before = proxy.proxy.connections
                    mark = len(rep.lines)
                    if proxy.cut() > 0:
                        break
                else:
                    raise AssertionError(
                        f"no open connection to cut through the {'source' if i % 2 == 0 else 'target'} proxy"
                    )
                if proxy is source_proxy:
                    rep.wait_for("reconnected", start=mark)
                else:
                    rep.wait_for("checkpoint at", start=len(rep.lines))  # written through a new connection
                assert proxy.proxy.connections > before
            rep.wait_for("checkpoint at", start=len(rep.lines))
            assert writer.finish() > 0
            rep.wait_caught_up(server)
            assert rep.stop() == 0, rep.tail()
        assert "reconnected" in rep.log  # the binlog stream came back after its cuts
        # (ClickHouse connections cut while idle are replaced quietly; cut in a request, they fail it and the
        # replicator starts again from its checkpoint: both happen, depending on timing)
    finally:
        source_proxy.close()
        target_proxy.close()
    await assert_replica_equal(server, DB, clickhouse_server.url(), target_database=f"{DB}_{server.flavor}_cut")


# --- a failover to a replica with the same GTID history ----------------------------------------------------------


def _follow(replica: MariaDBServer, primary: MariaDBServer) -> None:
    """Make ``replica`` a real replica of ``primary`` (GTID positioning, the server's own replication) and wait until
    it has caught up."""
    gtid = primary.gtid_binlog_pos()
    if replica.flavor == "mariadb":
        replica.execute(
            f"CHANGE MASTER TO MASTER_HOST='{primary.host}', MASTER_PORT={primary.port}, "
            f"MASTER_USER='{primary.repl_user}', MASTER_PASSWORD='{primary.repl_password}', MASTER_USE_GTID=slave_pos"
        )
        replica.execute("START SLAVE")
    else:  # MySQL 8.4+ syntax; caching_sha2_password over plain TCP: the source's RSA key, asked for
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{primary.host}', SOURCE_PORT={primary.port}, "
            f"SOURCE_USER='{primary.repl_user}', SOURCE_PASSWORD='{primary.repl_password}', SOURCE_AUTO_POSITION=1, "
            "GET_SOURCE_PUBLIC_KEY=1"
        )
        replica.execute("START REPLICA")
    _caught_up(replica, gtid)


def _caught_up(replica: MariaDBServer, gtid: str) -> None:
    if replica.flavor == "mariadb":
        waited = replica.query_value("SELECT MASTER_GTID_WAIT(%s, 60)", (gtid,))
        status = "SHOW SLAVE STATUS"
    else:
        waited = replica.query_value("SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, 60)", (gtid,))
        status = "SHOW REPLICA STATUS"
    assert waited == 0, f"the replica did not reach {gtid}: {replica.query(status)}"


def _promote(replica: MariaDBServer) -> None:
    """Stop replicating and forget the source: ``replica`` is now a primary."""
    if replica.flavor == "mariadb":
        replica.execute("STOP SLAVE")
        replica.execute("RESET SLAVE ALL")
    else:
        replica.execute("STOP REPLICA")
        replica.execute("RESET REPLICA ALL")


@pytest.mark.parametrize(("kind", "engine"), [("server", "replacing"), ("chdb", "collapsing")])
async def test_failover_to_a_replica_with_the_same_gtid_history(
    server_kind: str, server_factory: Any, clickhouse_server: Any, tmp_path: Path, kind: str, engine: str
) -> None:
    """replicate reads the primary through a proxy; the primary has rotated to binlog.000006 while the replica
    writes binlog.000001. The proxy is switched to the replica and the connections cut (a failover), the replica is
    promoted and written to. Its positions carry another server_id and lower file numbers: versions must continue
    above everything written (a new version base), and the replica ends equal to the new primary."""
    primary = server_factory(server_id=1)
    # the standby logs what it replicates (MySQL: log_replica_updates, on by default)
    standby = server_factory(server_id=2, **({"log_slave_updates": True} if server_kind == "mariadb" else {}))
    primary.create_database(DB)
    create_tables(primary, DB, filler=2_000)
    for _ in range(5):
        primary.flush_binary_logs()
    _follow(standby, primary)
    proxy = ProxyThread(primary.host, primary.port)
    url, env = target_for(kind, clickhouse_server, tmp_path / "ch")
    name = f"{DB}_{server_kind}_failover_{kind}"
    try:
        rep = ReplicateProcess(
            source_dsn(primary, port=proxy.port),
            primary.repl_password,
            url,
            DB,
            "--engine",
            engine,
            "--target-database",
            name,
            "--replica",
            name,
            env=env,
        )
        with rep:
            rep.wait_for(STREAMING)
            n = write(primary, DB, 1, 10)
            rep.wait_caught_up(primary)
            _caught_up(standby, primary.gtid_binlog_pos())
            # the failover: the address now leads to the standby, which is promoted
            proxy.proxy.target = (standby.host, standby.port)
            _promote(standby)
            primary.stop()  # closes the connections through the proxy (the cut is for any still open)
            proxy.cut()
            n = write(standby, DB, n, 10)
            execute(standby, DB, "UPDATE t1 SET v = 'after failover' WHERE id BETWEEN 1 AND 50")
            rep.wait_for("the source is now the server with server_id 2")
            rep.wait_caught_up(standby)
            assert rep.stop() == 0, rep.tail()
        assert "row versions continue above the last one written" in rep.log
        assert rep.checkpoints()[-1][0] == standby.master_status()[0]
    finally:
        proxy.close()
    await assert_replica_equal(
        standby, DB, _readable(kind, url, clickhouse_server), engine=engine, target_database=name
    )


async def test_collapsing_replay_is_exact_whatever_the_flush_timing(
    fresh_server: MariaDBServer, tmp_path: Path
) -> None:
    """A collapsing batch of several transactions is killed after its first table was inserted (chdb: insert
    deduplication tokens). The replay must end exactly where the batch ended, even when the restarted process flushes
    after 1 ms: a flush in the middle of the replay would insert the first table's rows again under another token."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=200)
    url = f"chdb://{tmp_path / 'ch'}"
    args = ("--engine", "collapsing")
    with _start(server, url, {}, *args, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    with _start(server, url, {}, *args, failpoints="flush.after_table=1", flush_ms=60_000) as rep:
        rep.wait_for(STREAMING)
        write(server, DB, 1, 200)  # a batch of 500 rows (never 60 s): the kill comes after its first table
        assert rep.wait_exit() == -9, rep.tail()
    write(server, DB, 201, 5)
    with _start(server, url, {}, *args, flush_ms=1) as rep:
        rep.wait_for(STREAMING)
        rep.wait_caught_up(server)
        assert rep.stop() == 0, rep.tail()
    await assert_replica_equal(server, DB, url, engine="collapsing")
