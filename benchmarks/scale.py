"""Scale with the schema: `mybinlog replicate` CPU per change against the number of tables in scope.

A MariaDB database of N small tables (10 rows each) is loaded by ``mybinlog replicate`` (a child process, embedded
chdb target); the initial load's wall time is recorded. Then ``replicate`` streams while a writer commits single-row
INSERTs into random tables (one transaction each); the child's CPU (from /proc) between the first commit and the
moment its status endpoint reports every row written, minus its idle CPU over the same time, divided by the number
of changes, is the CPU per change. N is 20, 200 and 2,000 (``--quick``: 20 and 2,000, fewer changes);
``--tables-10k`` adds 10,000 (slow: creating and loading 10,000 tables takes minutes).

    python benchmarks/scale.py [--quick] [--json] [--tables-10k]

Goals (issue 24): per-change CPU at 2,000 tables within 1.5x of 20 tables; the initial load of 2,000 small tables
at least 5x faster than before the fix (50 s measured on 2026-11-27, 25 ms a table).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Log, emit, environment, goal, machine, process_cpu, start_server

from mybinlog.testing._clickhouse import ClickHouseServer, find_clickhouse
from mybinlog.testing._mariadb import MariaDBServer

BEFORE_LOAD_2000 = 50.0  # seconds: the initial load of 2,000 small tables before the fix (issue 24)
ROWS_PER_TABLE = 10
log = Log("scale")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_tables(server: MariaDBServer, db: str, n: int) -> None:
    server.create_database(db)
    conn = server.connect(database=db)
    try:
        with conn.cursor() as cur:
            for i in range(n):
                cur.execute(
                    f"CREATE TABLE t{i:05d} (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(32), "
                    "c DATETIME NOT NULL DEFAULT '2024-01-01 00:00:00')"
                )
                cur.executemany(
                    f"INSERT INTO t{i:05d} (id, a, b) VALUES (%s, %s, %s)",
                    [(k, k * i, f"row-{k}") for k in range(ROWS_PER_TABLE)],
                )
        conn.commit()
    finally:
        conn.close()


def _command(server: MariaDBServer, target: str, db: str, extra: list[str]) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, MYBINLOG_PASSWORD=server.repl_password)
    dsn = f"mysql://{server.repl_user}@{server.host}:{server.port}"
    cmd = [sys.executable, "-m", "mybinlog", "replicate", "--source", dsn, "--target", target, "-d", db, *extra]
    profile = os.environ.get("SCALE_PROFILE")  # a cProfile of the streaming child, for looking into a regression
    if profile and "--once" not in extra:
        cmd[1:3] = ["-m", "cProfile", "-o", f"{profile}.{db}", "-m", "mybinlog"]
    return cmd, env


def _status(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as resp:
            doc = json.loads(resp.read())
    except OSError:
        return None
    replicas = doc.get("replicas") or []
    return replicas[0] if replicas else None


def _wait(proc: subprocess.Popen[bytes], port: int, ok: Any, deadline: float, what: str) -> dict[str, Any]:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"replicate exited ({proc.returncode}) while waiting for {what}")
        st = _status(port)
        if st is not None and ok(st):
            return st
        # polling the child's status endpoint until the condition holds (deadline above); not faster: its document
        # holds a row per table touched (about 1 ms of the child's CPU at 2,000 tables), which a 20 Hz poll added to
        # the CPU measured per change (about 0.05-0.3 ms a change at 2,000 tables, nothing at 20)
        time.sleep(0.25)
    raise RuntimeError(f"timed out waiting for {what}")


def bench_tables(server: MariaDBServer, label: str, target: str, n: int, changes: int, first_id: int) -> dict[str, Any]:
    db = f"scale_{n}"
    cmd, env = _command(server, target, db, ["--once"])
    log(f"{label}, {n} tables: initial load")
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"the initial load failed ({done.returncode}): {done.stderr.decode()[-3000:]}")
    load = time.perf_counter() - t0

    port = _free_port()
    cmd, env = _command(server, target, db, ["--status-address", f"http://127.0.0.1:{port}", "--status-interval",
                                             "3600"])  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        st = _wait(proc, port, lambda s: s.get("state") == "streaming", time.monotonic() + 300, "streaming")
        base_rows = int(st.get("rows_written") or 0)
        time.sleep(1.0)  # settle after start-up, then measure the idle CPU rate over 2 s
        c0, t0 = process_cpu(proc.pid), time.monotonic()
        time.sleep(2.0)  # the idle window itself
        idle_rate = (process_cpu(proc.pid) - c0) / (time.monotonic() - t0)
        rng = random.Random(first_id + n)
        conn = server.connect(database=db)
        conn.autocommit(True)
        c0, t0 = process_cpu(proc.pid), time.monotonic()
        try:
            with conn.cursor() as cur:
                for k in range(changes):
                    t = rng.randrange(n)
                    cur.execute(f"INSERT INTO t{t:05d} (id, a, b) VALUES (%s, %s, %s)", (first_id + k, k, f"new-{k}"))
        finally:
            conn.close()
        wrote = time.monotonic() - t0
        _wait(proc, port, lambda s: int(s.get("rows_written") or 0) >= base_rows + changes,
              time.monotonic() + 1800, f"{changes} rows written")  # fmt: skip
        span = time.monotonic() - t0
        cpu = process_cpu(proc.pid) - c0 - idle_rate * span
    finally:
        proc.send_signal(2)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log(f"{label}, {n} tables: load {load:.1f} s, {cpu / changes * 1000:.3f} ms CPU per change, applied {span:.1f} s")
    return {
        "target": label,
        "tables": n,
        "load_seconds": load,
        "cpu_per_change_ms": cpu / changes * 1000,
        "changes": changes,
        "writer_seconds": wrote,
        "applied_seconds": span,
        "idle_cpu": idle_rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tables-10k", action="store_true", help="add 10,000 tables (slow)")
    parser.add_argument("--tables", help="comma-separated table counts (overrides the defaults)")
    parser.add_argument("--chdb-only", action="store_true", help="skip the clickhouse-server target")
    args = parser.parse_args()
    counts = [20, 2000] if args.quick else [20, 200, 2000]
    if args.tables_10k:
        counts.append(10_000)
    if args.tables:
        counts = [int(x) for x in args.tables.split(",")]
    changes = 1000 if args.quick else 3000
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mybinlog-scale-") as tmp:
        server = start_server(Path(tmp), "scale")
        ch: ClickHouseServer | None = None
        results: list[dict[str, Any]] = []
        try:
            env = environment(server)
            targets = [("chdb", lambda n: f"chdb://{tmp}/chdb-{n}")]
            if not args.chdb_only and find_clickhouse() is not None:
                ch = ClickHouseServer(Path(tmp) / "clickhouse")
                ch.start()
                url = ch.url()
                targets.append(("clickhouse-server", lambda n: url))
            for n in counts:
                log(f"{n} tables: creating")
                make_tables(server, f"scale_{n}", n)
                for i, (label, target) in enumerate(targets):
                    results.append(bench_tables(server, label, target(n), n, changes, 1000 + i * changes))
                server.execute(f"DROP DATABASE `scale_{n}`")
        finally:
            if ch is not None:
                ch.stop()
            server.stop()
    rows = []
    goals = []
    for label in dict.fromkeys(r["target"] for r in results):
        by = {r["tables"]: r for r in results if r["target"] == label}
        base = by.get(20)
        for r in by.values():
            ratio = r["cpu_per_change_ms"] / base["cpu_per_change_ms"] if base else None
            rows.append([label, r["tables"], r["cpu_per_change_ms"], None if ratio is None else round(ratio, 2),
                         r["load_seconds"], r["load_seconds"] / r["tables"] * 1000, r["applied_seconds"]])  # fmt: skip
        if base and 2000 in by:
            ratio = by[2000]["cpu_per_change_ms"] / base["cpu_per_change_ms"]
            goals.append(goal(f"`replicate` CPU per change at 2,000 tables <= 1.5x at 20 tables, {label}", ratio, 1.5,
                              higher_is_better=False,
                              detail=f"{by[2000]['cpu_per_change_ms']:.3f} ms vs {base['cpu_per_change_ms']:.3f} ms; "
                                     "issue 24 measured 21x (5.6 ms vs 0.26 ms)"))  # fmt: skip
        if 2000 in by and label == "chdb":
            speedup = BEFORE_LOAD_2000 / by[2000]["load_seconds"]
            goals.append(goal("initial load of 2,000 small tables >= 5x faster than before (50 s), chdb", speedup, 5.0,
                              detail=f"{by[2000]['load_seconds']:.1f} s"))  # fmt: skip
    doc = {
        "benchmark": "scale",
        "version": 1,
        "title": "Scale with the number of tables",
        "quick": args.quick,
        "seconds": time.monotonic() - began,
        "environment": env,
        "machine": machine(),
        "tables": [
            {
                "title": "`replicate` against the number of tables in scope",
                "columns": [
                    "target",
                    "tables",
                    "CPU ms per change",
                    "ratio to 20 tables",
                    "initial load s",
                    "load ms per table",
                    "changes applied in s",
                ],
                "rows": rows,
                "notes": f"{changes:,} single-row INSERTs, each its own transaction, into random tables while "
                "`replicate` streams (a child process; its CPU from /proc between the first commit and the last "
                f"row reported written, minus its idle CPU). Tables of 4 columns and {ROWS_PER_TABLE} rows; the "
                "initial load is a `replicate --once` from an empty replica (start-up included). chdb: the CPU "
                "includes the embedded ClickHouse, which makes one part per table a batch touches (with random "
                "changes to 2,000 tables, about one per change); clickhouse-server (18.16): `replicate`'s own CPU, "
                "the server's not counted.",
            }
        ],
        "goals": goals,
    }
    emit(doc, args.json)


if __name__ == "__main__":
    main()
