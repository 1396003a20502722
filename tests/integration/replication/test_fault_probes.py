"""What ``mybinlog replicate`` does when it cannot keep its promise: it stops, names the problem and the fix, and exits
with the documented code (docs/replication.md, "Exit codes"); it never goes on as if all were well.

Probes: a source user without SELECT (then GRANT and a clean start), a table ClickHouse cannot hold, a purged
binlog, the source's history going backwards (RESET MASTER), a second process on the same replica, the source and
ClickHouse down for longer than the retry budgets (and resuming afterwards), a table whose replication stops on an
untranslatable DDL, STATEMENT binlog format, a wrong password.
"""

from __future__ import annotations

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
    purge_to_current,
    source_dsn,
    target_for,
    write,
)
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

DB = "shop"


def _run(
    server: MariaDBServer,
    target: str,
    env: dict[str, str],
    *extra: str,
    user: str = "repl",
    password: str | None = None,
) -> ReplicateProcess:
    return ReplicateProcess(
        source_dsn(server, user=user),
        server.repl_password if password is None else password,
        target,
        DB,
        *extra,
        env=env,
    )


def _chdb(tmp_path: Path) -> tuple[str, dict[str, str]]:
    return f"chdb://{tmp_path / 'ch'}", {}


def _monitor(server: MariaDBServer) -> str:
    """The privilege that allows SHOW BINARY LOGS / SHOW BINARY LOG STATUS on the server's flavour."""
    return "BINLOG MONITOR" if server.flavor == "mariadb" else "REPLICATION CLIENT"


async def test_user_without_select_is_an_error_then_grant_and_start(
    fresh_server: MariaDBServer, tmp_path: Path
) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    server.execute("CREATE USER 'nosel'@'%' IDENTIFIED BY 'nosel-pw'")
    server.execute(f"GRANT REPLICATION SLAVE, {_monitor(server)} ON *.* TO 'nosel'@'%'")
    url, env = _chdb(tmp_path)
    with _run(server, url, env, "--once", user="nosel", password="nosel-pw") as rep:
        assert rep.wait_exit() == 1, rep.tail()
    assert "GRANT SELECT ON `shop`.* TO 'nosel'" in rep.log
    assert "nosel-pw" not in rep.log
    # a SELECT on one table only: the others would be invisible, so still an error naming the fix
    server.execute("GRANT SELECT ON shop.t1 TO 'nosel'@'%'")
    with _run(server, url, env, "--once", user="nosel", password="nosel-pw") as rep:
        assert rep.wait_exit() == 1, rep.tail()
    assert "may SELECT only some tables of 'shop' (t1)" in rep.log
    server.execute("GRANT SELECT ON shop.* TO 'nosel'@'%'")
    write(server, DB, 1, 3)
    with _run(server, url, env, "--once", user="nosel", password="nosel-pw") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    await assert_replica_equal(server, DB, url)


