"""Chunk planning against MariaDB (no Spark): every row of a table falls in exactly one chunk, whatever the key.

Each chunk's rows are selected with the SQL the executors use (``CopyTable.select_sql``), and the chunks' rows
together must be the table's rows, each once.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from mybinlog.ddl import parse_create_table
from mybinlog.snapshot._chunks import TablePlan
from mybinlog.snapshot._copy import CopyTable
from mybinlog.snapshot._plan import key_range_filter, plan_table
from mybinlog.snapshot._source import connect_source
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration


async def _plan(
    server: MariaDBServer, db: str, table: str, chunk_rows: int, key_range: tuple[str | None, str | None] | None = None
) -> tuple[TablePlan, CopyTable, Any]:
    from mybinlog.source._dsn import DSN

    src = await connect_source(DSN.parse(server.repl_dsn))
    try:
        text = await src.show_create_table(db, table)
        definition = parse_create_table(text, db)
        filters = []
        if key_range is not None:
            filters.append(key_range_filter(definition, list(definition.primary_key), key_range))
        plan = await plan_table(src, db, definition, chunk_rows=chunk_rows, parallelism=2, filters=filters)
    finally:
        await src.close()
    key = tuple(plan.key) if plan.method != "single" else ()
    copy = CopyTable(
        table,
        definition,
        f"`{db}`.`{table}`",
        "`x`.`x`",
        key,
        tuple(definition.column(c).charset for c in key),
        tuple(filters),
    )
    return plan, copy, definition


def _rows(server: MariaDBServer, db: str, sql: str) -> list[tuple[Any, ...]]:
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


async def _check_partition(
    server: MariaDBServer, db: str, table: str, chunk_rows: int, *, method: str, where: str = "1", **kw: Any
) -> TablePlan:
    plan, copy, _ = await _plan(server, db, table, chunk_rows, **kw)
    assert plan.method == method
    seen: Counter[tuple[Any, ...]] = Counter()
    for chunk in plan.chunks:
        rows = _rows(server, db, copy.select_sql(chunk))
        seen.update(rows)
        if method == "sampled" and chunk.upper is not None:
            assert len(rows) == chunk_rows  # sampled boundaries: exact chunk sizes
    expected = Counter(_rows(server, db, f"SELECT * FROM `{table}` WHERE {where}"))
    assert seen == expected
    assert max(seen.values(), default=1) == 1 or method == "single"
    return plan


async def test_string_keys_in_collations(server: MariaDBServer, db: str, db_conn: Any) -> None:
    rng = random.Random(1)
    words = ["Äpfel", "apfel", "ÄPFEL ", "a", "ß", "ss", "日本", "😀", "naïve", "a\tb", "'", "\\", "%", "_", ""]
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE ci (k VARCHAR(30) COLLATE utf8mb4_unicode_ci PRIMARY KEY, v INT)")
        cur.execute("CREATE TABLE l1 (k VARCHAR(30) CHARACTER SET latin1 PRIMARY KEY, v INT)")
        cur.execute("CREATE TABLE b (k VARBINARY(8) PRIMARY KEY, v INT)")
        cur.execute("CREATE TABLE u8 (k CHAR(10) CHARACTER SET utf8mb3 PRIMARY KEY, v INT)")
        cur.executemany("INSERT IGNORE INTO ci VALUES (%s, 1)", [f"{rng.choice(words)}{i}" for i in range(700)])
        cur.executemany("INSERT IGNORE INTO l1 VALUES (%s, 1)", [f"{rng.choice('aAéÉ z')}{i}é" for i in range(500)])
        cur.executemany(
            "INSERT IGNORE INTO b VALUES (%s, 1)",
            [bytes(rng.choice((0, 1, 127, 128, 255)) for _ in range(3)) for _ in range(400)],
        )
        cur.executemany("INSERT IGNORE INTO u8 VALUES (%s, 1)", [f"ü{i}" for i in range(300)])
    for table in ("ci", "l1", "b", "u8"):
        plan = await _check_partition(server, db, table, 37, method="sampled")
        assert len(plan.chunks) >= 3


async def test_composite_and_skewed_and_dense_keys(server: MariaDBServer, db: str, db_conn: Any) -> None:
    rng = random.Random(2)
    with db_conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE comp (a SMALLINT NOT NULL, b VARCHAR(10) NOT NULL, c DATETIME(6) NOT NULL, "
            "d DECIMAL(8,2) NOT NULL, v INT, PRIMARY KEY (a, b, c, d))"
        )
        cur.executemany(
            "INSERT IGNORE INTO comp VALUES (%s, %s, %s, %s, 1)",
            [
                (
                    rng.randrange(-2, 3),
                    rng.choice(["x", "X", "y", ""]),
                    f"2020-01-01 00:00:0{rng.randrange(3)}.{i:06d}",
                    f"{rng.randrange(-5, 5)}.{rng.randrange(100):02d}",
                )
                for i in range(900)
            ],
        )
        cur.execute("CREATE TABLE skew (id BIGINT PRIMARY KEY, v INT)")
        ids = list(range(1, 601)) + [10**15 + i for i in range(5)] + [-(10**12)]
        cur.execute("INSERT INTO skew VALUES " + ",".join(f"({i}, 1)" for i in ids))
        cur.execute("CREATE TABLE dense (id INT UNSIGNED PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO dense VALUES " + ",".join(f"({i}, 1)" for i in range(1, 1001) if i % 3))
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, d DATE, v INT)")
    await _check_partition(server, db, "comp", 50, method="sampled")
    await _check_partition(server, db, "skew", 50, method="sampled")
    plan = await _check_partition(server, db, "dense", 50, method="even")
    assert len(plan.chunks) >= 10
    assert plan.chunks[0].lower is None
    assert plan.chunks[-1].upper is None
    # a key range narrows planning and reading
    plan = await _check_partition(
        server, db, "dense", 50, method="even", where="id BETWEEN 200 AND 400", key_range=("200", "400")
    )
    assert len(plan.chunks) <= 6
    # an empty table: one unbounded chunk
    plan = await _check_partition(server, db, "t", 50, method="even")
    assert len(plan.chunks) == 1


async def test_tables_without_usable_key(server: MariaDBServer, db: str, db_conn: Any) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE nokey (a INT, b INT)")
        cur.execute("INSERT INTO nokey VALUES " + ",".join(f"({i % 10}, {i % 3})" for i in range(300)))
        cur.execute("CREATE TABLE uk (a INT NULL, b INT NOT NULL, UNIQUE KEY (a), UNIQUE KEY (b))")
        cur.execute("INSERT INTO uk VALUES " + ",".join(f"({i if i % 5 else 'NULL'}, {i})" for i in range(300)))
        cur.execute("CREATE TABLE en (e ENUM('z', 'a', 'm') PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO en VALUES ('z', 1), ('a', 2), ('m', 3)")
    plan = await _check_partition(server, db, "nokey", 20, method="single")
    assert (plan.key_source, len(plan.chunks)) == ("none", 1)
    plan = await _check_partition(server, db, "uk", 20, method="even")  # the NOT NULL unique key `b`
    assert (plan.key, plan.key_source) == (["b"], "unique")
    assert len(plan.chunks) >= 10
    plan = await _check_partition(server, db, "en", 1, method="single")  # ENUM sorts by index, compares as text
    assert len(plan.chunks) == 1
