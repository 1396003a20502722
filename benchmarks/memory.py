"""Memory benchmark: with one consumer stalled, the process stays within its configured limits plus a fixed overhead.

A private MariaDB gets a binlog backlog of two kinds of rows: ``wide`` (~1 KB of text per row, 100 per
transaction) and ``narrow`` (8 integer columns, ~45 bytes per row, 1000 per transaction; decoded, such rows take
about ten times their wire size). Then, in a fresh process per scenario, consumers of one shared connection start
at the beginning of that backlog: two readers that read and decode every row, and one stalled consumer that never
reads, all three with the same ``max_bytes_in_binlog_queue``. Peak RSS (``VmHWM`` of /proc/self/status, reset right
after the baseline is taken; sampled ``VmRSS`` as a fallback) minus the baseline is compared with the configured
limits: the stalled queue plus twice the dispatcher buffer (``max_bytes_in_binlog_dispatcher_buffer``), and all
queues plus twice the buffer.

Scenarios:

- ``stream`` (reference, no sharing): one plain ``BinlogStream`` that reads the backlog and pauses for 2 s after
  the first MiB: what the source's read-ahead costs by itself when its reader does not keep up;
- ``detached``: the stalled consumer has ``max_milliseconds_to_wait_in_binlog_queue=300``: it is detached, keeps its
  queue (it is never closed), and the readers read the whole backlog through the same process;
- ``blocked``: the stalled consumer waits forever (a huge wait): the dispatcher, and so every consumer, stops once
  its queue is full; memory must stay bounded while the backlog waits on the server.

    python benchmarks/memory.py --quick          # 32 + 16 MB of binlog, queue limits 8 MiB (about 20 s)
    python benchmarks/memory.py                  # 128 + 64 MB of binlog, queue limits 1, 8 and 32 MiB (~70 s)
    python benchmarks/memory.py --quick --json   # one JSON document on stdout (shape below); progress on stderr

JSON output (sizes in bytes)::

    {"benchmark": "memory", "version": 1, "quick": bool, "python": "3.11.7", "server": "MariaDB 10.11...",
     "workloads": {"wide": {"rows": int, "binlog_bytes": int, "row_bytes": int}, "narrow": {...}},
     "seconds": float,                                  # the whole run
     "scenarios": [{
        "name": "stream" | "detached" | "blocked", "workload": "wide" | "narrow",
        "queue_limit_bytes": int,                      # max_bytes_in_binlog_queue of every consumer (0: stream)
        "wait_ms": int, "dispatcher_buffer_bytes": int, "flush_ms": int, "readers": int,
        "reader_queue_limit_bytes": int, "decode": bool,
        "configured_bytes": int,                       # stalled queue + 2 x dispatcher buffer (0: stream)
        "all_queues_bytes": int,                       # every queue + 2 x dispatcher buffer (0: stream)
        "baseline_rss_bytes": int, "peak_rss_bytes": int,
        "peak_over_baseline_bytes": int,               # the measurement
        "overhead_bytes": int,                         # peak_over_baseline_bytes - configured_bytes
        "sampled_peak_rss_bytes": int, "peak_from": "VmHWM" | "sampling",
        "stalled_queue_bytes": int, "stalled_queue_events": int, "stalled_detached": bool,
        "bytes_read": int,                             # wire bytes each reader received
        "backlog_bytes": int,                          # binlog bytes of the workload
        "seconds": float}]}
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mybinlog
from mybinlog.testing._mariadb import MariaDBServer

MiB = 1 << 20


# -- measuring --------------------------------------------------------------------------------------------------


def proc_status() -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of this process, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False when not possible (then sampling decides)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


class Sampler:
    """Samples VmRSS every few milliseconds in a thread (a fallback and a cross-check of VmHWM)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, proc_status()["VmRSS"])

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# -- one scenario, in a fresh process --------------------------------------------------------------------------


