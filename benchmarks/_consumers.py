"""One measured scenario of the fan-out and filtering benchmarks, run in a fresh process.

    python benchmarks/_consumers.py '{"kind": "mybinlog", ...}'

prints one JSON line: rows seen per consumer, and the wall and CPU seconds of the reading itself (without the
interpreter's start-up and imports). The parent measures this process's
CPU (``RUSAGE_CHILDREN``), the server's CPU and the server's ``Bytes_sent`` around it.

Parameters: ``kind`` ``"mybinlog"`` (consumers of one shared connection: ``get_binlog_client().create_binlog``)
or ``"pymysqlrepl"`` (one python-mysql-replication stream; the parent starts several processes for several);
``dsn``, ``start`` / ``final`` (MariaDB GTID positions around the workload), ``consumers`` (mybinlog),
``tables`` (list of ``db.table`` per consumer, or null for all), ``host``/``port``/``user``/``password``/``file``
(pymysqlrepl), ``only_tables`` (pymysqlrepl table filter or null). Every consumer reads every row it receives
(``event.rows``) and stops at ``final``.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mybinlog


async def run_mybinlog(p: dict[str, Any]) -> dict[str, Any]:
    final = mybinlog.parse_gtid_set(p["final"], "mariadb")
    factory = mybinlog.BinlogClientFactory()
    client = factory.get_client(p["dsn"])
    tables: list[list[str] | None] = p["tables"]
    rows = [0] * len(tables)

    async def consume(i: int, binlog: mybinlog.Binlog) -> None:
        async for event in binlog:
            if isinstance(event, mybinlog.RowsEvent):
                rows[i] += len(event.rows)  # decoded once per event, shared by the consumers that read it
            elif isinstance(event, mybinlog.XidEvent):  # a transaction boundary: are we there?
                gtids = binlog.position.gtid_set
                if gtids is not None and gtids.contains(final):  # type: ignore[arg-type]
                    return

    cpu0 = _cpu()
    began = time.perf_counter()
    binlogs = [
        await client.create_binlog(name=f"c{i}", executed_gtid_set=p["start"], tables=t) for i, t in enumerate(tables)
    ]
    await asyncio.gather(*(consume(i, b) for i, b in enumerate(binlogs)))
    wall = time.perf_counter() - began
    cpu = _cpu() - cpu0
    for b in binlogs:
        await b.aclose()
    await factory.aclose()
    return {"rows": rows, "wall": wall, "cpu": cpu}


def run_pymysqlrepl(p: dict[str, Any]) -> dict[str, Any]:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    settings = {"host": p["host"], "port": p["port"], "user": p["user"], "passwd": p["password"]}
    cpu0 = _cpu()
    began = time.perf_counter()
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=p["server_id"],
        blocking=False,
        resume_stream=True,
        log_file=p["file"],
        log_pos=4,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_tables=p.get("only_tables"),
        is_mariadb=False,
    )
    rows = 0
    for event in stream:
        for _row in event.rows:
            rows += 1
    stream.close()
    return {"rows": [rows], "wall": time.perf_counter() - began, "cpu": _cpu() - cpu0}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    params = json.loads(sys.argv[1])
    if params["kind"] == "mybinlog":
        result = asyncio.run(run_mybinlog(params))
    else:
        result = run_pymysqlrepl(params)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
