"""Values that reach the replica on two paths (the initial load's ``SELECT`` and the binlog) must arrive the same way,
and ``verify`` must read them: MySQL 9's VECTOR (read by asyncmy only when cast to binary; -0.0, NULL, several
dimensions) and JSON ``null`` documents (top-level and nested, in keyed and key-less tables, on both servers).

Each test loads some rows (initial load), changes them through the binlog (inserts, updates, deletes), and checks
the replica three ways: ``verify`` reports it equal, every source row equals its replica row under the canonical
forms of docs/types.md (the source read with :func:`select_expression`), and the stored values themselves (``-0``,
``[]`` for a NULL vector, NULL for a JSON null document in a nullable column, the text ``null`` in a NOT NULL one).
Targets: embedded chdb and the ClickHouse 18.16 server.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from mybinlog.clickhouse import Target, quote_ident
from mybinlog.clickhouse._tables import alive_predicate
from mybinlog.clickhouse.types import canonical, select_expression, values_match
from mybinlog.ddl import parse_create_table
from mybinlog.replication import ReplicationSettings, Replicator
from mybinlog.verification import verify
from tests.faults import execute as _execute
from tests.live import spark as spark
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration


@pytest.fixture(params=["chdb", "http"])
def target(request: pytest.FixtureRequest) -> Target:
    return request.getfixturevalue("chdb_target" if request.param == "chdb" else "ch_http")  # type: ignore[no-any-return]


async def _replicate(server: MariaDBServer, target: Target, db: str) -> Replicator:
    settings = ReplicationSettings(max_flush_data_time=50)
    repl = Replicator(server.repl_dsn, target, database=db, target_database=target.database, settings=settings)
    await repl.run(until_caught_up=True)
    return repl


async def _assert_equal(server: MariaDBServer, target: Target, db: str, tables: list[str]) -> None:
    """verify says equal, and every source row is among the replica's live rows (and nothing else is)."""
    tdb = str(target.database or db)
    report = await verify(server.repl_dsn, target, databases=[db], target_database=tdb)
    assert report.equal, report.render_text()
    caps = target.capabilities
    conn = server.connect(database=db)
    try:
        for table in tables:
            with conn.cursor() as cur:
                cur.execute(f"SHOW CREATE TABLE `{db}`.`{table}`")
                columns = parse_create_table(cur.fetchone()[1], db).columns
                cur.execute(f"SELECT {', '.join(select_expression(c) for c in columns)} FROM `{db}`.`{table}`")
                source_rows = list(cur.fetchall())
            names = ", ".join(quote_ident(c.name) for c in columns)
            replica_rows = await target.query(
                f"SELECT {names} FROM {quote_ident(tdb)}.{quote_ident(table)} FINAL "
                f"WHERE {alive_predicate('replacing')}"
            )
            src = [canonical(c, caps, side="source") for c in columns]
            dst = [canonical(c, caps, side="clickhouse") for c in columns]
            match = [values_match(c, caps) for c in columns]
            want = Counter(tuple(f(v) for f, v in zip(src, row, strict=True)) for row in source_rows)
            have = Counter(tuple(f(v) for f, v in zip(dst, row, strict=True)) for row in replica_rows)
            missing, extra = want - have, have - want
            for row in list(missing.elements()):  # float digits within the documented tolerance (18.16)
                for other in list(extra.elements()):
                    if all(m(a, b) for m, a, b in zip(match, row, other, strict=True)):
                        missing[row] -= 1
                        extra[other] -= 1
                        break
            assert not +missing, f"{table}: source rows missing in the replica {list(+missing)}, extra {list(+extra)}"
            assert not +extra, f"{table}: replica rows not in the source {list(+extra)}"
    finally:
        conn.close()


async def _stored(
    target: Target, table: str, columns: str, where: str = "1", *, tdb: str = ""
) -> list[list[str | None]]:
    return await target.query(
        f"SELECT {columns} FROM {quote_ident(tdb or str(target.database))}.{quote_ident(table)} FINAL "
        f"WHERE {alive_predicate('replacing')} AND {where} ORDER BY tuple({columns})"
    )


def _vec(*xs: float | str) -> str:
    return "STRING_TO_VECTOR('[" + ",".join(str(x) for x in xs) + "]')"


BIG = [i / 8 - 1 for i in range(16)]  # 16 dimensions: -1 .. 0.875


VECTOR_SETUP = (
    "CREATE TABLE vec (id INT PRIMARY KEY, v VECTOR(3), w VECTOR(1) NOT NULL, big VECTOR(16), c VARCHAR(10))",
    "CREATE TABLE vec_nokey (v VECTOR(2), n INT)",
    f"INSERT INTO vec VALUES (1, {_vec(1, '-0', 2.5)}, {_vec('-0')}, {_vec(*BIG)}, 'a'),"
    f" (2, NULL, {_vec(0)}, NULL, 'b'),"
    f" (3, {_vec('3.4e38', '-1.1754944e-38', 0.1)}, {_vec(7)}, {_vec(*reversed(BIG))}, 'c')",
    f"INSERT INTO vec_nokey VALUES ({_vec('-0', 1)}, 1), (NULL, 2), ({_vec(0.1, 0.2)}, 3)",
)
VECTOR_CHANGES = (
    f"INSERT INTO vec VALUES (4, {_vec('-0', '-0', '-0')}, {_vec(-1.5)}, {_vec(*BIG)}, 'd')",
    f"UPDATE vec SET v = {_vec('-0', 1, 2)} WHERE id = 2",
    "UPDATE vec SET v = NULL, c = 'a2' WHERE id = 1",
    "DELETE FROM vec WHERE id = 3",
    "UPDATE vec_nokey SET n = 11 WHERE n = 1",  # a loaded row: the before image must find it
    "DELETE FROM vec_nokey WHERE n = 3",
    f"INSERT INTO vec_nokey VALUES ({_vec('-0', '-0')}, 4)",
)
VECTOR_LOADED = [["1", "[1,-0,2.5]", "[-0]"], ["2", "[]", "[0]"], ["3", "[3.4e+38,-1.175494e-38,0.1]", "[7]"]]
VECTOR_AFTER = [["1", "[]", "[-0]"], ["2", "[-0,1,2]", "[0]"], ["4", "[-0,-0,-0]", "[-1.5]"]]
VECTOR_NOKEY_AFTER = [["2", "[]"], ["4", "[-0,-0]"], ["11", "[-0,1]"]]

