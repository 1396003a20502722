"""Replication into real ClickHouse (the 18.16 server over HTTP and embedded chdb) from a real MariaDB and MySQL.

Every scenario ends with :func:`mybinlog.replication.verify` (row counts, checksums over all columns,
duplicates through FINAL) reporting equality, plus an independent count query.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from mybinlog.clickhouse import Target, load_checkpoint, quote_ident
from mybinlog.clickhouse._tables import alive_predicate
from mybinlog.errors import ConfigurationError
from mybinlog.replication import ReplicationSettings, Replicator
from mybinlog.sharing import BinlogClient
from mybinlog.verification import verify
from tests.servers import MariaDBServer
from tests.workload import Workload

pytestmark = pytest.mark.integration


@pytest.fixture(params=["chdb", "http"])
def target(request: pytest.FixtureRequest) -> Target:
    return request.getfixturevalue("chdb_target" if request.param == "chdb" else "ch_http")  # type: ignore[no-any-return]


async def _check_equal(server: MariaDBServer, target: Target, db: str, engine: str, tables: Sequence[str]) -> None:
    report = await verify(server.repl_dsn, target, databases=[db], target_database=target.database, engine=engine)
    assert report.equal, report.render_text()
    for table in tables:  # an independent look: live rows through FINAL equal the source's count
        rows = await target.query(
            f"SELECT count() FROM {quote_ident(target.database)}.{quote_ident(table)} FINAL "
            f"WHERE {alive_predicate(engine)}"
        )
        assert int(rows[0][0] or 0) == server.query_value(f"SELECT count(*) FROM `{db}`.`{table}`")


def _replicator(server: MariaDBServer, target: Target, db: str, engine: str = "replacing", **kw: Any) -> Replicator:
    settings = ReplicationSettings(engine=engine, max_flush_data_time=50, **kw)
    return Replicator(server.repl_dsn, target, database=db, target_database=target.database, settings=settings)


@pytest.mark.parametrize("engine", ["replacing", "collapsing", "replacing_is_deleted"])
async def test_workload_with_ddl_replicates_exactly(
    server: MariaDBServer, db: str, target: Target, engine: str
) -> None:
    if engine == "replacing_is_deleted" and not target.capabilities.replacing_is_deleted:
        with pytest.raises(ConfigurationError, match="is_deleted"):
            await _replicator(server, target, db, engine).run(until_caught_up=True)
        return
    conn = server.connect(database=db)
    wl = Workload(7)
    wl.run(conn, db, n_transactions=8, statements_per_txn=4, ddl_every=0)  # initial load copies these
    first = _replicator(server, target, db, engine)
    await first.run(until_caught_up=True)
    assert first.status.rows_written > 0
    wl.run(conn, db, n_transactions=30, statements_per_txn=4, ddl_every=6)  # streamed, with ALTERs in between
    second = _replicator(server, target, db, engine, max_rows_in_buffer=50)
    await second.run(until_caught_up=True)
    conn.close()
    assert second.status.ddl_applied >= 4
    assert second.status.batches > 1
    await _check_equal(server, target, db, engine, ["all_types", "composite_pk", "no_pk"])
    cp = await load_checkpoint(target, db)
    assert cp is not None
    assert cp.pending is None
    assert set(cp.tables) == {"all_types", "composite_pk", "no_pk"}


class CrashingTarget:
    """The real target, except that the n-th insert into a user table raises (a crash in mid-batch)."""

    def __init__(self, inner: Target, fail_at: int) -> None:
        self.inner = inner
        self.fail_at = fail_at
        self.inserts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def insert_tsv(self, table: str, columns: Sequence[str], data: bytes, **kw: Any) -> None:
        if "mybinlog_meta" not in table:
            self.inserts += 1
            if self.inserts == self.fail_at:
                raise RuntimeError("simulated crash in the middle of a batch")
        await self.inner.insert_tsv(table, columns, data, **kw)


@pytest.mark.parametrize("engine", ["replacing", "collapsing"])
async def test_crash_in_mid_batch_replays_exactly(server: MariaDBServer, db: str, target: Target, engine: str) -> None:
    """A batch half inserted (one table written, the next insert fails) is replayed without duplicates.

    Collapsing tables rely on deduplication tokens (chdb) or on deleting the unconfirmed tail (18.16)."""
    conn = server.connect(database=db)
    wl = Workload(3)
    wl.run(conn, db, n_transactions=3, statements_per_txn=3, ddl_every=0)
    await _replicator(server, target, db, engine).run(until_caught_up=True)
    wl.run(conn, db, n_transactions=12, statements_per_txn=5, ddl_every=0, insert_extremes=False)
    crashing = CrashingTarget(target, fail_at=2)
    repl = Replicator(
        server.repl_dsn,
        crashing,  # type: ignore[arg-type]
        database=db,
        target_database=target.database,
        settings=ReplicationSettings(engine=engine, max_flush_data_time=60_000, max_rows_in_buffer=100_000),
    )
    with pytest.raises(RuntimeError, match="simulated crash"):
        await repl.run(until_caught_up=True)
    assert repl.client is not None
    await repl.client.aclose()
    cp = await load_checkpoint(target, db)
    assert cp is not None
    if engine == "collapsing":
        assert cp.pending is not None  # the batch was announced before its first insert
    await _replicator(server, target, db, engine).run(until_caught_up=True)
    conn.close()
    await _check_equal(server, target, db, engine, ["all_types", "composite_pk", "no_pk"])


async def test_two_replicas_share_one_connection(server: MariaDBServer, chdb_target: Target) -> None:
    # replica names are the source databases': one per flavour (both flavours share the session's chdb directory)
    dbs = [f"share_a_{server.flavor}", f"share_b_{server.flavor}"]
    for name in dbs:
        server.create_database(name)
    try:
        client = BinlogClient(server.repl_dsn, max_flush_milliseconds_in_binlog_dispatcher=10)
        conns = {name: server.connect(database=name) for name in dbs}
        workloads = {name: Workload(i) for i, name in enumerate(dbs)}
        for name in dbs:
            workloads[name].run(conns[name], name, n_transactions=3, statements_per_txn=2, ddl_every=0)
        replicas = [
            Replicator(
                server.repl_dsn,
                chdb_target,
                database=name,
                target_database=f"{chdb_target.database}_{name}",
                settings=ReplicationSettings(max_flush_data_time=20),
                client=client,
            )
            for name in dbs
        ]
        tasks = [asyncio.create_task(r.run()) for r in replicas]
        # both stream: wait until each has its consumer on the client, then check they share one dispatcher
        await _until(lambda: len(client.status()) == 2 or any(t.done() for t in tasks))
        for name in dbs:
            workloads[name].run(conns[name], name, n_transactions=10, statements_per_txn=3, ddl_every=4)
        await _until(lambda: len({row["dispatcher_name"] for row in client.status()}) == 1)
        rows = client.status()
        assert {row["name"] for row in rows} == set(dbs)
        assert len({row["dispatcher_name"] for row in rows}) == 1
        assert "repl-pw" not in repr(rows)
        assert server.repl_password not in repr(rows)
        for r in replicas:
            r.stop()
        await asyncio.gather(*tasks)
        for r in replicas:  # stop() flushed only complete transactions; finish with a catch-up run
            await Replicator(
                server.repl_dsn,
                chdb_target,
                database=r.database,
                target_database=r.target_database,
                settings=ReplicationSettings(max_flush_data_time=20),
                client=client,
            ).run(until_caught_up=True)
        await client.aclose()
        for name in dbs:
            report = await verify(
                server.repl_dsn, chdb_target, databases=[name], target_database=f"{chdb_target.database}_{name}"
            )
            assert report.equal, report.render_text()
        for c in conns.values():
            c.close()
    finally:
        for name in dbs:
            server.drop_database(name)


class GatedTarget:
    """The real target whose inserts into user tables wait for ``gate`` (a replica that cannot keep up)."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.blocked = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def insert_tsv(self, table: str, columns: Sequence[str], data: bytes, **kw: Any) -> None:
        if "mybinlog_meta" not in table and not self.gate.is_set():
            self.blocked.set()
            await self.gate.wait()
        await self.inner.insert_tsv(table, columns, data, **kw)


