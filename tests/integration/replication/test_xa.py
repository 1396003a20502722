"""XA transactions replicated from real MariaDB 10.11 and MySQL 9.7 servers into real ClickHouse (chdb and the 18.16
server): a prepared transaction is held until its XA COMMIT (applied) or XA ROLLBACK (never applied), with other
transactions in between, across replicator restarts (in process, and a SIGKILLed ``mybinlog replicate``), within a
memory budget of zero (every prepared part read again from the binlog). Each test compares the replica with the
source row by row (tests/compare.py).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mybinlog.clickhouse import Target, load_checkpoint
from mybinlog.protocol._gtid import parse_gtid_set
from mybinlog.replication import ReplicationSettings, Replicator
from tests.compare import assert_replica_equal
from tests.faults import _CHECKPOINT, STREAMING, ReplicateProcess, child_env, source_dsn, target_for
from tests.faults import execute as _sql
from tests.servers import MariaDBServer, MySQLServer

pytestmark = pytest.mark.integration

TABLES = ("CREATE TABLE t (id INT PRIMARY KEY, v INT, s VARCHAR(20))", "CREATE TABLE u (id INT PRIMARY KEY, w INT)")


@pytest.fixture(params=["chdb", "http"])
def target(request: pytest.FixtureRequest) -> Target:
    return request.getfixturevalue("chdb_target" if request.param == "chdb" else "ch_http")  # type: ignore[no-any-return]


@pytest.fixture
def xa_cleanup(server: MariaDBServer, db: str) -> Iterator[None]:
    """After the test (before ``db`` is dropped): roll back what a failed test left prepared (it holds row locks)."""
    yield
    for row in server.query("XA RECOVER"):
        gtrid_len, data = int(row[1]), bytes(row[3]) if not isinstance(row[3], str) else row[3].encode()
        server.execute(f"XA ROLLBACK X'{data[:gtrid_len].hex()}',X'{data[gtrid_len:].hex()}',{int(row[0])}")


def _target_url(target: Target, request: pytest.FixtureRequest) -> str:
    if getattr(target, "kind", "") == "chdb":
        return f"chdb://{target.path}"  # type: ignore[attr-defined]
    return str(request.getfixturevalue("clickhouse_server").url())


def _setup(server: MariaDBServer, db: str) -> None:
    """The tables, empty: the replicas start with ``initial_load="none"`` (a collapsing replica of MySQL cannot load
    existing rows, docs/replication.md), and :func:`_seed` writes the first rows through the binlog."""
    _sql(server, db, *TABLES)


def _seed(server: MariaDBServer, db: str) -> None:
    _sql(server, db, "INSERT INTO t VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')")
    _sql(server, db, "INSERT INTO u VALUES (1, 10), (2, 20)")


def _wait_caught_up(rep: ReplicateProcess, server: MariaDBServer) -> None:
    """Until a checkpoint covers every transaction ``server`` has logged until now (either flavour)."""
    flavor = "mysql" if isinstance(server, MySQLServer) else "mariadb"
    goal = parse_gtid_set(server.gtid_binlog_pos(), flavor)

    def covers(line: str) -> bool:
        m = _CHECKPOINT.search(line)
        return m is not None and parse_gtid_set(m.group(3), flavor).contains(goal)  # type: ignore[arg-type]

    rep.wait_for(covers)


def _prepare(server: MariaDBServer, db: str, xid: str, *statements: str) -> None:
    _sql(server, db, f"XA START {xid}", *statements, f"XA END {xid}", f"XA PREPARE {xid}")


def _replicator(server: MariaDBServer, target: Target, db: str, engine: str, **kw: Any) -> Replicator:
    settings = ReplicationSettings(engine=engine, max_flush_data_time=50, initial_load="none", **kw)
    return Replicator(server.repl_dsn, target, database=db, target_database=target.database, settings=settings)


async def _live(target: Target, table: str, engine: str) -> dict[int, tuple[Any, ...]]:
    alive = "_is_deleted = 0" if engine == "replacing_is_deleted" else "_sign = 1"
    rows = await target.query(f"SELECT * FROM `{target.database}`.`{table}` FINAL WHERE {alive} ORDER BY id")
    return {int(r[0]): tuple(r) for r in rows}


@pytest.mark.parametrize("engine", ["replacing", "collapsing"])
async def test_xa_rollback_commit_and_one_phase(
    server: MariaDBServer, db: str, target: Target, engine: str, request: pytest.FixtureRequest, xa_cleanup: None
) -> None:
    """Issue 22: XA START; INSERT 10; UPDATE 1; DELETE 2; XA END; XA PREPARE; ...; XA ROLLBACK left the insert,
    update and delete in ClickHouse. Also: a two-phase COMMIT applied at its COMMIT with other transactions between,
    one phase applied at once, and a prepared transaction still pending at the end (not applied) that a later run
    applies at its COMMIT (its rows read again from the binlog)."""
    _setup(server, db)
    await _replicator(server, target, db, engine).run(until_caught_up=True)  # the tables, empty
    _seed(server, db)
    _prepare(server, db, "'rb'", "INSERT INTO t VALUES (10, 10, 'x')", "UPDATE t SET v = 100 WHERE id = 1",
             "DELETE FROM t WHERE id = 2", "UPDATE u SET w = 11 WHERE id = 1")  # fmt: skip
    _sql(server, db, "INSERT INTO t VALUES (20, 20, 'other')")
    _prepare(server, db, "'cm','b',7", "INSERT INTO t VALUES (11, 11, 'y')", "UPDATE t SET s = 'c2' WHERE id = 3",
             "DELETE FROM u WHERE id = 2")  # fmt: skip
    _sql(server, db, "UPDATE t SET v = 21 WHERE id = 20")
    _sql(server, db, "XA ROLLBACK 'rb'")
    _sql(server, db, "INSERT INTO u VALUES (3, 30)")
    _sql(server, db, "XA COMMIT 'cm','b',7")
    _sql(server, db, "XA START 'op'", "INSERT INTO t VALUES (12, 12, 'z')", "XA END 'op'", "XA COMMIT 'op' ONE PHASE")
    _prepare(server, db, "'later'", "INSERT INTO t VALUES (13, 13, 'w')", "UPDATE t SET v = 99 WHERE id = 1")
    _sql(server, db, "INSERT INTO t VALUES (21, 21, 'after')")
    await _replicator(server, target, db, engine).run(until_caught_up=True)
    t = await _live(target, "t", engine)
    assert set(t) == {1, 2, 3, 11, 12, 20, 21}, t  # 10 rolled back, 13 still prepared
    assert int(t[1][1]) == 1  # the rolled-back and the prepared UPDATE are not there
    assert t[3][2] == "c2"
    cp = await load_checkpoint(target, db)
    assert cp is not None
    assert list(cp.xa) == ["X'6c61746572',X'',1"]  # the checkpoint moved past 'later' and remembers it
    await assert_replica_equal(server, db, _target_url(target, request), engine=engine, target_database=target.database)
    _sql(server, db, "INSERT INTO u VALUES (4, 40)", "XA COMMIT 'later'")
    repl = _replicator(server, target, db, engine)
    await repl.run(until_caught_up=True)
    t = await _live(target, "t", engine)
    assert 13 in t
    assert int(t[1][1]) == 99
    cp = await load_checkpoint(target, db)
    assert cp is not None
    assert cp.xa == {}
    await assert_replica_equal(server, db, _target_url(target, request), engine=engine, target_database=target.database)


async def test_xa_rows_beyond_the_memory_budget_are_read_again(
    server: MariaDBServer,
    db: str,
    chdb_target: Target,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
    xa_cleanup: None,
) -> None:
    """With max_bytes_of_prepared_xa=0 no prepared rows stay in memory: the COMMIT reads them again from the binlog,
    in the same run, also after a DDL on another table and a binlog rotation in between."""
    _setup(server, db)
    engine = "replacing"
    repl = _replicator(server, chdb_target, db, engine, max_bytes_of_prepared_xa=0)
    await repl.run(until_caught_up=True)
    _seed(server, db)
    _prepare(server, db, "'big'", *[f"INSERT INTO t VALUES ({100 + i}, {i}, 'row{i}')" for i in range(50)],
             "DELETE FROM t WHERE id = 1")  # fmt: skip
    _prepare(server, db, "'gone'", "INSERT INTO u VALUES (50, 50)", "DELETE FROM u WHERE id = 1")
    _sql(server, db, "FLUSH BINARY LOGS")
    _sql(server, db, "CREATE TABLE v (id INT PRIMARY KEY)", "INSERT INTO v VALUES (1)")
    _sql(server, db, "XA COMMIT 'big'", "XA ROLLBACK 'gone'")
    with caplog.at_level(logging.INFO, logger="mybinlog.replication"):
        await _replicator(server, chdb_target, db, engine, max_bytes_of_prepared_xa=0).run(until_caught_up=True)
    assert any("read the prepared XA transaction X'626967',X'',1 again" in r.getMessage() for r in caplog.records)
    assert len(await _live(chdb_target, "t", engine)) == 52
    await assert_replica_equal(server, db, _target_url(chdb_target, request), engine=engine,
                               target_database=chdb_target.database)  # fmt: skip


# -- mybinlog replicate SIGKILLed between XA PREPARE and XA COMMIT -----------------------------------------------------


@pytest.fixture(params=["chdb", "server"])
def target_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("engine", ["replacing", "collapsing"])
async def test_xa_across_sigkill_of_replicate(
    fresh_server: MariaDBServer, target_kind: str, engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``mybinlog replicate`` is SIGKILLed after its checkpoint has passed two prepared XA transactions; one is
    committed and one rolled back while it is down (with other transactions and a source restart in between), a
    third is committed while it runs again; the replica ends equal to the source, row by row."""
    server = fresh_server
    db = server.create_database("xa_kill")
    _setup(server, db)
    clickhouse = request.getfixturevalue("clickhouse_server") if target_kind == "server" else None
    url, env = target_for(target_kind, clickhouse, tmp_path / "chdb")
    tdb = f"xa_kill_{engine}_{secrets.token_hex(4)}"  # the session's ClickHouse server outlives this source
    args = (db, "--engine", engine, "--target-database", tdb, "--replica", tdb, "--initial-load", "none")
    env = child_env(**env)
    with ReplicateProcess(source_dsn(server), server.repl_password, url, *args, env=env) as rep:
        rep.wait_for(STREAMING)
        _seed(server, db)
        _prepare(server, db, "'k1'", "INSERT INTO t VALUES (10, 10, 'k1')", "UPDATE t SET v = 100 WHERE id = 1",
                 "DELETE FROM t WHERE id = 2")  # fmt: skip
        _sql(server, db, "INSERT INTO u VALUES (3, 30)")
        _prepare(server, db, "'k2'", "INSERT INTO t VALUES (11, 11, 'k2')", "DELETE FROM u WHERE id = 1")
        _sql(server, db, "UPDATE u SET w = 21 WHERE id = 2")
        _wait_caught_up(rep, server)  # a checkpoint covers both prepared parts and what follows them
        rep.kill()
    _sql(server, db, "INSERT INTO t VALUES (20, 20, 'down')")
    server.restart()  # a prepared XA transaction survives it
    _sql(server, db, "XA COMMIT 'k2'", "UPDATE t SET v = 22 WHERE id = 11", "XA ROLLBACK 'k1'")
    with ReplicateProcess(source_dsn(server), server.repl_password, url, *args, env=env) as rep:
        _wait_caught_up(rep, server)
        _prepare(server, db, "'k3'", "INSERT INTO t VALUES (12, 12, 'k3')")
        _sql(server, db, "INSERT INTO u VALUES (4, 40)", "XA COMMIT 'k3'")
        _wait_caught_up(rep, server)
        assert rep.stop() == 0
    target_url = clickhouse.url() if clickhouse is not None else url
    await assert_replica_equal(server, db, target_url, engine=engine, target_database=tdb)
    assert "read the prepared XA transaction X'6b32',X'',1 again" in rep.log  # after the restart, from the binlog
