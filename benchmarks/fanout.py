"""Fan-out benchmark: 8 consumers through one shared connection versus 8 independent python-mysql-replication
streams.

A private MariaDB gets the standard workload (8 mixed columns, single-row inserts, updates and deletes, 100
statements per transaction; 13k rows with --quick, 150k otherwise). Each scenario runs in fresh processes that
read the whole workload and decode every row:

- mybinlog, 1 consumer and 8 consumers of one ``get_binlog_client(dsn)`` (one connection, one dispatcher; rows
  are decoded once per event and shared);
- python-mysql-replication, 1 stream and 8 streams (8 processes, 8 connections).

Measured around each scenario: wall time, client CPU (all its processes), server CPU (mariadbd, from /proc) and
the bytes the server sent (``SHOW GLOBAL STATUS LIKE 'Bytes_sent'``). The goal: 8 mybinlog consumers cost at most
1.5x one consumer (total CPU, client + server).

    python benchmarks/fanout.py [--quick] [--json] [--consumers 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Log, emit, environment, goal, run_children, start_server
from _consumers import run_mybinlog
from decode import WORKLOADS, profile_table, write_workload


def cost(m: dict[str, Any]) -> float:
    """What a scenario costs: the consumers' CPU from creating them to the last row, plus the server's CPU."""
    return float(m["work_cpu"] + m["server_cpu"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="13k rows (about 40 s)")
    parser.add_argument("--json", action="store_true", help="print one JSON document (benchmarks/run.py shape)")
    parser.add_argument("--consumers", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5, help="alternating runs of the mybinlog scenarios")
    args = parser.parse_args()
    log = Log("fanout")
    began = time.monotonic()
    n = args.consumers
    wl = WORKLOADS["standard"](23 if args.quick else 2)
    with tempfile.TemporaryDirectory(prefix="mybinlog-bench-fanout-") as tmp:
        server = start_server(Path(tmp), "fanout")
        try:
            start = server.gtid_binlog_pos()
            write_workload(server, wl)
            final = server.gtid_binlog_pos()
            file = server.binlog_files()[0][0]
            kw = server.connect_kwargs("repl")
            log(f"{wl.rows} rows written; {server.binlog_paths()[0].stat().st_size / 1e6:.1f} MB of binlog")

            def mybinlog_params(consumers: int) -> dict[str, Any]:
                return {"kind": "mybinlog", "dsn": server.repl_dsn, "start": start, "final": final,
                        "tables": [None] * consumers}  # fmt: skip

            def pymysqlrepl_params(i: int) -> dict[str, Any]:
                return {"kind": "pymysqlrepl", "host": kw["host"], "port": kw["port"], "user": kw["user"],
                        "password": kw["password"], "file": file, "server_id": 5000 + i}  # fmt: skip

            scenarios = [
                ("mybinlog, 1 consumer", [mybinlog_params(1)], 1),
                (f"mybinlog, {n} consumers, one shared connection", [mybinlog_params(n)], n),
                ("python-mysql-replication, 1 stream", [pymysqlrepl_params(0)], 1),
                (f"python-mysql-replication, {n} streams ({n} processes)", [pymysqlrepl_params(i) for i in range(n)],
                 n),
            ]  # fmt: skip
            def run(label: str, params: list[dict[str, Any]], consumers: int) -> dict[str, Any]:
                m = run_children(server, params)
                rows = [r for out in m["outputs"] for r in out["rows"]]
                if rows != [wl.rows] * consumers:
                    raise RuntimeError(f"{label}: consumers saw {rows} rows, expected {wl.rows} each")
                log(f"{label}: {m['wall']:.2f} s, client CPU {m['client_cpu']:.2f} s, server CPU "
                    f"{m['server_cpu']:.2f} s, {m['bytes_sent'] / 1e6:.1f} MB sent")  # fmt: skip
                return m

            # mybinlog's cost is a fraction of a second and server CPU is counted in 10 ms steps: the 1- and
            # n-consumer scenarios run alternately `repeats` times, and each reports its median run (by cost)
            mine: list[list[dict[str, Any]]] = [[], []]
            for _ in range(args.repeats):
                for i in (0, 1):
                    mine[i].append(run(*scenarios[i]))
            pair_ratios = sorted(cost(b) / cost(a) for a, b in zip(mine[0], mine[1], strict=True))
            measured = [(scenarios[i][0], sorted(mine[i], key=cost)[len(mine[i]) // 2]) for i in (0, 1)]
            for label, params, consumers in scenarios[2:]:
                measured.append((label, run(label, params, consumers)))
            profile = profile_table(
                f"Fan-out: where the time goes, {n} consumers (one process, cProfile)",
                lambda: asyncio.run(run_mybinlog(mybinlog_params(n))),
            )
            version = server.version
        finally:
            server.stop()
    rows = []
    for label, m in measured:
        spent = cost(m)
        rows.append([label, m["wall"], m["client_cpu"], m["work_cpu"], m["server_cpu"], spent, m["bytes_sent"] / 1e6])

    one, many = measured[0][1], measured[1][1]
    p_one, p_many = measured[2][1], measured[3][1]
    ratio = cost(many) / cost(one)
    p_ratio = cost(p_many) / cost(p_one)
    doc = {
        "benchmark": "fanout",
        "version": 1,
        "title": f"Fan-out: {n} consumers",
        "quick": args.quick,
        "seconds": time.monotonic() - began,
        "environment": {**environment(), "server": f"MariaDB {version}"},
        "tables": [
            {
                "title": f"Fan-out, standard workload: {wl.rows:,} rows read and decoded by every consumer",
                "columns": ["scenario", "seconds", "client CPU s (processes)", "client CPU s (reading)",
                            "server CPU s", "cost: reading + server CPU s", "MB sent by server"],
                "rows": rows,
                "notes": (
                    f"{n} mybinlog consumers cost {ratio:.2f}x one consumer (reading + server CPU; "
                    f"{(many['client_cpu'] + many['server_cpu']) / (one['client_cpu'] + one['server_cpu']):.2f}x "
                    f"counting whole processes), {many['wall'] / one['wall']:.2f}x the wall time and "
                    f"{many['bytes_sent'] / max(one['bytes_sent'], 1):.2f}x the bytes sent; "
                    f"{n} python-mysql-replication streams cost {p_ratio:.2f}x one stream and "
                    f"{p_many['bytes_sent'] / max(p_one['bytes_sent'], 1):.1f}x the bytes. "
                    "\"Processes\" includes each Python process's start-up and imports (about 0.3 s each); "
                    "\"reading\" is what the consumers spend from creating the consumers to the last row. Seconds "
                    "include up to one dispatcher flush interval (1 s by default) at the end of the backlog. "
                    f"The two mybinlog rows are the median (by cost) of {args.repeats} alternating runs each; the "
                    f"ratios of the {len(pair_ratios)} pairs ranged from {pair_ratios[0]:.2f}x to "
                    f"{pair_ratios[-1]:.2f}x."
                ),
            },
            profile,
        ],
        "chart": {
            "title": f"Fan-out: CPU to read and decode {wl.rows:,} rows (reading + server), 1 and {n} consumers",
            "xlabel": "CPU seconds (lower is better)",
            "log": True,
            "bars": [{"label": label, "value": cost(m)} for label, m in measured],
        },
        "goals": [
            goal(
                f"{n} consumers through one shared connection cost <= 1.5x one consumer (reading + server CPU)",
                ratio,
                1.5,
                higher_is_better=False,
                detail=f"median of {args.repeats} alternating runs; pairs {pair_ratios[0]:.2f}x-"
                f"{pair_ratios[-1]:.2f}x; python-mysql-replication: {n} streams cost {p_ratio:.1f}x one",
            )
        ],
    }
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