async def run_stream_only(params: dict[str, Any]) -> dict[str, Any]:
    """The reference: one plain BinlogStream (no sharing) reading and decoding the whole backlog, pausing for 2 s
    after the first MiB like a stalled consumer: what the source's read-ahead costs on its own."""
    final = mybinlog.parse_gtid_set(params["final"], "mariadb")
    gc.collect()
    baseline = proc_status()["VmRSS"]
    hwm_reset = reset_peak()
    began = time.monotonic()
    read = 0
    with Sampler() as sampler:
        async with mybinlog.BinlogStream(params["dsn"], gtid_set=params["start"], blocking=False) as stream:
            paused = False
            async for event in stream:
                if isinstance(event, mybinlog.RowsEvent):
                    _ = event.rows
                read += event.size
                if not paused and read > MiB:
                    paused = True
                    await asyncio.sleep(2)  # the server keeps sending: the stream reads ahead up to its limit
                gtids = stream.position.gtid_set
                if gtids is not None and gtids.contains(final):  # type: ignore[arg-type]
                    break
        status = proc_status()
    peak = status["VmHWM"] if hwm_reset else max(sampler.peak, status["VmRSS"])
    return {
        **{k: v for k, v in params.items() if k not in ("dsn", "start", "final")},
        "configured_bytes": 0,
        "all_queues_bytes": 0,
        "baseline_rss_bytes": baseline,
        "peak_rss_bytes": peak,
        "peak_over_baseline_bytes": peak - baseline,
        "overhead_bytes": peak - baseline,
        "sampled_peak_rss_bytes": sampler.peak,
        "peak_from": "VmHWM" if hwm_reset else "sampling",
        "stalled_queue_bytes": 0,
        "stalled_queue_events": 0,
        "stalled_detached": False,
        "bytes_read": read,
        "seconds": round(time.monotonic() - began, 2),
    }


async def run_scenario(params: dict[str, Any]) -> dict[str, Any]:
    if params["name"] == "stream":
        return await run_stream_only(params)
    dsn = params["dsn"]
    start = params["start"]
    final = mybinlog.parse_gtid_set(params["final"], "mariadb")
    blocked = params["name"] == "blocked"
    decode = params.get("decode", True)
    factory = mybinlog.BinlogClientFactory()
    client = factory.get_client(
        dsn,
        max_bytes_in_binlog_dispatcher_buffer=params["dispatcher_buffer_bytes"],
        max_flush_milliseconds_in_binlog_dispatcher=params["flush_ms"],
    )
    gc.collect()
    baseline = proc_status()["VmRSS"]
    hwm_reset = reset_peak()
    began = time.monotonic()
    read = [0] * params["readers"]
    progress = [time.monotonic()]

    async def reader(i: int, binlog: mybinlog.Binlog) -> None:
        async for event in binlog:
            if decode and isinstance(event, mybinlog.RowsEvent):
                _ = event.rows  # decoded once, cached on the shared event object
            read[i] += event.size
            progress[0] = time.monotonic()
            gtids = binlog.position.gtid_set
            if gtids is not None and gtids.contains(final):  # type: ignore[arg-type]
                return

    with Sampler() as sampler:
        stalled = await client.create_binlog(
            name="stalled",
            executed_gtid_set=start,
            max_bytes_in_binlog_queue=params["queue_limit_bytes"],
            max_milliseconds_to_wait_in_binlog_queue=params["wait_ms"],
        )
        readers = [
            await client.create_binlog(
                name=f"reader-{i}",
                executed_gtid_set=start,
                max_bytes_in_binlog_queue=params["reader_queue_limit_bytes"],
            )
            for i in range(params["readers"])
        ]
        tasks = [asyncio.create_task(reader(i, b)) for i, b in enumerate(readers)]
        if blocked:
            # everything stops once the stalled queue is full: wait until nothing moved for a while
            while time.monotonic() - progress[0] < 2.0:  # noqa: ASYNC110 - "nothing happened for 2 s"
                await asyncio.sleep(0.1)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        else:
            await asyncio.gather(*tasks)
        elapsed = time.monotonic() - began
        stats = stalled.statistics()
        status = proc_status()
    peak = status["VmHWM"] if hwm_reset else max(sampler.peak, status["VmRSS"])
    detached = stalled.detached
    for b in [stalled, *readers]:
        await b.aclose()
    await factory.aclose()
    configured = params["queue_limit_bytes"] + 2 * params["dispatcher_buffer_bytes"]
    all_queues = params["queue_limit_bytes"] + params["readers"] * params["reader_queue_limit_bytes"]
    return {
        **{k: v for k, v in params.items() if k not in ("dsn", "start", "final")},
        "configured_bytes": configured,
        "all_queues_bytes": all_queues + 2 * params["dispatcher_buffer_bytes"],
        "baseline_rss_bytes": baseline,
        "peak_rss_bytes": peak,
        "peak_over_baseline_bytes": peak - baseline,
        "overhead_bytes": peak - baseline - configured,
        "sampled_peak_rss_bytes": sampler.peak,
        "peak_from": "VmHWM" if hwm_reset else "sampling",
        "stalled_queue_bytes": stats.bytes,
        "stalled_queue_events": stats.size,
        "stalled_detached": detached,
        "bytes_read": min(read),
        "seconds": round(elapsed, 2),
    }


