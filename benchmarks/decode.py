"""Decode benchmark: mybinlog versus python-mysql-replication and mariadb-binlog, same binlog, same run.

Workload (DESIGN §8): single-row INSERTs, then UPDATEs and DELETEs, 100 statements per transaction, 8 mixed
columns, written to a private MariaDB. Every reader streams the same binlog range from the server (or reads the
same files); each figure is also reported as a ratio to python-mysql-replication measured in the same run.

    python benchmarks/decode.py            # full: 200k inserts + 50k updates + 50k deletes
    python benchmarks/decode.py --quick    # 1/10 of that
    python benchmarks/decode.py --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mybinlog import BinlogStream, RowsEvent, read_binlog_file
from mybinlog._dsn import DSN
from mybinlog._sandbox import MariaDBServer
from mybinlog._transport import BinlogConnection

DDL = """CREATE TABLE bench.t (
    id INT UNSIGNED NOT NULL PRIMARY KEY,
    a BIGINT NOT NULL,
    b VARCHAR(64) NOT NULL,
    c DECIMAL(12, 2),
    d DATETIME(3),
    e DOUBLE,
    f TINYINT,
    g VARCHAR(255)
)"""


def write_workload(server: MariaDBServer, inserts: int, updates: int, deletes: int) -> None:
    rng = random.Random(7)
    conn = pymysql.connect(**server.connect_kwargs("admin"), autocommit=False)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE bench")
        cur.execute(DDL)
        conn.commit()
        n = 0

        def tick() -> None:
            nonlocal n
            n += 1
            if n % 100 == 0:
                conn.commit()

        for i in range(inserts):
            cur.execute(
                "INSERT INTO bench.t VALUES (%s, %s, %s, %s, '2024-05-06 07:08:09.123', %s, %s, %s)",
                (i, rng.randint(-(2**40), 2**40), f"name-{i}", f"{rng.random() * 1e6:.2f}", rng.random(),
                 rng.randint(-128, 127), "x" * rng.randint(0, 200)),
            )
            tick()
        for i in range(updates):
            cur.execute("UPDATE bench.t SET a = a + 1, g = %s WHERE id = %s", ("y" * rng.randint(0, 100), i))
            tick()
        for i in range(deletes):
            cur.execute("DELETE FROM bench.t WHERE id = %s", (inserts - 1 - i,))
            tick()
        conn.commit()
    conn.close()


def timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


async def raw_read(dsn: str, file: str) -> int:
    conn = await BinlogConnection.connect(DSN.parse(dsn))
    n = 0
    async with conn:
        await conn.start_dump(file=file, position=4, blocking=False)
        while await conn.read_event() is not None:
            n += 1
    return n


async def mybinlog_stream(dsn: str, file: str, decode: bool) -> int:
    rows = 0
    async with BinlogStream(dsn, binlog_file=file, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, RowsEvent) and event.schema == "bench":
                rows += len(event.rows) if decode else 1
    return rows


def mybinlog_files(paths: list[Path]) -> int:
    rows = 0
    for path in paths:
        for event in read_binlog_file(path):
            if isinstance(event, RowsEvent) and event.schema == "bench":
                rows += len(event.rows)
    return rows


def pymysqlreplication(server: MariaDBServer, file: str) -> int:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    kwargs = server.connect_kwargs("repl")
    settings = {"host": kwargs["host"], "port": kwargs["port"], "user": kwargs["user"], "passwd": kwargs["password"]}
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=4242,
        blocking=False,
        resume_stream=True,
        log_file=file,
        log_pos=4,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        is_mariadb=False,
    )
    rows = 0
    for event in stream:
        for _row in event.rows:
            rows += 1
    stream.close()
    return rows


def mariadb_binlog(paths: list[Path]) -> int:
    out = subprocess.run(
        ["mariadb-binlog", "--base64-output=decode-rows", "-v", *map(str, paths)],
        check=True,
        capture_output=True,
    ).stdout
    return out.count(b"### INSERT") + out.count(b"### UPDATE") + out.count(b"### DELETE")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    inserts, updates, deletes = 200_000 // scale, 50_000 // scale, 50_000 // scale
    with tempfile.TemporaryDirectory(prefix="mybinlog-bench-") as tmp:
        server = MariaDBServer(Path(tmp), options={"max-binlog-size": "1G"})
        server.start()
        try:
            t_write, _ = timed(lambda: write_workload(server, inserts, updates, deletes))
            file = server.binlog_files()[0][0]
            paths = server.binlog_paths()
            size = sum(p.stat().st_size for p in paths)
            dsn = server.repl_dsn
            results: dict[str, tuple[float, int]] = {}
            results["raw packet read (asyncmy socket)"] = timed(lambda: asyncio.run(raw_read(dsn, file)))
            results["mybinlog stream, routing only"] = timed(
                lambda: asyncio.run(mybinlog_stream(dsn, file, decode=False))
            )
            results["mybinlog stream, full decode"] = timed(
                lambda: asyncio.run(mybinlog_stream(dsn, file, decode=True))
            )
            results["mybinlog files, full decode"] = timed(lambda: mybinlog_files(paths))
            results["mariadb-binlog -v (C, files)"] = timed(lambda: mariadb_binlog(paths))
            results["python-mysql-replication"] = timed(lambda: pymysqlreplication(server, file))
        finally:
            server.stop()
    total_rows = inserts + updates + deletes
    base = results["python-mysql-replication"][0]
    print(f"workload: {inserts} inserts + {updates} updates + {deletes} deletes = {total_rows} rows, "
          f"binlog {size / 1e6:.1f} MB, written in {t_write:.1f} s")
    print(f"{'reader':40} {'seconds':>8} {'rows/s':>12} {'x pymysqlrepl':>14}")
    report = []
    for name, (secs, _count) in results.items():
        rate = total_rows / secs
        print(f"{name:40} {secs:8.2f} {rate:12,.0f} {base / secs:14.1f}")
        report.append({"reader": name, "seconds": secs, "rows_per_s": rate, "ratio_vs_pymysqlreplication": base / secs})
    if args.json:
        args.json.write_text(json.dumps({
            "machine": platform.platform(), "python": sys.version.split()[0], "rows": total_rows,
            "binlog_bytes": size, "results": report,
        }, indent=2))


if __name__ == "__main__":
    main()