async def test_slow_replica_is_detached_catches_up_and_merges_back(
    server: MariaDBServer, db: str, chdb_target: Target
) -> None:
    conn = server.connect(database=db)
    wl = Workload(5, tables=("composite_pk",))
    wl.run(conn, db, n_transactions=2, statements_per_txn=2, ddl_every=0)
    client = BinlogClient(server.repl_dsn, max_bytes_in_binlog_dispatcher_buffer=0)
    # a fast replica of another database keeps the shared dispatcher running
    other = f"slowtest_other_{server.flavor}"  # its replica name: the session's chdb directory is shared
    server.create_database(other)
    try:
        fast = Replicator(
            server.repl_dsn,
            chdb_target,
            database=other,
            target_database=f"{chdb_target.database}_fast",
            settings=ReplicationSettings(max_flush_data_time=20),
            client=client,
        )
        gated = GatedTarget(chdb_target)
        slow = Replicator(
            server.repl_dsn,
            gated,  # type: ignore[arg-type]
            database=db,
            target_database=chdb_target.database,
            settings=ReplicationSettings(
                max_flush_data_time=20,
                max_rows_in_buffer=1,
                max_bytes_in_binlog_queue=1,
                max_milliseconds_to_wait_in_binlog_queue=0,
            ),
            client=client,
        )
        fast_task = asyncio.create_task(fast.run())
        await _until(lambda: len(client.status()) == 1 or fast_task.done())
        gated.gate.set()  # let the initial load through
        slow_task = asyncio.create_task(slow.run())
        await _until(lambda: slow.status.state == "streaming" or slow_task.done())
        gated.gate.clear()
        wl.run(conn, db, n_transactions=20, statements_per_txn=3, ddl_every=0)
        await asyncio.wait_for(gated.blocked.wait(), 60)
        await _until(
            lambda: (slow.binlog is not None and slow.binlog.detached) or slow_task.done(),
            what="the slow replica to be detached",
        )
        assert not slow_task.done()
        gated.gate.set()
        wl.run(conn, db, n_transactions=5, statements_per_txn=2, ddl_every=0)
        await _until(
            lambda: len(client.status()) == 2 and len({r["dispatcher_name"] for r in client.status()}) == 1,
            what="the catch-up dispatcher to merge into the leader",
        )
        assert slow.status.detaches >= 1
        slow.stop()
        fast.stop()
        await asyncio.gather(slow_task, fast_task)
        await Replicator(
            server.repl_dsn,
            chdb_target,
            database=db,
            target_database=chdb_target.database,
            settings=ReplicationSettings(max_flush_data_time=20),
            client=client,
        ).run(until_caught_up=True)
        await client.aclose()
        report = await verify(server.repl_dsn, chdb_target, databases=[db], target_database=chdb_target.database)
        assert report.equal, report.render_text()
    finally:
        conn.close()
        server.drop_database(other)