JSON_SETUP = (
    "CREATE TABLE docs (id INT PRIMARY KEY, j JSON, k JSON NOT NULL)",
    "CREATE TABLE docs_nokey (j JSON, n INT)",
    "INSERT INTO docs VALUES (1, 'null', 'null'), (2, NULL, '{\"a\": null}'), (3, '[null, 1]', 'null'),"
    " (4, '{\"a\": [null]}', '{}')",
    "INSERT INTO docs_nokey VALUES ('null', 1), (NULL, 2), ('[null]', 3), ('null', 6)",
)
JSON_CHANGES = (
    "INSERT INTO docs VALUES (5, 'null', 'null')",
    "UPDATE docs SET j = 'null' WHERE id = 2",
    "UPDATE docs SET j = '{\"b\": null}', k = 'null' WHERE id = 4",
    "UPDATE docs_nokey SET n = 11 WHERE n = 1",  # before: missed the loaded copy, which stayed alive
    "DELETE FROM docs_nokey WHERE n = 6",
    "INSERT INTO docs_nokey VALUES ('null', 5)",
)
# a JSON null document is NULL in a nullable column, the text `null` in a NOT NULL one (docs/types.md, JSON)
JSON_AFTER = [
    ["1", None, "null"],
    ["2", None, '{"a": null}'],
    ["3", "[null, 1]", "null"],
    ["4", '{"b": null}', "null"],
    ["5", None, "null"],
]
JSON_NOKEY_AFTER = [["2", None], ["3", "[null]"], ["5", None], ["11", None]]


@pytest.mark.servers("mysql")
async def test_vector_through_load_stream_and_verify(server: MariaDBServer, db: str, target: Target) -> None:
    _execute(server, db, *VECTOR_SETUP)
    await _replicate(server, target, db)  # the initial load (before: UnicodeDecodeError from asyncmy)
    stored = await _stored(target, "vec", "id, v, w")
    assert stored[:2] == VECTOR_LOADED[:2], stored  # the load keeps -0.0; a NULL vector is []
    await _assert_equal(server, target, db, ["vec", "vec_nokey"])  # before: verify died with a traceback
    _execute(server, db, *VECTOR_CHANGES)
    await _replicate(server, target, db)  # streamed (before: the binlog wrote 0 for -0.0)
    assert await _stored(target, "vec", "id, v, w") == VECTOR_AFTER
    assert await _stored(target, "vec_nokey", "n, v") == VECTOR_NOKEY_AFTER
    await _assert_equal(server, target, db, ["vec", "vec_nokey"])


async def test_json_null_documents_are_the_same_on_both_paths(server: MariaDBServer, db: str, target: Target) -> None:
    _execute(server, db, *JSON_SETUP)
    await _replicate(server, target, db)  # the initial load (before: the text `null`, where the binlog gives NULL)
    _execute(server, db, *JSON_CHANGES)
    await _replicate(server, target, db)
    assert await _stored(target, "docs", "id, j, k") == JSON_AFTER
    assert await _stored(target, "docs_nokey", "n, j") == JSON_NOKEY_AFTER
    await _assert_equal(server, target, db, ["docs", "docs_nokey"])


@pytest.mark.servers("mysql")
@pytest.mark.timeout(600)
async def test_snapshot_reads_vectors_and_json_nulls_as_the_binlog_does(
    spark: Any, server: MariaDBServer, db: str, clickhouse_server: Any
) -> None:
    """The Spark snapshot (executors read the source with SELECT) into the 18.16 server, then streaming."""
    from mybinlog.clickhouse import open_target
    from mybinlog.snapshot import SnapshotOptions, run_snapshot

    _execute(server, db, *VECTOR_SETUP, *JSON_SETUP)
    url = clickhouse_server.url()
    result = await run_snapshot(SnapshotOptions(source=server.repl_dsn, target=url, database=db), spark=spark)
    assert result.rows == 3 + 3 + 4 + 4  # before: the executors failed with UnicodeDecodeError
    target = await open_target(url)
    try:
        loaded = await _stored(target, "vec", "id, v, w", tdb=db)
        assert loaded[:2] == VECTOR_LOADED[:2], loaded
        _execute(server, db, *VECTOR_CHANGES, *JSON_CHANGES)
        await Replicator(server.repl_dsn, target, database=db).run(until_caught_up=True)
        assert await _stored(target, "vec", "id, v, w", tdb=db) == VECTOR_AFTER
        assert await _stored(target, "vec_nokey", "n, v", tdb=db) == VECTOR_NOKEY_AFTER
        assert await _stored(target, "docs", "id, j, k", tdb=db) == JSON_AFTER
        assert await _stored(target, "docs_nokey", "n, j", tdb=db) == JSON_NOKEY_AFTER
        await _assert_equal(server, target, db, ["vec", "vec_nokey", "docs", "docs_nokey"])
    finally:
        await target.execute(f"DROP DATABASE IF EXISTS {quote_ident(db)}")
        await target.aclose()
