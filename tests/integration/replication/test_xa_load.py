"""XA transactions prepared before a replica's start (its initial load, or a Spark snapshot's low watermark) and
resolved after it, on real MariaDB 10.11 and MySQL 9.7 servers into real ClickHouse (chdb).

Their rows are invisible to the load's consistent snapshot, and their prepared parts lie in the binlog before the
position the stream starts from: before the fix their XA COMMIT only logged a WARNING naming the XID and the rows were
missing from the replica. Now the load finds them (``XA RECOVER`` and the binlog before its position) and holds them
in its first checkpoint as if the stream had passed them (docs/replication.md, "XA transactions"). Each test compares
the replica with the source row by row (tests/compare.py).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from mybinlog.clickhouse import Target, load_checkpoint
from mybinlog.errors import ReplicationError
from mybinlog.replication import ReplicationSettings, Replicator
from tests.compare import assert_replica_equal
from tests.conftest import skip_or_fail
from tests.faults import execute as _sql
from tests.servers import MariaDBServer, MySQLServer

pytestmark = pytest.mark.integration

SEED = (
    "CREATE TABLE t (id INT PRIMARY KEY, v INT, s VARCHAR(20))",
    "CREATE TABLE u (id INT PRIMARY KEY, w INT)",
    "INSERT INTO t VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'), (4, 4, 'd')",
    "INSERT INTO u VALUES (1, 10), (2, 20)",
)


def _prepare(server: MariaDBServer, db: str, xid: str, *statements: str) -> None:
    _sql(server, db, f"XA START {xid}", *statements, f"XA END {xid}", f"XA PREPARE {xid}")


def _grant_xa_recover(server: MariaDBServer) -> None:
    """MySQL 8.0+ lists prepared XA transactions only to holders of XA_RECOVER_ADMIN (MariaDB: to anyone)."""
    if isinstance(server, MySQLServer):
        server.execute("GRANT XA_RECOVER_ADMIN ON *.* TO 'repl'@'%'")


@pytest.fixture
def rollback_prepared(fresh_server: MariaDBServer) -> Iterator[MariaDBServer]:
    """``fresh_server``; after the test, what it left prepared is rolled back (it holds row locks)."""
    yield fresh_server
    if not fresh_server.running:
        return
    for row in fresh_server.query("XA RECOVER"):
        gtrid_len, data = int(row[1]), bytes(row[3]) if not isinstance(row[3], str) else row[3].encode()
        fresh_server.execute(f"XA ROLLBACK X'{data[:gtrid_len].hex()}',X'{data[gtrid_len:].hex()}',{int(row[0])}")


def _replicator(server: MariaDBServer, target: Target, db: str, **kw: Any) -> Replicator:
    settings = ReplicationSettings(max_flush_data_time=50, **kw)
    return Replicator(server.repl_dsn, target, database=db, target_database=target.database, replica=target.database,
                      settings=settings)  # fmt: skip


def _url(target: Target) -> str:
    return f"chdb://{target.path}"  # type: ignore[attr-defined]


@pytest.mark.parametrize("engine", ["replacing", "collapsing"])
async def test_xa_prepared_before_the_initial_load_is_applied_at_its_commit(
    rollback_prepared: MariaDBServer, chdb_target: Target, engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Three XA transactions are prepared before the load (one of them in an older binlog file); after the load one
    is committed, one rolled back and one committed after a replicator restart (its rows read again from the
    binlog). Before the fix the committed rows were missing and only a WARNING named their XIDs."""
    server = rollback_prepared
    _grant_xa_recover(server)
    db = server.create_database("xa_load")
    _sql(server, db, *SEED)
    _prepare(server, db, "'old'", "INSERT INTO t VALUES (30, 30, 'old')", "UPDATE u SET w = 11 WHERE id = 1")
    _sql(server, db, "FLUSH BINARY LOGS", "INSERT INTO t VALUES (5, 5, 'e')")
    _prepare(server, db, "'cm','b',7", "INSERT INTO t VALUES (10, 10, 'x')", "UPDATE t SET v = 100 WHERE id = 1",
             "DELETE FROM t WHERE id = 2", "DELETE FROM u WHERE id = 2")  # fmt: skip
    _prepare(server, db, "'rb'", "INSERT INTO t VALUES (11, 11, 'y')", "UPDATE t SET s = 'no' WHERE id = 3",
             "DELETE FROM t WHERE id = 4")  # fmt: skip
    _sql(server, db, "INSERT INTO t VALUES (6, 6, 'f')")
    with caplog.at_level(logging.WARNING, logger="mybinlog.replication"):
        await _replicator(server, chdb_target, db, engine=engine).run(until_caught_up=True)  # the initial load
        cp = await load_checkpoint(chdb_target, chdb_target.database)
        assert cp is not None
        assert sorted(cp.xa) == sorted(["X'6f6c64',X'',1", "X'636d',X'62',7", "X'7262',X'',1"]), cp.xa
        await assert_replica_equal(server, db, _url(chdb_target), engine=engine, target_database=chdb_target.database)
        _sql(server, db, "INSERT INTO u VALUES (3, 30)", "XA COMMIT 'cm','b',7", "UPDATE t SET v = 101 WHERE id = 10",
             "XA ROLLBACK 'rb'", "INSERT INTO t VALUES (7, 7, 'g')")  # fmt: skip
        await _replicator(server, chdb_target, db, engine=engine).run(until_caught_up=True)
        await assert_replica_equal(server, db, _url(chdb_target), engine=engine, target_database=chdb_target.database)
        _sql(server, db, "XA COMMIT 'old'")
        await _replicator(server, chdb_target, db, engine=engine).run(until_caught_up=True)
    await assert_replica_equal(server, db, _url(chdb_target), engine=engine, target_database=chdb_target.database)
    cp = await load_checkpoint(chdb_target, chdb_target.database)
    assert cp is not None
    assert cp.xa == {}
    assert not [r for r in caplog.records if "came before the replica's start" in r.getMessage()]


