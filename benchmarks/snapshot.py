"""Snapshot throughput: ``mybinlog snapshot`` on Spark ``local[2]`` vs a mysqldump-based load of the same table.

One MariaDB table (9 mixed columns, the end-to-end benchmark's shape) of N rows is loaded into the same ClickHouse
server three ways, each into its own database, and the rows/s compared with the reference:

* **mysqldump + bulk insert** (the reference): ``mariadb-dump --tab`` (the server writes the table as
  tab-separated text, the fastest dump MySQL has; ``\\N`` for NULL, backslash escapes, as ClickHouse's
  TabSeparated), the meta columns appended to each line, one ``INSERT ... FORMAT TabSeparated``. Single-threaded,
  not consistent with the binlog (no position), no type conversion beyond what the text gives;
* **mybinlog snapshot -> ClickHouse server**: the Spark job in local[2] (2 Python workers reading chunks, encoding
  with the replicator's encoders, inserting over HTTP), consistent with the binlog;
* **mybinlog snapshot -> chdb** (embedded): the same, with the executors spooling batches for the driver.

The Spark session is started once before the timed runs (its start-up, 10-20 s, is reported separately).

    python benchmarks/snapshot.py [--quick] [--json] [--rows N]

Prints a table, or with ``--json`` one object ``{"name": "snapshot", "results": [...], ...}`` whose results are
``{"method", "target", "rows", "seconds", "rows_per_second", "ratio", "note"}`` (ratio: rows/s over the
reference's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mybinlog.replication import open_target
from mybinlog.replication._chschema import create_table_sql
from mybinlog.replication.ddl import parse_create_table
from mybinlog.testing._clickhouse import ClickHouseServer, find_clickhouse
from mybinlog.testing._mariadb import MariaDBServer

DDL = """CREATE TABLE t (
    id BIGINT PRIMARY KEY,
    a INT NOT NULL,
    b VARCHAR(32) NOT NULL,
    c DECIMAL(12, 2) NOT NULL,
    d DATETIME(3) NOT NULL,
    e DOUBLE,
    f TINYINT NOT NULL,
    g VARCHAR(64),
    ts BIGINT NOT NULL
)"""


def log(message: str) -> None:
    print(f"[snapshot] {message}", file=sys.stderr, flush=True)


def populate(server: MariaDBServer, db: str, rows: int) -> None:
    rng = random.Random(1)
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute(DDL)
            for start in range(0, rows, 5000):
                values = []
                for i in range(start, min(rows, start + 5000)):
                    g = "NULL" if i % 7 == 0 else f"'text {i} \\t tab'"
                    values.append(
                        f"({i + 1},{rng.randint(-(2**31), 2**31 - 1)},'name-{i % 977}',"
                        f"{rng.randint(0, 10**10) / 100:.2f},"
                        f"'2024-01-{1 + i % 28:02d} 12:{i % 60:02d}:{i % 60:02d}.{i % 1000:03d}',"
                        f"{rng.random() * 1e6},{i % 100},{g},{i})"
                    )
                cur.execute("INSERT INTO t VALUES " + ",".join(values))
        conn.commit()
    finally:
        conn.close()


async def create_ch_table(url: str, database: str, create_text: str) -> None:
    target = await open_target(url)
    try:
        await target.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        definition = parse_create_table(create_text, "bench")
        await target.execute(
            create_table_sql(definition, database=database, engine="replacing", caps=target.capabilities)
        )
    finally:
        await target.aclose()


async def ch_count(url: str, table: str) -> int:
    target = await open_target(url)
    try:
        rows = await target.query(f"SELECT count() FROM {table} FINAL")
        return int(rows[0][0] or 0)
    finally:
        await target.aclose()


async def mysqldump_load(server: MariaDBServer, url: str, create_text: str, work: Path) -> tuple[float, int]:
    """mariadb-dump --tab, then one bulk insert; returns (seconds, rows)."""
    dump = shutil.which("mariadb-dump") or shutil.which("mysqldump")
    if dump is None:
        raise SystemExit("mariadb-dump/mysqldump not found (apt-get install mariadb-client)")
    await create_ch_table(url, "ref", create_text)
    tab_dir = work / "tab"
    tab_dir.mkdir()
    os.chmod(tab_dir, 0o777)
    started = time.monotonic()
    kw = server.connect_kwargs()
    cmd = [dump, f"--host={kw['host']}", f"--port={kw['port']}", f"--user={kw['user']}", "--no-create-info"]
    cmd += [f"--tab={tab_dir}", "bench", "t"]
    env = {**os.environ, "MYSQL_PWD": str(kw["password"])}
    await asyncio.to_thread(subprocess.run, cmd, check=True, capture_output=True, env=env)
    data = (tab_dir / "t.txt").read_bytes()
    data = data.replace(b"\n", b"\t1\t0\n")  # _sign = 1, _version = 0
    target = await open_target(url)
    try:
        await target.insert_tsv("`ref`.`t`", ["id", "a", "b", "c", "d", "e", "f", "g", "ts", "_sign", "_version"], data)
    finally:
        await target.aclose()
    seconds = time.monotonic() - started
    return seconds, await ch_count(url, "`ref`.`t`")


async def snapshot_load(server: MariaDBServer, spark: Any, url: str, database: str) -> tuple[float, int, float]:
    from mybinlog.snapshot import SnapshotOptions, run_snapshot

    started = time.monotonic()
    result = await run_snapshot(
        SnapshotOptions(
            source=server.repl_dsn,
            target=url,
            database="bench",
            target_database=database,
            replica=f"bench-{database}",
            meta_database=f"meta_{database}",
        ),
        spark=spark,
    )
    seconds = time.monotonic() - started
    return seconds, result.rows, result.rows_per_second


async def main_async(rows: int) -> list[dict[str, Any]]:
    if find_clickhouse() is None:
        raise SystemExit("clickhouse-server not found (bash scripts/setup.sh --test)")
    from mybinlog.snapshot import spark_session

    work = Path(tempfile.mkdtemp(prefix="mybinlog-bench-snapshot-"))
    server = MariaDBServer(work / "mariadb", name="bench-snapshot")
    ch = ClickHouseServer(work / "clickhouse")
    server.start()
    ch.start()
    results: list[dict[str, Any]] = []
    try:
        server.create_database("bench")
        log(f"writing {rows:,} rows")
        populate(server, "bench", rows)
        conn = server.connect(database="bench")
        with conn.cursor() as cur:
            cur.execute("SHOW CREATE TABLE t")
            create_text = str(cur.fetchone()[1])
        conn.close()
        url = ch.url()

        log("reference: mariadb-dump --tab + one bulk insert")
        ref_seconds, ref_rows = await mysqldump_load(server, url, create_text, work)
        ref_rate = ref_rows / ref_seconds
        results.append(
            {
                "method": "mysqldump --tab + bulk insert (reference)",
                "target": "ClickHouse 18.16 server",
                "rows": ref_rows,
                "seconds": round(ref_seconds, 3),
                "rows_per_second": round(ref_rate, 1),
                "ratio": 1.0,
                "note": "single-threaded; no binlog position",
            }
        )

        log("starting Spark (local[2])")
        t0 = time.monotonic()
        spark = spark_session("local[2]")
        spark.sparkContext.setLogLevel("ERROR")
        spark_start = time.monotonic() - t0
        try:
            # one untimed job so that Python workers and imports are warm in both timed runs
            spark.sparkContext.parallelize(range(2), 2).map(lambda x: x).collect()
            log("mybinlog snapshot -> ClickHouse server")
            seconds, n, _ = await snapshot_load(server, spark, url, "snap_http")
            results.append(
                {
                    "method": "mybinlog snapshot, Spark local[2]",
                    "target": "ClickHouse 18.16 server",
                    "rows": n,
                    "seconds": round(seconds, 3),
                    "rows_per_second": round(n / seconds, 1),
                    "ratio": round(n / seconds / ref_rate, 3),
                    "note": f"consistent with the binlog; Spark start-up {spark_start:.1f} s not included",
                }
            )
            log("mybinlog snapshot -> chdb")
            chdb_dir = work / "chdb"
            seconds, n, _ = await snapshot_load(server, spark, f"chdb://{chdb_dir}", "snap_chdb")
            results.append(
                {
                    "method": "mybinlog snapshot, Spark local[2]",
                    "target": "chdb (embedded; driver loads spooled batches)",
                    "rows": n,
                    "seconds": round(seconds, 3),
                    "rows_per_second": round(n / seconds, 1),
                    "ratio": round(n / seconds / ref_rate, 3),
                    "note": "reference measured against the server",
                }
            )
        finally:
            spark.stop()
    finally:
        ch.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200,000 rows (default 2,000,000)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rows", type=int, default=None)
    args = parser.parse_args()
    rows = args.rows or (200_000 if args.quick else 2_000_000)
    began = time.monotonic()
    results = asyncio.run(main_async(rows))
    doc = {
        "name": "snapshot",
        "title": "Snapshot throughput",
        "quick": args.quick,
        "seconds": round(time.monotonic() - began, 1),
        "results": results,
        "notes": [
            "One table of 9 mixed columns; rows/s over the whole load (plan, copy, state, checkpoint) with the Spark "
            "session already up. ratio: rows/s over mysqldump's into the same server. The snapshot is consistent "
            "with the binlog and lock-free; the reference is neither."
        ],
    }
    if args.json:
        print(json.dumps(doc))
        return
    print(f"{'method':40} {'target':48} {'rows':>9} {'seconds':>8} {'rows/s':>10} {'ratio':>6}")
    for r in results:
        print(
            f"{r['method']:40} {r['target']:48} {r['rows']:>9,} {r['seconds']:>8.2f} "
            f"{r['rows_per_second']:>10,.0f} {r['ratio']:>6.2f}"
        )


if __name__ == "__main__":
    main()