# -- the backlog -----------------------------------------------------------------------------------------------


WORKLOADS: dict[str, dict[str, Any]] = {
    # ~1 KB text rows, 100 per transaction: decoded rows cost about their wire size again
    "wide": {
        "ddl": "CREATE TABLE {db}.t (id BIGINT PRIMARY KEY, n INT, payload VARCHAR(1000))",
        "insert": "INSERT INTO t (id, n, payload) VALUES (%s, %s, %s)",
        "row": lambda i: (i, i % 1000, (f"{i:08d}" * 125)[:1000]),
        "rows_per_txn": 100,
        "row_bytes": 1000,
    },
    # 8 integer columns (~45 bytes of binlog per row), 1000 per transaction: decoded rows cost many times that
    "narrow": {
        "ddl": "CREATE TABLE {db}.t (id BIGINT PRIMARY KEY, a INT, b INT, c INT, d BIGINT, e INT, f SMALLINT, g INT)",
        "insert": "INSERT INTO t (id, a, b, c, d, e, f, g) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        "row": lambda i: (i, i * 7, i * 13, -i, i * 1_000_003, i % 100_000, i % 30_000, i ^ 0x5A5A5),
        "rows_per_txn": 1000,
        "row_bytes": 45,
    },
}


def write_backlog(server: MariaDBServer, workload: str, target_bytes: int) -> tuple[str, str, int]:
    """Rows of ``workload`` until the binlog grew by ``target_bytes``; (start GTID set, final GTID set, rows)."""
    spec = WORKLOADS[workload]
    db = f"bench_{workload}"
    server.execute(f"CREATE DATABASE {db}")
    server.execute(spec["ddl"].format(db=db))
    start = server.gtid_binlog_pos()
    file, begin = server.master_status()
    conn = pymysql.connect(**server.connect_kwargs("admin", db), autocommit=False)
    rows = 0
    per_txn = spec["rows_per_txn"]
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION binlog_annotate_row_events = OFF")  # no copy of each statement in the binlog
            while True:
                cur.executemany(spec["insert"], [spec["row"](rows + j) for j in range(per_txn)])
                conn.commit()
                rows += per_txn
                if rows % (50 * per_txn) == 0:
                    now_file, now = server.master_status()
                    if now_file != file or now - begin >= target_bytes:
                        break
    finally:
        conn.close()
    return start, server.gtid_binlog_pos(), rows


