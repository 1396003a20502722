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

**The whole command** (the compiled core's goal: >= 1.5x the single-threaded copy at 1M rows): the reference is a
single-threaded copy in one process (pymysql's unbuffered cursor, rows encoded by the replicator's encoders,
inserted into chdb in batches of 100,000), and ``mybinlog snapshot --master local[1]`` and ``local[2]`` into chdb
run as commands; all three are timed from process start to exit, start-up included, alternating, ``--repeat``
times, and the median ratio is reported. The first snapshot on a machine writes the driver JVM's class archive
(docs/snapshot.md), a one-time cost of a few seconds: when there is none yet, one untimed command runs first.

    python benchmarks/snapshot.py [--quick] [--json] [--rows N] [--repeat N] [--whole-only]

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

from mybinlog.clickhouse import open_target
from mybinlog.clickhouse._tables import create_table_sql
from mybinlog.ddl import parse_create_table
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


def reference_copy(spec: str) -> None:
    """Child process of the reference: ``{"kw": pymysql kwargs, "chdb": path}``; prints rows on stdout."""
    import pymysql
    import pymysql.cursors

    from mybinlog.clickhouse.types import make_row_encoder

    params = json.loads(spec)

    async def copy() -> int:
        target = await open_target(f"chdb://{params['chdb']}")
        conn = pymysql.connect(**params["kw"], database="bench", cursorclass=pymysql.cursors.SSCursor)
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW CREATE TABLE t")
                definition = parse_create_table(str(cur.fetchone()[1]), "bench")
                await target.execute("CREATE DATABASE IF NOT EXISTS `ref`")
                await target.execute(
                    create_table_sql(definition, database="ref", engine="replacing", caps=target.capabilities)
                )
                encode = make_row_encoder(definition.columns, target.capabilities)
                columns = [c.name for c in definition.columns] + ["_sign", "_version"]
                cur.execute("SELECT * FROM t")
                n = 0
                while rows := cur.fetchmany(100_000):
                    data = "".join([encode(r) + "\t1\t0\n" for r in rows]).encode("utf-8", "surrogateescape")
                    await target.insert_tsv("`ref`.`t`", columns, data)
                    n += len(rows)
                return n
        finally:
            conn.close()
            await target.aclose()

    print(asyncio.run(copy()))


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=Path(__file__).parents[1])
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {proc.stderr[-2000:]}")
    return seconds, proc.stdout