async def test_untranslatable_ddl_stops_only_that_table(server: MariaDBServer, db: str, target: Target) -> None:
    conn = server.connect(database=db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute("INSERT INTO a VALUES (1, 'x')")
        cur.execute("INSERT INTO b VALUES (1, 'x')")
    await _replicator(server, target, db).run(until_caught_up=True)
    with conn.cursor() as cur:
        cur.execute("ALTER TABLE a MODIFY id BIGINT NOT NULL")  # a key column changes type: cannot follow
        cur.execute("INSERT INTO a VALUES (2, 'y')")
        cur.execute("INSERT INTO b VALUES (2, 'y')")
    conn.close()
    repl = _replicator(server, target, db)
    await repl.run(until_caught_up=True)
    assert set(repl.status.stopped_tables) == {"a"}
    message = repl.status.stopped_tables["a"]
    assert "ALTER TABLE a MODIFY id BIGINT NOT NULL" in message
    assert "stopped" in message
    assert server.repl_password not in message
    rows = await target.query(f"SELECT count() FROM {quote_ident(target.database)}.b FINAL WHERE _sign = 1")
    assert rows == [["2"]]
    rows = await target.query(f"SELECT count() FROM {quote_ident(target.database)}.a FINAL WHERE _sign = 1")
    assert rows == [["1"]]  # kept up to the statement, not diverging silently
    cp = await load_checkpoint(target, db)
    assert cp is not None
    assert "a" in cp.stopped
    assert "a" not in cp.tables


async def _until(predicate: Any, limit_s: float = 60.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)  # polling a condition with a deadline


async def test_ddl_statements_are_followed(server: MariaDBServer, db: str, target: Target) -> None:
    """CREATE ... LIKE, CHANGE/MODIFY/RENAME COLUMN, index changes, RENAME TABLE, TRUNCATE and DROP, mid-stream."""
    conn = server.connect(database=db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE base (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, n INT DEFAULT 5)")
        cur.execute("INSERT INTO base VALUES (1, 'a', 1), (2, 'b', 2)")
    await _replicator(server, target, db).run(until_caught_up=True)
    rename_column = target.capabilities.rename_column
    statements = [
        "CREATE TABLE copy LIKE base",
        "INSERT INTO copy VALUES (10, 'x', 10), (11, 'y', 11)",
        "ALTER TABLE base ADD COLUMN note TEXT AFTER name, ADD INDEX by_name (name)",
        "INSERT INTO base VALUES (3, 'c', 'third', 3)",
        "ALTER TABLE base MODIFY name VARCHAR(40) NOT NULL",
        "ALTER TABLE base CHANGE n amount BIGINT" if rename_column else "ALTER TABLE base MODIFY n BIGINT",
        "UPDATE base SET note = 'upd' WHERE id = 1",
        "ALTER TABLE base DROP INDEX by_name",
        "RENAME TABLE copy TO copy2",
        "INSERT INTO copy2 VALUES (12, 'z', 12)",
        "CREATE TABLE gone (id INT PRIMARY KEY)",
        "INSERT INTO gone VALUES (1)",
        "DROP TABLE gone",
        "CREATE TABLE emptied (id INT PRIMARY KEY, v INT)",
        "INSERT INTO emptied VALUES (1, 1), (2, 2)",
        "TRUNCATE TABLE emptied",
        "INSERT INTO emptied VALUES (3, 3)",
        "DELETE FROM base WHERE id = 2",
    ]
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)
    conn.close()
    repl = _replicator(server, target, db)
    await repl.run(until_caught_up=True)
    assert repl.status.stopped_tables == {}
    await _check_equal(server, target, db, "replacing", ["base", "copy2", "emptied"])
    rows = await target.query(f"SELECT name FROM system.tables WHERE database = '{target.database}' ORDER BY name")
    assert [r[0] for r in rows] == ["base", "copy2", "emptied"]
    cp = await load_checkpoint(target, db)
    assert cp is not None
    assert sorted(cp.tables) == ["base", "copy2", "emptied"]


async def test_the_initial_load_parses_each_schema_once(
    mariadb: MariaDBServer, chdb_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tables an initial load made are streamed with as they are: each CREATE TABLE text is parsed once (issue
    24: 2,000 tables were parsed, and their encoders generated, a second time after the load). MariaDB only: the
    load's bookkeeping does not depend on the source."""
    server = mariadb
    import mybinlog.ddl as ddl

    db = f"parse_once_{server.flavor}"
    server.create_database(db)
    for i in range(3):
        server.execute(f"CREATE TABLE `{db}`.t{i} (id INT PRIMARY KEY, v VARCHAR(8))")
        server.execute(f"INSERT INTO `{db}`.t{i} VALUES (1, 'a'), (2, 'b')")
    parsed: list[str] = []
    real = ddl.parse_create_table

    def counting(sql: str, default_schema: str, **kw: Any) -> Any:
        parsed.append(sql)
        return real(sql, default_schema, **kw)

    monkeypatch.setattr(ddl, "parse_create_table", counting)
    await _replicator(server, chdb_target, db).run(until_caught_up=True)
    assert len(parsed) == 3, f"{len(parsed)} parses of 3 CREATE TABLE texts"
    await _check_equal(server, chdb_target, db, "replacing", ["t0", "t1", "t2"])