def run_child(params: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(params)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"scenario {params['name']} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller backlogs, queue limit 8 MiB only (< 60 s)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(run_scenario(json.loads(args.child)))))
        return 0

    began = time.monotonic()
    if args.quick:
        backlogs = {"wide": 32 * MiB, "narrow": 16 * MiB}
        plan = [("wide", "stream", 0), ("wide", "detached", 8), ("wide", "blocked", 8), ("narrow", "detached", 8)]
    else:
        backlogs = {"wide": 128 * MiB, "narrow": 64 * MiB}
        plan = [(w, "stream", 0) for w in ("wide", "narrow")]
        plan += [(w, s, q) for w in ("wide", "narrow") for s in ("detached", "blocked") for q in (1, 8, 32)]

    def log(text: str) -> None:
        if not args.json:
            print(text, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="mybinlog-membench-") as tmp:
        server = MariaDBServer(Path(tmp), name="membench", options={"max_binlog_size": 1 << 30})
        server.start()
        try:
            written = {}
            for workload, size in backlogs.items():
                log(f"writing {size // MiB} MB of {workload} rows ...")
                before = sum(n for _, n in server.binlog_files())
                start, final, rows = write_backlog(server, workload, size)
                written[workload] = {
                    "start": start,
                    "final": final,
                    "rows": rows,
                    "binlog_bytes": sum(n for _, n in server.binlog_files()) - before,
                }
            scenarios = []
            for workload, name, limit_mib in plan:
                w = written[workload]
                params = {
                    "name": name,
                    "workload": workload,
                    "dsn": server.repl_dsn,
                    "start": w["start"],
                    "final": w["final"],
                    "queue_limit_bytes": limit_mib * MiB,
                    "wait_ms": 300 if name == "detached" else 1_000_000_000,
                    "dispatcher_buffer_bytes": 1 * MiB,
                    "flush_ms": 100,
                    "readers": 2,
                    "reader_queue_limit_bytes": limit_mib * MiB,
                    "decode": True,
                }
                log(f"scenario {name}, {workload} rows, queue limits {limit_mib} MiB ...")
                result = run_child(params)
                result["backlog_bytes"] = w["binlog_bytes"]
                scenarios.append(result)
            version = server.version
        finally:
            server.stop()
    doc = {
        "benchmark": "memory",
        "version": 1,
        "quick": args.quick,
        "python": platform.python_version(),
        "server": f"MariaDB {version}",
        "workloads": {
            name: {"rows": w["rows"], "binlog_bytes": w["binlog_bytes"], "row_bytes": WORKLOADS[name]["row_bytes"]}
            for name, w in written.items()
        },
        "seconds": round(time.monotonic() - began, 1),
        "scenarios": scenarios,
    }
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(render(doc))
    return 0


def render(doc: dict[str, Any]) -> str:
    def mib(n: int) -> str:
        return f"{n / MiB:.1f}"

    workloads = "; ".join(
        f"{name}: {w['binlog_bytes'] / MiB:.0f} MB of binlog, {w['rows']:,} rows of ~{w['row_bytes']} B"
        for name, w in doc["workloads"].items()
    )
    lines = [
        f"{doc['server']}, Python {doc['python']}. {workloads}. Per scenario, in a fresh process: 2 readers that "
        "decode every row + 1 stalled consumer that never reads, all with the same max_bytes_in_binlog_queue; "
        "dispatcher buffer 1 MiB, flush 100 ms.",
        "",
        "| rows | stalled consumer | queue limit MiB | configured MiB (stalled queue + 2 x buffer) | "
        "all queues + 2 x buffer MiB | peak RSS over baseline MiB | overhead MiB | readers read MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in doc["scenarios"]:
        if s["name"] == "stream":
            lines.append(
                f"| {s['workload']} | none: one plain BinlogStream pausing 2 s (reference) | - | - | - | "
                f"{mib(s['peak_over_baseline_bytes'])} | {mib(s['overhead_bytes'])} | {mib(s['bytes_read'])} |"
            )
            continue
        state = "detached after 300 ms" if s["stalled_detached"] else "waiting (never detached)"
        lines.append(
            f"| {s['workload']} | {state} | {mib(s['queue_limit_bytes'])} | {mib(s['configured_bytes'])} | "
            f"{mib(s['all_queues_bytes'])} | {mib(s['peak_over_baseline_bytes'])} | {mib(s['overhead_bytes'])} | "
            f"{mib(s['bytes_read'])} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