def whole_commands(server: MariaDBServer, work: Path, rows: int, repeat: int) -> tuple[list[dict[str, Any]], dict]:
    """The reference copy and ``mybinlog snapshot`` local[1]/local[2] into chdb, each a whole process, alternating."""
    kw = server.connect_kwargs()
    env = {**os.environ, "MYBINLOG_PASSWORD": str(server.connect_kwargs("repl")["password"])}
    env.pop("MYBINLOG_NO_EXTENSIONS", None)
    dsn = f"mysql://{server.connect_kwargs('repl')['user']}@{kw['host']}:{kw['port']}/bench"
    times: dict[str, list[float]] = {"ref": [], "local[1]": [], "local[2]": []}
    from mybinlog.snapshot._spark import _class_archive

    archive = _class_archive()
    if archive is not None and archive.writing is not None:
        # the first snapshot on a machine writes the driver JVM's class archive (once, a few seconds): not timed
        out = work / "whole-warm-up"
        cmd = [sys.executable, "-m", "mybinlog", "snapshot", "--source", dsn, "--database", "bench",
               "--target", f"chdb://{out}", "--master", "local[1]", "--json"]  # fmt: skip
        seconds, _ = _timed(cmd, env)
        shutil.rmtree(out, ignore_errors=True)
        log(f"warm-up command (writes Spark's class archive in {archive.directory}, once): {seconds:.2f} s")
    for i in range(repeat):
        for name in times:
            out = work / f"whole-{i}-{name.strip(']').replace('[', '')}"
            if name == "ref":
                cmd = [sys.executable, __file__, "--reference-copy", json.dumps({"kw": kw, "chdb": str(out)})]
            else:
                cmd = [sys.executable, "-m", "mybinlog", "snapshot", "--source", dsn, "--database", "bench",
                       "--target", f"chdb://{out}", "--master", name, "--json"]  # fmt: skip
            seconds, stdout = _timed(cmd, env)
            copied = int(stdout.strip()) if name == "ref" else int(json.loads(stdout)["rows"])
            if copied != rows:
                raise SystemExit(f"{name} copied {copied:,} rows, not {rows:,}")
            times[name].append(seconds)
            shutil.rmtree(out, ignore_errors=True)
            log(f"whole command {i + 1}/{repeat}: {name} {seconds:.2f} s")
    ratios = {m: sorted(r / s for r, s in zip(times["ref"], times[m], strict=True)) for m in ("local[1]", "local[2]")}
    results = []
    for name, secs in times.items():
        med = sorted(secs)[len(secs) // 2]
        ratio = 1.0 if name == "ref" else ratios[name][len(ratios[name]) // 2]
        results.append(
            {
                "method": "pymysql stream -> chdb, one thread (reference)" if name == "ref"
                else f"`mybinlog snapshot --master {name}` (whole command)",
                "target": "chdb (embedded)",
                "rows": rows,
                "seconds": round(med, 3),
                "rows_per_second": round(rows / med, 1),
                "ratio": round(ratio, 3),
                "note": "start-up included; median of "
                + f"{repeat}: " + ", ".join(f"{x:.1f}" for x in secs) + " s"
                + ("" if name == "ref" else "; same-run ratios " + ", ".join(f"{x:.2f}" for x in ratios[name])),
            }
        )  # fmt: skip
    value = ratios["local[2]"][len(ratios["local[2]"]) // 2]
    goal = {
        "goal": "snapshot of 1M rows: the whole command (start-up included) >= 1.5x the single-threaded copy "
        "(pymysql stream into chdb), local[2]",
        "value": round(value, 3),
        "target": 1.5,
        "met": value >= 1.5 and rows >= 1_000_000,
        "detail": f"{rows:,} rows; local[1] {ratios['local[1]'][len(ratios['local[1]']) // 2]:.2f}x; "
        f"same-run ratios of {repeat} runs",
    }
    return results, goal


async def main_async(rows: int, repeat: int = 1, whole_only: bool = False) -> tuple[list[dict[str, Any]], list]:
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
        whole, goal = whole_commands(server, work, rows, repeat)
        if whole_only:
            return whole, [goal]

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
    return results + whole, [goal]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000,000 rows, the goal's size (default 2,000,000)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each whole command (alternating; 3)")
    parser.add_argument("--whole-only", action="store_true", help="only the whole commands (the goal)")
    parser.add_argument("--reference-copy", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reference_copy:
        reference_copy(args.reference_copy)
        return
    rows = args.rows or (1_000_000 if args.quick else 2_000_000)  # quick: the goal is stated at 1M rows
    began = time.monotonic()
    results, goals = asyncio.run(main_async(rows, args.repeat, args.whole_only))
    doc = {
        "name": "snapshot",
        "title": "Snapshot throughput",
        "quick": args.quick,
        "seconds": round(time.monotonic() - began, 1),
        "results": results,
        "goals": goals,
        "notes": [
            "One table of 9 mixed columns; rows/s over the whole load (plan, copy, state, checkpoint) with the Spark "
            "session already up. ratio: rows/s over mysqldump's into the same server. The snapshot is consistent "
            "with the binlog and lock-free; the reference is neither.",
            "Whole commands: seconds from process start to exit (Python, Spark's JVM, planning, copy, checkpoint, "
            "Spark's stop); ratio: the reference's seconds over the command's in the same round (median of the "
            "rounds). The reference copies without a binlog position, in one process and one thread.",
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
