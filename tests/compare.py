"""Row-by-row comparison of a MariaDB database with its ClickHouse replica, for the fault tests.

``mybinlog verify`` compares checksums; these tests look at the rows themselves, independently of it: every row of
every source table (read with pymysql, in one consistent-snapshot transaction) must appear exactly once among the
replica's live rows (``FINAL`` with the engine's alive predicate), and the replica must hold nothing else. Values are
brought to one comparable text per column with the type mapping's canonical forms (mybinlog/clickhouse/types/,
the rules docs/types.md writes down: zero dates, clamped ranges, float digits); FLOAT/DOUBLE match within the
tolerance the mapping documents for old ClickHouse servers. For collapsing tables the sums of ``_sign`` are checked
too: a duplicated or lost ``-1`` row shows there even when FINAL hides it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.servers import MariaDBServer


def _alive(engine: str) -> str:
    return "_is_deleted = 0" if engine == "replacing_is_deleted" else "_sign = 1"


def _source_tables(server: MariaDBServer, db: str) -> dict[str, tuple[str, list[tuple[Any, ...]]]]:
    """table -> (SHOW CREATE TABLE text, rows), all read in one consistent snapshot."""
    from mybinlog.clickhouse.types import select_expression
    from mybinlog.ddl import parse_create_table

    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute(f"SHOW FULL TABLES FROM `{db}` WHERE Table_type = 'BASE TABLE'")
            names = sorted(str(r[0]) for r in cur.fetchall())
            out = {}
            for name in names:
                cur.execute(f"SHOW CREATE TABLE `{db}`.`{name}`")
                create = str(cur.fetchone()[1])
                # VECTOR as its bytes (pymysql cannot decode a VECTOR field), as mybinlog's own reads do
                columns = parse_create_table(create, db).columns
                cur.execute(f"SELECT {', '.join(select_expression(c) for c in columns)} FROM `{db}`.`{name}`")
                out[name] = (create, list(cur.fetchall()))
            cur.execute("COMMIT")
            return out
    finally:
        conn.close()


async def assert_replica_equal(
    server: MariaDBServer, db: str, target_url: str, *, engine: str = "replacing", target_database: str | None = None
) -> int:
    """Every table of ``db`` equals its replica row by row; returns the number of rows compared.

    Opens ``target_url`` in this process (for chdb: no other process may hold the directory, and no other chdb
    directory may be open in this process).
    """
    from mybinlog.clickhouse import open_target, quote_ident
    from mybinlog.clickhouse.types import canonical, values_match
    from mybinlog.ddl import parse_create_table

    tdb = target_database or db
    source = _source_tables(server, db)
    target = await open_target(target_url)
    total = 0
    try:
        caps = target.capabilities
        listed = await target.query(
            f"SELECT name FROM system.tables WHERE database = '{tdb}' AND engine LIKE '%MergeTree'"
        )
        replica_tables = {str(r[0]) for r in listed}
        assert set(source) <= replica_tables, f"tables missing in the replica: {sorted(set(source) - replica_tables)}"
        extra_tables = replica_tables - set(source)
        assert not extra_tables, f"replica tables without a source table: {sorted(extra_tables)}"
        for name, (create, rows) in source.items():
            definition = parse_create_table(create, db)
            columns = definition.columns
            names = ", ".join(quote_ident(c.name) for c in columns)
            ch_table = f"{quote_ident(tdb)}.{quote_ident(name)}"
            replica = await target.query(f"SELECT {names} FROM {ch_table} FINAL WHERE {_alive(engine)}")
            src_canon = [canonical(c, caps, side="source") for c in columns]
            ch_canon = [canonical(c, caps, side="clickhouse") for c in columns]
            match = [values_match(c, caps) for c in columns]
            want = sorted(tuple(f(v) for f, v in zip(src_canon, row, strict=True)) for row in rows)
            have = sorted(tuple(f(v) for f, v in zip(ch_canon, row, strict=True)) for row in replica)
            _assert_rows_equal(name, [c.name for c in columns], want, have, match)
            if engine == "collapsing":
                (signs,) = await target.query(f"SELECT count(), sum(_sign) FROM {ch_table}")
                assert int(signs[1] or 0) == len(rows), (
                    f"{name}: sum(_sign) is {signs[1]} over {signs[0]} rows, the source has {len(rows)} rows: a "
                    "collapsing table got a duplicated or a lost row"
                )
            total += len(rows)
    finally:
        await target.aclose()
    return total


def _assert_rows_equal(
    table: str, columns: list[str], want: list[tuple[Any, ...]], have: list[tuple[Any, ...]], match: list[Any]
) -> None:
    exact_want, exact_have = Counter(want), Counter(have)
    missing = exact_want - exact_have
    extra = exact_have - exact_want
    # rows that differ only by float digits within the documented tolerance pair up
    for row in list(missing.elements()):
        for other in list(extra):
            if extra[other] and all(m(a, b) for m, a, b in zip(match, row, other, strict=True)):
                extra[other] -= 1
                missing[row] -= 1
                break
    missing = +missing
    extra = +extra
    differs = bool(missing) or bool(extra)
    assert not differs, (
        f"{table}: {sum(missing.values())} source row(s) missing or different in the replica, "
        f"{sum(extra.values())} replica row(s) not in the source (of {len(want)} source rows); columns {columns}\n"
        f"missing: {list(missing)[:5]}\nextra: {list(extra)[:5]}"
    )
