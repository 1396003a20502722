"""The test infrastructure itself: private MariaDB and Oracle MySQL servers, fixtures, and the all-types workload."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.corpus import REPO_ROOT
from tests.servers import MariaDBServer, MariaDBStartError, MySQLServer
from tests.workload import Workload, fetch_rows, server_flavor


def _process_gone(pid: int) -> bool:
    """True when ``pid`` no longer exists or is a zombie (dead, not yet reaped by its new parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _nth_gtid(server: MariaDBServer, n: int) -> str:
    """The GTID text after the first ``n`` transactions of a new server: MariaDB's ``@@gtid_binlog_pos``, MySQL's
    ``@@global.gtid_executed``."""
    return f"0-1-{n}" if server.flavor == "mariadb" else f"{server.server_uuid}:1-{n}"


def _wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while not _process_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)  # polling a condition with a deadline
    return True


def test_binlog_settings(server: MariaDBServer) -> None:
    # GTIDs: MariaDB always writes them (strict mode on), MySQL when gtid_mode is ON
    gtids = ("gtid_strict_mode",) if server.flavor == "mariadb" else ("gtid_mode", "enforce_gtid_consistency")
    values = server.variables(
        "log_bin",
        "binlog_format",
        "binlog_row_image",
        "binlog_row_metadata",
        *gtids,
        "server_id",
        "binlog_checksum",
        "character_set_server",
        "time_zone",
    )
    expected_gtids = (
        {"gtid_strict_mode": 1}
        if server.flavor == "mariadb"
        else {
            "gtid_mode": "ON",
            "enforce_gtid_consistency": "ON",
        }
    )
    assert values == {
        "log_bin": 1,
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        **expected_gtids,
        "server_id": 1,
        "binlog_checksum": "CRC32",
        "character_set_server": "utf8mb4",
        "time_zone": "+00:00",
    }
    if server.flavor == "mariadb":
        assert "MariaDB" in server.version
        assert server.version_tuple >= (10, 5, 0)
    else:
        assert "MariaDB" not in server.version
        assert server.version_tuple >= (8, 0, 0)
        assert server.version == server.binaries.version.split(" Ver ", 1)[1].split(" ", 1)[0]
    binlog_name, position = server.master_status()
    assert binlog_name.startswith("binlog.")
    assert position >= 4
    assert all(path.is_file() and path.is_absolute() for path in server.binlog_paths())


def test_accounts_and_dsns(server: MariaDBServer) -> None:
    assert server.repl_dsn == f"mysql://repl:{server.repl_password}@127.0.0.1:{server.port}"
    assert server.admin_dsn == f"mysql://root:{server.admin_password}@127.0.0.1:{server.port}"
    assert server.repl_password not in repr(server)
    assert server.admin_password not in repr(server)
    conn = server.connect(user="repl")
    try:
        with conn.cursor() as cur:
            # the binlog status is readable with the reader's privileges (MariaDB: BINLOG MONITOR, MySQL:
            # REPLICATION CLIENT; MySQL 8.2+ renamed SHOW MASTER STATUS)
            mysql = server.flavor == "mysql"
            cur.execute("SHOW BINARY LOG STATUS" if mysql else "SHOW MASTER STATUS")
            assert cur.fetchone()[0].startswith("binlog.")
            cur.execute("SHOW GRANTS")
            grants = " ".join(row[0] for row in cur.fetchall())
            assert "REPLICATION SLAVE" in grants
            assert ("REPLICATION CLIENT" if mysql else "BINLOG MONITOR") in grants
            with pytest.raises(pymysql.err.OperationalError) as excinfo:
                cur.execute("CREATE DATABASE repl_must_not_create")
            assert excinfo.value.args[0] == 1044  # access denied
    finally:
        conn.close()
    with pytest.raises(pymysql.err.OperationalError) as excinfo:
        pymysql.connect(host=server.host, port=server.port, user="repl", password="wrong", connect_timeout=5)
    assert excinfo.value.args[0] == 1045


