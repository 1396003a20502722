"""``mybinlog replicate`` and ``mybinlog verify``: MySQL/MariaDB into ClickHouse (server or embedded chdb)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from typing import Any

from ._dsn import DSN
from ._exceptions import MybinlogError

__all__ = ["register"]

logger = logging.getLogger("mybinlog.cli")

DEFAULT_TARGET = "chdb://./mybinlog-clickhouse"


def _source(text: str | None) -> DSN:
    if not text:
        raise SystemExit("mybinlog: error: --source mysql://user:password@host:port is required")
    return DSN.parse(text)


def register(sub: Any) -> None:
    rep = sub.add_parser(
        "replicate",
        help="replicate MySQL/MariaDB databases into ClickHouse (server or embedded chdb)",
        description="Copy the tables of one or more databases into ClickHouse, then keep them current from the "
        "binlog, exactly once. Resumes from its checkpoint (stored in ClickHouse). SIGINT/SIGTERM stop it "
        "cleanly. See docs/replication.md.",
    )
    rep.add_argument("--source", required=True, metavar="DSN", help="mysql://user:password@host:port")
    rep.add_argument(
        "--target",
        default=DEFAULT_TARGET,
        metavar="URL",
        help=f"http://user:password@host:8123 or chdb:///path (default {DEFAULT_TARGET})",
    )
    rep.add_argument("--database", "-d", action="append", required=True, help="MySQL database (repeatable)")
    rep.add_argument("--tables", help="comma-separated tables to replicate (default: all)")
    rep.add_argument("--target-database", help="ClickHouse database (default: the MySQL name; one database only)")
    rep.add_argument("--replica", help="replica name for the checkpoint (default: the database name)")
    rep.add_argument("--engine", default="replacing", choices=("replacing", "collapsing", "replacing_is_deleted"))
    rep.add_argument("--max-rows-in-buffer", type=int, default=65_505)
    rep.add_argument("--max-bytes-in-buffer", type=int, default=1 << 20)
    rep.add_argument("--max-flush-data-time", type=int, default=1000, metavar="MS")
    rep.add_argument(
        "--max-flush-milliseconds-in-binlog-dispatcher",
        type=int,
        default=100,
        metavar="MS",
        help="the shared binlog dispatcher delivers at least this often (default 100)",
    )
    rep.add_argument("--initial-load", choices=("auto", "none"), default="auto")
    rep.add_argument("--once", action="store_true", help="stop once caught up with the source's current end")
    rep.add_argument("--status-interval", type=float, default=10.0, metavar="S", help="log progress every S s")
    rep.add_argument(
        "--status-address",
        metavar="ADDRESS",
        help="serve the status rows and replica progress for `mybinlog status --from ADDRESS`: "
        "unix:/path.sock, http://127.0.0.1:PORT or file:/path.json",
    )
    rep.set_defaults(func=run_replicate)

    ver = sub.add_parser(
        "verify",
        help="compare MySQL tables with their ClickHouse replicas (counts and checksums)",
        description="Compare each table of a MySQL database with its ClickHouse replica: row counts and an "
        "order-independent checksum over all columns; print the differences. Exit 0 equal, 1 different, 2 error.",
    )
    from .replication._verify import add_verify_arguments, run_verify

    add_verify_arguments(ver)
    ver.set_defaults(func=lambda args: _run(run_verify(args)))


def _run(coro: Any) -> int:
    try:
        return int(asyncio.run(coro))
    except MybinlogError as exc:
        print(f"mybinlog: error: {exc}", file=sys.stderr)
        return 2


def run_replicate(args: argparse.Namespace) -> int:
    return asyncio.run(_replicate(args))


async def _replicate(args: argparse.Namespace) -> int:
    from .replication import ReplicationSettings, Replicator, open_target

    dsn = _source(args.source)
    if len(args.database) > 1 and (args.target_database or args.replica):
        raise SystemExit("mybinlog: error: --target-database/--replica go with a single --database")
    settings = ReplicationSettings(
        engine=args.engine,
        max_rows_in_buffer=args.max_rows_in_buffer,
        max_bytes_in_buffer=args.max_bytes_in_buffer,
        max_flush_data_time=args.max_flush_data_time,
        max_flush_milliseconds_in_binlog_dispatcher=args.max_flush_milliseconds_in_binlog_dispatcher,
        initial_load=args.initial_load,
    )
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    target = await open_target(args.target)
    replicators = [
        Replicator(
            dsn,
            target,
            database=db,
            tables=tables,
            target_database=args.target_database,
            replica=args.replica,
            settings=settings,
        )
        for db in args.database
    ]
    loop = asyncio.get_running_loop()
    stopping = False

    def on_signal() -> None:
        nonlocal stopping
        if stopping:  # second signal: stop at once (the checkpoint still covers only what is in ClickHouse)
            for task in tasks:
                task.cancel()
            return
        stopping = True
        logger.warning("stopping: finishing the current batch (signal again to abort)")
        for r in replicators:
            r.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    tasks = [asyncio.ensure_future(r.run(until_caught_up=args.once)) for r in replicators]
    reporter = asyncio.ensure_future(_report(replicators, args.status_interval))
    rc = 0
    status_server: Any = None
    if args.status_address:
        from ._sharing import serve_status

        status_server = serve_status(
            args.status_address, extra=lambda: {"replicas": [_status_dict(r) for r in replicators]}
        )
        await status_server.start()
    try:
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for r, result in zip(replicators, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                rc = rc or 130
            elif isinstance(result, MybinlogError):
                print(f"mybinlog: error: {r.replica}: {result}", file=sys.stderr)
                rc = 1
            elif isinstance(result, BaseException):
                raise result
    finally:
        if status_server is not None:
            await status_server.aclose()
        reporter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reporter
        for r in replicators:
            if r.client is not None:
                await r.client.aclose()
                break
        await target.aclose()
    for r in replicators:
        print(json.dumps(_status_dict(r)), flush=True)
        if r.status.stopped_tables:
            rc = rc or 1
    return rc


def _status_dict(r: Any) -> dict[str, Any]:
    s = r.status
    return {
        "replica": s.replica,
        "database": s.database,
        "target_database": s.target_database,
        "state": s.state,
        "position": s.position,
        "rows_written": s.rows_written,
        "transactions": s.transactions,
        "batches": s.batches,
        "ddl_applied": s.ddl_applied,
        "lag_seconds": s.lag_seconds,
        "stopped_tables": s.stopped_tables,
    }


async def _report(replicators: list[Any], interval: float) -> None:
    if interval <= 0:
        return
    while True:
        await asyncio.sleep(interval)  # periodic progress output, not synchronisation
        for r in replicators:
            logger.warning("status %s", json.dumps(_status_dict(r)))
