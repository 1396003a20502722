"""``mybinlog verify`` against a real MariaDB or MySQL and a real ClickHouse (18.16 over HTTP, and chdb).

The replica is loaded directly (``create_table_sql`` + ``make_row_encoder`` + ``insert_tsv``) from a pymysql
``SELECT`` of the workload tables, so these tests check verify, not the replicator: first that a faithful copy is
equal (every column type, extremes, zero dates, NULLs; read through asyncmy on the source side), then that each
kind of damage is reported exactly.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from mybinlog.cli._verify import add_verify_arguments, run_verify
from mybinlog.clickhouse import Target, quote_table
from mybinlog.clickhouse._tables import create_table_sql, meta_columns
from mybinlog.clickhouse.types import make_row_encoder
from mybinlog.ddl import parse_create_table
from mybinlog.testing._clickhouse import CH_PASSWORD, ClickHouseServer
from mybinlog.verification import RowDifference, VerifyReport, fast_canonical, verify
from tests.servers import MariaDBServer
from tests.workload import Workload

ENGINE = "replacing"


@pytest.fixture(params=["http", "chdb"])
def target(request: pytest.FixtureRequest) -> Any:
    """The same test on both kinds of target (each with a fresh database)."""
    return request.getfixturevalue("ch_http" if request.param == "http" else "chdb_target")


def _select(conn: Any, db: str, table: str) -> tuple[str, list[tuple[Any, ...]]]:
    with conn.cursor() as cur:
        cur.execute(f"SHOW CREATE TABLE `{db}`.`{table}`")
        ddl = cur.fetchone()[1]
        # pymysql decodes a MySQL VECTOR field as text (and fails): its bytes instead
        columns = ", ".join(
            f"CAST(`{c.name}` AS BINARY) AS `{c.name}`" if c.type_name == "vector" else f"`{c.name}`"
            for c in parse_create_table(ddl, db).columns
        )
        cur.execute(f"SELECT {columns} FROM `{db}`.`{table}`")
        return ddl, list(cur.fetchall())


async def _copy_table(
    conn: Any, db: str, table: str, target: Target, *, engine: str = ENGINE, version: int = 1
) -> list[str]:
    """Create ``table`` in the replica and copy the MySQL rows into it; returns the column names."""
    ddl, rows = _select(conn, db, table)
    definition = parse_create_table(ddl, db)
    caps = target.capabilities
    assert target.database is not None
    await target.execute(create_table_sql(definition, database=target.database, engine=engine, caps=caps))
    await _insert(target, table, definition.columns, rows, engine=engine, version=version)
    return [c.name for c in definition.columns]


async def _insert(
    target: Target,
    table: str,
    columns: Any,
    rows: list[tuple[Any, ...]],
    *,
    engine: str = ENGINE,
    version: int = 1,
    deleted: bool = False,
) -> None:
    encode = make_row_encoder(columns, target.capabilities)
    meta_values = {"_sign": "-1" if deleted else "1", "_version": str(version), "_is_deleted": "1" if deleted else "0"}
    meta = "\t".join(meta_values[m] for m in meta_columns(engine))
    data = "".join(f"{encode(row)}\t{meta}\n" for row in rows).encode("utf-8", "surrogateescape")
    assert target.database is not None
    names = [c.name for c in columns] + list(meta_columns(engine))
    await target.insert_tsv(quote_table(target.database, table), names, data)


async def _replica_of_workload(server: MariaDBServer, db_conn: Any, db: str, target: Target) -> None:
    Workload(seed=5).run(db_conn, db, n_transactions=8, statements_per_txn=4, ddl_every=0)
    for table in ("all_types", "composite_pk", "no_pk"):
        await _copy_table(db_conn, db, table, target)


async def _verify(server: MariaDBServer, db: str, target: Target, **kw: Any) -> VerifyReport:
    assert target.database is not None
    return await verify(server.admin_dsn, target, databases=[db], target_database=target.database, **kw)


def _by_table(report: VerifyReport) -> dict[str, Any]:
    return {(t.source_table or t.replica_table).split(".", 1)[1]: t for t in report.tables}


async def test_faithful_replica_is_equal(server: MariaDBServer, db_conn: Any, db: str, target: Target) -> None:
    await _replica_of_workload(server, db_conn, db, target)
    report = await _verify(server, db, target)
    assert report.equal, report.render_text()
    tables = _by_table(report)
    assert set(tables) == {"all_types", "composite_pk", "no_pk"}
    for name, result in tables.items():
        with db_conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM `{db}`.`{name}`")
            assert result.source_rows == result.replica_rows == cur.fetchone()[0] > 0
        assert result.differences == []
    assert tables["all_types"].key == ("id",)
    assert tables["composite_pk"].key == ("tenant", "k", "seq")
    assert tables["no_pk"].key == ()
    assert report.exit_code == 0
    assert server.admin_password not in report.render_text() + report.to_json()


async def test_each_kind_of_damage_is_reported(server: MariaDBServer, db_conn: Any, db: str, target: Target) -> None:
    await _replica_of_workload(server, db_conn, db, target)
    assert target.database is not None
    ddl, rows = _select(db_conn, db, "composite_pk")
    columns = parse_create_table(ddl, db).columns
    names = [c.name for c in columns]
    amount = names.index("amount")
    by_key = sorted(rows, key=lambda r: (r[0], r[1], r[2]))
    changed, deleted, same = by_key[0], by_key[1], by_key[2]
    # a newer version with one value changed; a newer version that deletes; a newer identical version (FINAL
    # collapses it: no difference); a row MySQL does not have
    new_value = list(changed)
    new_value[amount] = None if changed[amount] is not None else 1
    await _insert(target, "composite_pk", columns, [tuple(new_value)], version=2)
    await _insert(target, "composite_pk", columns, [deleted], version=2, deleted=True)
    await _insert(target, "composite_pk", columns, [same], version=3)
    extra = list(same)
    extra[2] = 10**12
    await _insert(target, "composite_pk", columns, [tuple(extra)], version=2)
    # all_types: drop it in the replica; an extra table in the replica
    await target.execute(f"DROP TABLE {quote_table(target.database, 'all_types')}")
    await target.execute(
        f"CREATE TABLE {quote_table(target.database, 'stray')} (x UInt8) ENGINE = MergeTree ORDER BY x"
    )

    report = await _verify(server, db, target)
    tables = _by_table(report)
    assert tables["all_types"].status == "missing"
    assert tables["all_types"].source_rows > 0
    assert tables["stray"].status == "extra"
    assert tables["no_pk"].status == "equal"
    cpk = tables["composite_pk"]
    assert cpk.status == "different"
    assert (cpk.source_rows, cpk.replica_rows) == (len(rows), len(rows))  # one missing, one extra
    key = ("tenant", "k", "seq")

    def named(row: Any) -> tuple[tuple[str, str | None], ...]:
        return tuple(zip(key, (str(row[0]), str(row[1]), str(row[2])), strict=True))

    found = {(d.kind, d.key): d for d in cpk.differences}
    assert set(found) == {("changed", named(changed)), ("missing", named(deleted)), ("extra", named(extra))}
    (col,) = found[("changed", named(changed))].columns
    assert col.column == "amount"
    assert (col.source is None) != (col.replica is None)
    assert cpk.complete
    assert report.exit_code == 1
    text = report.render_text()
    assert "MISSING" in text
    assert "EXTRA" in text
    assert "amount: source" in text


async def test_a_change_in_any_column_type_is_found(
    server: MariaDBServer, db_conn: Any, db: str, target: Target
) -> None:
    await _replica_of_workload(server, db_conn, db, target)
    ddl, rows = _select(db_conn, db, "all_types")
    columns = parse_create_table(ddl, db).columns
    caps = target.capabilities
    rows.sort(key=lambda r: r[0])
    changed: dict[int, tuple[Any, ...]] = {}
    expected: dict[str, set[str]] = {}
    for j, col in enumerate(columns):
        if col.name in ("id", "rev"):
            continue
        canon = fast_canonical(col, caps, side="source")
        i = j % len(rows)
        base = changed.get(i, rows[i])
        donor = next((r for r in rows if canon(r[j]) != canon(base[j])), None)
        if donor is None:
            continue
        changed[i] = (*base[:j], donor[j], *base[j + 1 :])
        expected.setdefault(str(rows[i][0]), set()).add(col.name)
    assert sum(len(names) for names in expected.values()) >= 50  # nearly every typed column
    await _insert(target, "all_types", columns, list(changed.values()), version=2)
    report = await _verify(server, db, target, max_differences=len(rows))
    result = _by_table(report)["all_types"]
    assert result.status == "different"
    assert result.complete
    found = {d.key[0][1]: {c.column for c in d.columns} for d in result.differences}
    assert {d.kind for d in result.differences} == {"changed"}
    assert found == expected


async def test_duplicates_after_final_and_schema_drift(
    server: MariaDBServer, db_conn: Any, db: str, target: Target
) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), gone INT)")
        cur.execute("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, NULL, 3)")
    assert target.database is not None
    # a replica table with a plain MergeTree engine (no FINAL collapsing): a re-inserted row stays twice; and
    # the column `gone` was never added to it
    await target.execute(
        f"CREATE TABLE {quote_table(target.database, 't')} (id Int32, v Nullable(String), _sign Int8, "
        "_version UInt64) ENGINE = MergeTree ORDER BY id"
    )
    tsv = b"1\ta\t1\t1\n2\tb\t1\t1\n3\t\\N\t1\t1\n2\tb\t1\t2\n"
    await target.insert_tsv(quote_table(target.database, "t"), ["id", "v", "_sign", "_version"], tsv)
    report = await _verify(server, db, target)
    (t,) = report.tables
    assert t.status == "different"
    assert t.schema == ["column `gone` is missing in the replica"]
    assert t.replica_duplicates == 1
    assert t.differences == [RowDifference("duplicate", (("id", "2"),), count=2)]


async def test_collapsing_engine_and_slices(server: MariaDBServer, db_conn: Any, db: str, target: Target) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE big (id BIGINT UNSIGNED PRIMARY KEY, d DOUBLE, s VARCHAR(30), ts DATETIME(3))")
        # both stop a recursive CTE at 1000 rows by default
        limit = "max_recursive_iterations" if server.flavor == "mariadb" else "cte_max_recursion_depth"
        cur.execute(f"SET SESSION {limit} = 3000")
        cur.execute(  # 1..3000 (MariaDB's seq_1_to_3000 table is its own engine: a recursive CTE runs on both)
            "INSERT INTO big WITH RECURSIVE s (seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s WHERE seq < 3000) "
            "SELECT seq, seq / 7, CONCAT('row ', seq), '2024-01-02 03:04:05.678' + INTERVAL seq SECOND FROM s"
        )
    await _copy_table(db_conn, db, "big", target, engine="collapsing")
    _, rows = _select(db_conn, db, "big")
    definition = parse_create_table(_select(db_conn, db, "big")[0], db)
    row_7 = next(r for r in rows if r[0] == 7)
    # cancel row 7 (collapsing: a -1 row with the same values)
    await _insert(target, "big", definition.columns, [row_7], engine="collapsing", deleted=True)
    report = await _verify(server, db, target, page_rows=700, max_differences=5)
    (big,) = report.tables
    assert big.status == "different"
    assert (big.source_rows, big.replica_rows) == (3000, 2999)
    assert big.differences == [RowDifference("missing", (("id", "7"),))]
    # put it back: equal again (engine detected from the table: CollapsingMergeTree)
    await _insert(target, "big", definition.columns, [row_7], engine="collapsing", version=2)
    report = await _verify(server, db, target, page_rows=700)
    assert report.equal, report.render_text()


async def test_cli_json_output_and_exit_codes(
    server: MariaDBServer,
    db_conn: Any,
    db: str,
    clickhouse_server: ClickHouseServer,
    ch_http: Target,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v DECIMAL(10,2))")
        cur.execute("INSERT INTO t VALUES (1, 1.50), (2, NULL)")
    await _copy_table(db_conn, db, "t", ch_http)
    assert ch_http.database is not None
    parser = argparse.ArgumentParser()
    add_verify_arguments(parser)
    url = clickhouse_server.url()
    argv = ["--source", server.admin_dsn, "-d", db, "--target", url, "--target-database", ch_http.database]
    assert await run_verify(parser.parse_args([*argv, "--format", "json"])) == 0
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert data["equal"] is True
    assert data["tables"][0]["source_rows"] == 2
    await ch_http.execute(
        f"INSERT INTO {quote_table(ch_http.database, 't')} (id, v, _sign, _version) VALUES (2, 3.25, 1, 9)"
    )
    assert await run_verify(parser.parse_args(argv)) == 1
    out, _ = capsys.readouterr()
    assert "v: source NULL, replica '3.25'" in out
    assert CH_PASSWORD not in out
    assert server.admin_password not in out
    bad_url = url.replace(CH_PASSWORD, "wrongpw7")
    assert await run_verify(parser.parse_args(["--source", server.admin_dsn, "-d", db, "--target", bad_url])) == 2
    out, err = capsys.readouterr()
    assert "authentication failed" in err
    assert "wrongpw7" not in out + err