@pytest.mark.servers("mysql")  # MariaDB keeps a binlog holding a prepared XA transaction: PURGE stops before it
async def test_xa_prepared_part_purged_before_the_load_stops_it(
    rollback_prepared: MariaDBServer, chdb_target: Target
) -> None:
    """A transaction still prepared whose prepared part is no longer in the binlog: the load stops with an error
    naming the XID and the fix (before: it loaded, and the COMMIT later lost the rows with a WARNING)."""
    server = rollback_prepared
    _grant_xa_recover(server)
    db = server.create_database("xa_purged")
    _sql(server, db, *SEED)
    _prepare(server, db, "'gone'", "INSERT INTO t VALUES (40, 40, 'gone')")
    _sql(server, db, "FLUSH BINARY LOGS", "INSERT INTO t VALUES (5, 5, 'e')")
    current = server.master_status()[0]
    server.execute(f"PURGE BINARY LOGS TO '{current}'")
    if server.query("SHOW BINARY LOGS")[0][0] != current:
        pytest.fail(f"the server kept the binlog of a prepared XA transaction: {server.query('SHOW BINARY LOGS')}")
    with pytest.raises(ReplicationError) as info:
        await _replicator(server, chdb_target, db).run(until_caught_up=True)
    message = str(info.value)
    assert "X'676f6e65',X'',1" in message
    assert "no longer in the binlog" in message
    assert "Commit or roll them back on the source" in message


@pytest.mark.servers("mysql")
async def test_xa_recover_denied_is_a_warning_naming_the_grant(
    server: MariaDBServer, db: str, chdb_target: Target, caplog: pytest.LogCaptureFixture
) -> None:
    """MySQL's repl user without XA_RECOVER_ADMIN: XA RECOVER fails (1401); the load goes on and says what is at
    risk and which grant removes the risk."""
    _sql(server, db, *SEED[:1], "INSERT INTO t VALUES (1, 1, 'a')")
    server.execute("REVOKE XA_RECOVER_ADMIN ON *.* FROM 'repl'@'%'")  # the fixture's repl user has it
    try:
        with caplog.at_level(logging.WARNING, logger="mybinlog.replication"):
            await _replicator(server, chdb_target, db).run(until_caught_up=True)
    finally:
        server.execute("GRANT XA_RECOVER_ADMIN ON *.* TO 'repl'@'%'")
    assert any("GRANT XA_RECOVER_ADMIN ON *.* TO 'repl'" in r.getMessage() for r in caplog.records), caplog.text
    await assert_replica_equal(server, db, _url(chdb_target), target_database=chdb_target.database)


# -- the Spark snapshot ------------------------------------------------------------------------------------------------


def _require_spark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        skip_or_fail("pyspark is not installed: run `bash scripts/setup.sh --test`")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        skip_or_fail("Java (17+) is needed by Spark: apt-get install openjdk-17-jre-headless")


@pytest.mark.timeout(600)
async def test_xa_prepared_before_a_spark_snapshot_is_applied_at_its_commit(
    rollback_prepared: MariaDBServer, chdb_target: Target
) -> None:
    """The same through ``mybinlog snapshot`` (a local Spark session): the snapshot's first checkpoint holds the
    transactions prepared before its low watermark; the stream applies the committed one and drops the other."""
    _require_spark()
    from mybinlog.snapshot import SnapshotOptions, run_snapshot, spark_session

    server = rollback_prepared
    _grant_xa_recover(server)
    db = server.create_database("xa_snap")
    _sql(server, db, *SEED)
    _prepare(server, db, "'cm'", "INSERT INTO t VALUES (10, 10, 'x')", "UPDATE t SET v = 100 WHERE id = 1",
             "DELETE FROM u WHERE id = 2")  # fmt: skip
    _prepare(server, db, "'rb'", "INSERT INTO t VALUES (11, 11, 'y')", "DELETE FROM t WHERE id = 4")
    session = spark_session("local[2]")
    try:
        options = SnapshotOptions(source=server.repl_dsn, target=_url(chdb_target), database=db,
                                  target_database=chdb_target.database, replica=chdb_target.database,
                                  chunk_rows=2)  # fmt: skip
        result = await run_snapshot(options, spark=session)
    finally:
        session.stop()
    assert result.checkpoint_saved
    cp = await load_checkpoint(chdb_target, chdb_target.database)
    assert cp is not None
    assert sorted(cp.xa) == ["X'636d',X'',1", "X'7262',X'',1"], cp.xa
    _sql(server, db, "XA COMMIT 'cm'", "INSERT INTO u VALUES (3, 30)", "XA ROLLBACK 'rb'")
    await _replicator(server, chdb_target, db).run(until_caught_up=True)
    await assert_replica_equal(server, db, _url(chdb_target), target_database=chdb_target.database)
