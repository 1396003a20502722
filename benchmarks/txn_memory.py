"""Memory against the size of one transaction: the peak RSS of ``mybinlog replicate`` while it replicates one UPDATE
of N rows of a 5-column table in a single transaction, with ``max_bytes_in_transaction`` at its default (256 MiB), at
a low bound (16 MiB), and off (0: the transaction held whole, as before the bound existed).

A private MariaDB and an embedded ClickHouse (chdb) target in a temporary directory; one ``replicate`` child per
bound, streaming from the current position (``--initial-load none``). Per size: the rows deleted,
VmHWM of the child reset (``/proc/PID/clear_refs``), N rows inserted (one transaction), the UPDATE of every row
(one transaction), the wait for the checkpoint after it, and the child's VmHWM read: ``peak_over_baseline`` is the
peak over the child's RSS when it started streaming (before any transaction), ``rss_after`` what it kept.

    python benchmarks/txn_memory.py --quick       # 10k and 100k rows
    python benchmarks/txn_memory.py               # 10k, 100k, 1M rows
    python benchmarks/txn_memory.py --sizes 10000,1000000,5000000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mybinlog.testing._mariadb import MariaDBServer  # noqa: E402

MiB = 1 << 20
_CHECKPOINT = re.compile(r"checkpoint at (\S+):(\d+)")


def _status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


class Child:
    def __init__(self, server: MariaDBServer, target: str, db: str, bound: int, queue: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        env["MYBINLOG_PASSWORD"] = server.repl_password
        args = [sys.executable, "-m", "mybinlog", "-v", "replicate", "--source",
                f"mysql://{server.repl_user}@{server.host}:{server.port}", "--target", target, "--database", db,
                "--initial-load", "none", "--status-interval", "0",
                "--max-bytes-in-transaction", str(bound), "--max-bytes-in-binlog-queue", str(queue)]  # fmt: skip
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
        self.cond = threading.Condition()
        self.lines: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()

    def wait_for(self, test: Any, timeout: float = 3600) -> None:
        deadline = time.monotonic() + timeout
        i = 0
        with self.cond:
            while True:
                while i < len(self.lines):
                    if test(self.lines[i]):
                        return
                    i += 1
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("replicate exited or timed out:\n" + "".join(self.lines[-30:]))
                self.cond.wait(1)

    def wait_position(self, file: str, offset: int) -> None:
        def covers(line: str) -> bool:
            m = _CHECKPOINT.search(line)
            return m is not None and (m.group(1), int(m.group(2))) >= (file, offset)

        self.wait_for(covers)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(120)


def _master(server: MariaDBServer) -> tuple[str, int]:
    row = server.query("SHOW MASTER STATUS")[0]
    return str(row[0]), int(row[1])


def measure(
    server: MariaDBServer, tmp: Path, bound: int, queue: int, sizes: list[int], log: Any
) -> list[dict[str, Any]]:
    db = f"txmem_{bound}"
    server.execute(f"DROP DATABASE IF EXISTS {db}")
    server.execute(f"CREATE DATABASE {db}")
    server.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT, b VARCHAR(40), c DOUBLE, d DATETIME)")
    child = Child(server, f"chdb://{tmp / db}", db, bound, queue)
    out = []
    try:
        child.wait_for(lambda line: "on new dispatcher" in line, timeout=300)
        base = _status(child.proc.pid)["VmRSS"]  # streaming, before any transaction
        for n in sizes:
            if server.execute(f"DELETE FROM {db}.t"):
                child.wait_position(*_master(server))
            Path(f"/proc/{child.proc.pid}/clear_refs").write_text("5")
            started = time.monotonic()
            server.execute(
                f"INSERT INTO {db}.t SELECT seq, seq % 97, CONCAT('row ', seq), seq / 7, '2026-01-01' "
                f"FROM {db}.seq_1_to_{n}"
            )
            child.wait_position(*_master(server))
            server.execute(f"UPDATE {db}.t SET a = a + 1, b = CONCAT(b, ' changed'), d = d + INTERVAL 1 DAY")
            child.wait_position(*_master(server))
            seconds = time.monotonic() - started
            peak, after = _status(child.proc.pid)["VmHWM"], _status(child.proc.pid)["VmRSS"]
            row = {"bound_bytes": bound, "queue_bytes": queue, "rows": n, "baseline_rss_bytes": base,
                   "peak_rss_bytes": peak, "peak_over_baseline_bytes": peak - base, "rss_after_bytes": after,
                   "seconds": round(seconds, 2)}  # fmt: skip
            log(f"bound {bound // MiB:>4} MiB  queue {queue // MiB} MiB  {n:>9,} rows  "
                f"peak +{(peak - base) // MiB:>5} MB over {base // MiB} MB  after +{(after - base) // MiB} MB  "
                f"{seconds:.1f} s")  # fmt: skip
            out.append(row)
    finally:
        child.stop()
        server.execute(f"DROP DATABASE IF EXISTS {db}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k rows only")
    parser.add_argument("--sizes", help="comma-separated row counts (default 10000,100000,1000000)")
    parser.add_argument("--bounds", default="268435456,16777216,0", help="max_bytes_in_transaction values")
    parser.add_argument("--queue", type=int, default=64 << 20, help="max_bytes_in_binlog_queue (default 64 MiB)")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = parser.parse_args()
    sizes = [int(x) for x in (args.sizes or ("10000,100000" if args.quick else "10000,100000,1000000")).split(",")]
    bounds = [int(x) for x in args.bounds.split(",")]

    def log(text: str) -> None:
        print(text, file=sys.stderr if args.json else sys.stdout, flush=True)

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mybinlog-txmem-") as tmp:
        server = MariaDBServer(Path(tmp), name="txmem", options={"max_binlog_size": 1 << 30})
        server.start()
        try:
            for bound in bounds:
                results += measure(server, Path(tmp), bound, args.queue, sizes, log)
        finally:
            server.stop()
    goals = goals_of(results)
    for g in goals:
        log(f"goal: {g['goal']}: {g['value']:.0f} (target {g['target']:.0f}) {'met' if g['met'] else 'NOT met'}")
    if args.json:
        print(json.dumps({"benchmark": "txn_memory", "version": 1, "title": TITLE, "quick": args.quick,
                          "tables": [table_of(results)], "goals": goals}))  # fmt: skip
    return 0


TITLE = "Memory against the size of one transaction"
ALLOWANCE = 100 * MiB  # the goal (issue 24): peak within max_bytes_in_transaction + 100 MB at any size


def _bound_label(bound: int) -> str:
    return f"{bound // MiB} MiB" if bound else "off"


def goals_of(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per bound (not "off"): the largest peak over the baseline against the bound + 100 MB, met or not."""
    goals = []
    for bound in dict.fromkeys(r["bound_bytes"] for r in results):
        rows = [r for r in results if r["bound_bytes"] == bound]
        if not bound or not rows:
            continue
        worst = max(rows, key=lambda r: r["peak_over_baseline_bytes"])
        peak, target = worst["peak_over_baseline_bytes"] / MiB, (bound + ALLOWANCE) / MiB
        goals.append({
            "goal": f"peak RSS of `replicate` over its streaming baseline <= max_bytes_in_transaction + 100 MB at "
                    f"every transaction size, bound {_bound_label(bound)}, chdb (MB)",
            "value": round(peak, 1), "target": round(target, 1), "met": peak <= target,
            "detail": f"worst at {worst['rows']:,} rows (largest measured: {max(r['rows'] for r in rows):,}); "
                      f"held after: {worst['rss_after_bytes'] / MiB - worst['baseline_rss_bytes'] / MiB:.0f} MB",
        })  # fmt: skip
    return goals


def table_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "title": "Peak RSS of `replicate` against the rows of one UPDATE",
        "columns": ["max_bytes_in_transaction", "rows", "peak over baseline MB", "held after MB", "seconds"],
        "rows": [
            [
                _bound_label(r["bound_bytes"]),
                r["rows"],
                r["peak_over_baseline_bytes"] / MiB,
                (r["rss_after_bytes"] - r["baseline_rss_bytes"]) / MiB,
                r["seconds"],
            ]
            for r in results
        ],
        "notes": "One INSERT of N rows, then one UPDATE of every row (each a single transaction, 5 columns), "
        "replicated by a `replicate` child into chdb; peak RSS (VmHWM, reset before the INSERT) over the child's "
        "RSS when it started streaming; 'held after': its RSS after the UPDATE's checkpoint. 'off': no bound (the "
        "behaviour before it existed).",
    }


if __name__ == "__main__":
    raise SystemExit(main())