@pytest.mark.servers("mysql")  # MariaDB gives the snapshot's position itself (binlog_snapshot_file), without a lock
async def test_collapsing_load_on_mysql_needs_reload_then_is_exact(fresh_server: MariaDBServer, tmp_path: Path) -> None:
    """MySQL keeps no consistent snapshot's binlog position: a collapsing replica's initial load takes it under
    FLUSH TABLES WITH READ LOCK, which needs RELOAD. Without it: exit 1 naming the grant; with it, the load and the
    stream after it are exact while a writer commits through the load."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=2_000)
    server.execute("CREATE USER 'noreload'@'%' IDENTIFIED BY 'noreload-pw'")
    server.execute(f"GRANT REPLICATION SLAVE, {_monitor(server)}, SELECT ON *.* TO 'noreload'@'%'")
    url, env = _chdb(tmp_path)
    args = ("--engine", "collapsing", "--once")
    with _run(server, url, env, *args, user="noreload", password="noreload-pw") as rep:
        assert rep.wait_exit() == 1, rep.tail()
    assert "GRANT RELOAD ON *.* TO 'noreload'" in rep.log
    assert "noreload-pw" not in rep.log
    server.execute("GRANT RELOAD ON *.* TO 'noreload'@'%'")
    writer = TxnWriter(server, DB)
    writer.start()  # transactions commit before, during and after the snapshot
    try:
        with _run(server, url, env, "--engine", "collapsing", user="noreload", password="noreload-pw") as rep:
            rep.wait_for(STREAMING)
            assert writer.finish() > 0
            rep.wait_caught_up(server)
            assert rep.stop() == 0, rep.tail()
    finally:
        if writer.is_alive():
            writer.finish()
    await assert_replica_equal(server, DB, url, engine="collapsing")


async def test_table_clickhouse_cannot_hold_and_a_stopped_table(
    fresh_server: MariaDBServer, clickhouse_server: Any, tmp_path: Path
) -> None:
    """A table in scope that cannot be replicated is an error before anything is written; a table whose replication
    stops later (a DDL ClickHouse 18.16 cannot follow) gives exit code 3, with the table named."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url, env = target_for("server", clickhouse_server, tmp_path)
    name = f"probe_stop_{server.flavor}"  # both flavours share the session's ClickHouse server
    args = ("--target-database", name, "--replica", name)
    with _run(server, url, env, *args, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    execute(server, DB, "CREATE TABLE aside (k INT PRIMARY KEY, c INT)", "INSERT INTO aside VALUES (1, 1)")
    with _run(server, url, env, *args, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    # 18.16 has no RENAME COLUMN: `aside` stops, the other tables go on
    execute(server, DB, "ALTER TABLE aside RENAME COLUMN c TO c2", "INSERT INTO aside VALUES (2, 2)")
    write(server, DB, 1, 3)
    with _run(server, url, env, *args, "--once") as rep:
        assert rep.wait_exit() == 3, rep.tail()
    assert "replication of shop.aside stopped" in rep.log
    assert '"stopped_tables": {"aside"' in "".join(rep.out)


async def test_purged_binlog_stops_with_the_fix(fresh_server: MariaDBServer, tmp_path: Path) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url, env = _chdb(tmp_path)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    write(server, DB, 1, 3)  # not replicated yet
    purge_to_current(server)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 1, rep.tail()
    assert "purged" in rep.log
    assert "take a new snapshot" in rep.log


async def test_history_going_backwards_stops(fresh_server: MariaDBServer, tmp_path: Path) -> None:
    """RESET MASTER while the replica is down, then as many new transactions: the GTIDs look alike, the positions
    do not; replicate refuses (exit 1) and says to take a new snapshot."""
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url, env = _chdb(tmp_path)
    write(server, DB, 1, 10)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    server.execute("RESET MASTER" if server.flavor == "mariadb" else "RESET BINARY LOGS AND GTIDS")  # MySQL 8.4+
    write(server, DB, 100, 2)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 1, rep.tail()
    assert "history went backwards" in rep.log
    assert "snapshot" in rep.log


async def test_second_writer_of_a_replica_is_refused(
    fresh_server: MariaDBServer, tmp_path: Path, clickhouse_server: Any
) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url, env = target_for("server", clickhouse_server, tmp_path)
    lock = f"probe_lock_{server.flavor}"
    args = ("--target-database", lock, "--replica", lock)
    with _run(server, url, env, *args) as first:
        first.wait_for(STREAMING)
        with _run(server, url, env, *args, "--once") as second:
            assert second.wait_exit() == 4, second.tail()
        assert "is already being written by another mybinlog process" in second.log
        write(server, DB, 1, 3)
        first.wait_caught_up(server)
        first.kill()  # SIGKILL: the lock goes with its connection
    with _run(server, url, env, *args, "--once") as third:
        assert third.wait_exit() == 0, third.tail()
    await assert_replica_equal(server, DB, clickhouse_server.url(), target_database=lock)


async def test_source_down_longer_than_the_budget_then_resume(fresh_server: MariaDBServer, tmp_path: Path) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url, env = _chdb(tmp_path)
    with _run(server, url, env, "--source-retry-seconds", "2") as rep:
        rep.wait_for(STREAMING)
        write(server, DB, 1, 3)
        rep.wait_caught_up(server)
        server.stop()
        assert rep.wait_exit() == 75, rep.tail()
    assert "resume later from" in rep.log or "run again" in rep.log
    server.start()
    write(server, DB, 10, 3)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    await assert_replica_equal(server, DB, url)


async def test_clickhouse_down_longer_than_the_budget_then_resume(fresh_server: MariaDBServer, tmp_path: Path) -> None:
    """A private ClickHouse server stopped for longer than --target-retry-seconds while changes arrive: exit 75, and
    a later run resumes exactly."""
    from mybinlog.testing._clickhouse import ClickHouseServer

    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    ch = ClickHouseServer(tmp_path / "chserver")
    ch.start()
    try:
        url, env = target_for("server", ch, tmp_path)
        with _run(server, url, env, "--target-retry-seconds", "3") as rep:
            rep.wait_for(STREAMING)
            ch.stop()
            write(server, DB, 1, 3)
            assert rep.wait_exit() == 75, rep.tail()
        assert "kept failing for 3 s" in rep.log
        ch.start()
        write(server, DB, 10, 3)
        with _run(server, url, env, "--once") as rep:
            assert rep.wait_exit() == 0, rep.tail()
        await assert_replica_equal(server, DB, ch.url())
    finally:
        ch.stop()
        ch.cleanup()


def test_statement_format_and_wrong_password(server_factory: Any, tmp_path: Path) -> None:
    server = server_factory(binlog_format="STATEMENT")
    server.create_database(DB)
    url, env = _chdb(tmp_path)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 1, rep.tail()
    assert "binlog_format is STATEMENT" in rep.log
    with _run(server, url, env, "--once", password="wrong-pw-123") as rep:
        assert rep.wait_exit() == 1, rep.tail()
    assert "rejected user 'repl'" in rep.log
    assert "wrong-pw-123" not in rep.log + "".join(rep.out)


async def test_a_checkpoint_without_gtids_resumes_by_file_and_offset(
    fresh_server: MariaDBServer, tmp_path: Path
) -> None:
    """A server without GTIDs (MySQL gtid_mode=OFF) gives checkpoints without a GTID set; replicate must resume from
    their file and offset, not from "now" (it used to skip everything since the checkpoint). MariaDB always has
    GTIDs, so the checkpoint is rewritten without them."""
    import dataclasses

    from mybinlog.clickhouse import load_checkpoint, open_target, save_checkpoint

    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url, env = _chdb(tmp_path)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    target = await open_target(url)
    try:
        cp = await load_checkpoint(target, DB)
        assert cp is not None
        cp.position = dataclasses.replace(cp.position, gtid_set=None)
        await save_checkpoint(target, cp)
    finally:
        await target.aclose()
    write(server, DB, 1, 5)
    with _run(server, url, env, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    assert f"binlog dump from {cp.position.file}:{cp.position.offset}" in rep.log
    await assert_replica_equal(server, DB, url)