def test_db_fixture_gives_empty_private_database(server: MariaDBServer, db: str, db_conn: Any) -> None:
    assert db in {row[0] for row in server.query("SHOW DATABASES")}
    with db_conn.cursor() as cur:
        cur.execute("SELECT DATABASE(), @@session.time_zone")
        assert cur.fetchone() == (db, "+00:00")
        cur.execute("SHOW TABLES")
        assert cur.fetchall() == ()


def test_fresh_server_binlog_has_no_harness_transactions(fresh_server: MariaDBServer) -> None:
    assert fresh_server.gtid_binlog_pos() == ""
    assert [name for name, _ in fresh_server.binlog_files()] == ["binlog.000001"]
    fresh_server.create_database("d")
    fresh_server.execute("CREATE TABLE d.t (id INT PRIMARY KEY)")
    fresh_server.execute("INSERT INTO d.t VALUES (1)")
    assert fresh_server.gtid_binlog_pos() == _nth_gtid(fresh_server, 3)


def test_restart_keeps_data_and_port(fresh_server: MariaDBServer) -> None:
    server = fresh_server
    server.create_database("keep")
    server.execute("CREATE TABLE keep.t (id INT PRIMARY KEY, v VARCHAR(10))")
    server.execute("INSERT INTO keep.t VALUES (1, 'a'), (2, 'b')")
    old_pid, port = server.pid, server.port
    assert old_pid is not None
    server.restart()
    assert server.pid is not None
    assert server.pid != old_pid
    assert _process_gone(old_pid)
    assert server.port == port
    assert server.query("SELECT id, v FROM keep.t ORDER BY id") == [(1, "a"), (2, "b")]
    assert [name for name, _ in server.binlog_files()] == ["binlog.000001", "binlog.000002"]


def test_kill_leaves_no_process_and_recovers(fresh_server: MariaDBServer) -> None:
    server = fresh_server
    server.create_database("crash")
    server.execute("CREATE TABLE crash.t (id INT PRIMARY KEY)")
    server.execute("INSERT INTO crash.t VALUES (42)")
    pid = server.pid
    assert pid is not None
    server.kill()
    assert not server.running
    assert server.pid is None
    assert _process_gone(pid)
    with pytest.raises(MariaDBStartError, match="not running"):
        server.execute("SELECT 1")
    server.start()  # crash recovery
    assert server.query("SELECT id FROM crash.t") == [(42,)]
    assert server.gtid_binlog_pos() == _nth_gtid(server, 3)


def test_factory_options(server_factory: Callable[..., MariaDBServer]) -> None:
    statement = server_factory(binlog_format="STATEMENT", binlog_checksum="NONE", server_id=7)
    assert statement.variables("binlog_format", "binlog_checksum", "server_id") == {
        "binlog_format": "STATEMENT",
        "binlog_checksum": "NONE",
        "server_id": 7,
    }
    no_binlog = server_factory(log_bin=None)
    assert no_binlog.variables("log_bin")["log_bin"] == 0
    assert no_binlog.log_bin_basename is None
    with pytest.raises(pymysql.err.OperationalError):
        no_binlog.query("SHOW BINARY LOGS")  # "You are not using binary logging"
    assert statement.port != no_binlog.port


def test_start_failure_reports_error_log(tmp_path: Path, server: MariaDBServer) -> None:
    server = type(server)(tmp_path / "broken", extra_args=["--no-such-option-for-mybinlog"])
    with pytest.raises(MariaDBStartError, match="no-such-option-for-mybinlog"):
        server.start()
    assert not server.running
    server.cleanup()


_CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from tests.servers import {cls}
    server = {cls}({base!r}).start()
    print(server.pid, flush=True)
    if {crash!r}:
        time.sleep(600)  # killed by the test
    sys.stdin.readline()  # exit (without stopping the server) when the test says so
    """
)


@pytest.mark.parametrize("crash", [False, True], ids=["exit-without-stop", "sigkill-of-python"])
def test_no_orphan_server_survives_the_test_process(tmp_path: Path, crash: bool, server: MariaDBServer) -> None:
    cls = "MySQLServer" if isinstance(server, MySQLServer) else "MariaDBServer"
    code = _CHILD.format(root=str(REPO_ROOT), base=str(tmp_path / "child"), crash=crash, cls=cls)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdin is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), f"child did not start a server (rc={child.poll()})"
        server_pid = int(line)
        assert not _process_gone(server_pid)  # the child waits for our word before exiting
        if crash:
            child.kill()
        else:
            child.stdin.write("exit\n")
            child.stdin.flush()
        child.wait(timeout=60)
    assert _wait_gone(server_pid), f"{server.flavor} server {server_pid} outlived its test process"


def test_workload_applies_and_matches_model(server: MariaDBServer, db: str, db_conn: Any) -> None:
    workload = Workload(seed=11)
    result = workload.run(db_conn, db, n_transactions=24, statements_per_txn=5, ddl_every=4)
    assert result.transactions == 24
    assert {c.kind for c in result.changes} == {"insert", "update", "delete"}
    assert {c.table for c in result.changes} == {"all_types", "composite_pk", "no_pk"}
    assert sum(sql.startswith("ALTER TABLE") for sql in result.ddl) == 6
    assert all(result.final.values()), "every table keeps some rows"
    assert result.check_server(db_conn) == []

    # a second run continues the same model
    workload.run(db_conn, db, n_transactions=3, statements_per_txn=3)
    assert result.transactions == 27
    assert result.check_server(db_conn) == []

    # and the check notices a row that differs from the model
    key = next(iter(result.final["all_types"]))
    server.execute(f"UPDATE `{db}`.all_types SET c_int_nn = c_int_nn + 1 WHERE id = %s", (key[0],))
    problems = result.check_server(db_conn)
    assert len(problems) == 1
    assert "c_int_nn" in problems[0]


def test_workload_extremes_round_trip(db: str, db_conn: Any) -> None:
    result = Workload(seed=2).run(db_conn, db, n_transactions=1, statements_per_txn=0)
    rows = fetch_rows(db_conn, db, "all_types")
    assert len(rows) == 4  # min, max, all-NULL, zero dates
    by_id = {row["id"]: row for row in rows}
    zero = by_id[4]
    assert zero["c_date"] == "0000-00-00"
    assert zero["c_datetime3"] == "0000-00-00 00:00:00.000"
    assert by_id[2]["c_bigint_u"] == 2**64 - 1
    assert by_id[1]["c_tinyint"] == -128
    assert len(by_id[2]["c_longblob"]) == 70_000
    own_type = "c_uuid" if server_flavor(db_conn) == "mariadb" else "c_vector"  # UUID is MariaDB's, VECTOR MySQL's
    assert all(by_id[3][name] is None for name in ("c_json", own_type, "c_point", "c_time6"))
    assert result.check_server(db_conn) == []


def test_workload_changes_are_in_binlog_order(server: MariaDBServer, db: str, db_conn: Any) -> None:
    """The recorded changes follow the binlog's row order (python-mysql-replication as the oracle)."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    start_file, start_pos = server.master_status()
    # python-mysql-replication cannot parse the table map of a table with a VECTOR column (MySQL 9)
    result = Workload(seed=5, omit_types=("vector",)).run(
        db_conn, db, n_transactions=10, statements_per_txn=4, ddl_every=3, insert_extremes=False
    )
    settings = server.connect_kwargs("repl")
    settings["passwd"] = settings.pop("password")
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=4242,
        blocking=False,
        resume_stream=True,
        log_file=start_file,
        log_pos=start_pos,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_schemas=[db],
        is_mariadb=False,  # file/position mode; see DESIGN.md on its GTID-mode bug
    )
    kinds = {WriteRowsEvent: "insert", UpdateRowsEvent: "update", DeleteRowsEvent: "delete"}
    seen = []
    try:
        for event in stream:
            kind = kinds[type(event)]
            for row in event.rows:
                image = row["values"] if kind != "update" else row["after_values"]
                seen.append((event.table, kind, tuple(image[k] for k in result.keys[event.table])))
    finally:
        stream.close()
    expected = []
    for change in result.changes:
        image = change.after if change.after is not None else change.before
        assert image is not None
        expected.append((change.table, change.kind, tuple(image[k] for k in result.keys[change.table])))
    assert seen == expected
