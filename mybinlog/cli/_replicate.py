"""``mybinlog replicate``: MySQL/MariaDB into ClickHouse (server or embedded chdb); ``verify`` is in _verify.py."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..errors import ConfigurationError, MybinlogError
from ..replication import StartupStopped, retry_at_start
from . import _common
from ._common import ArgumentParser, add_source_arguments, add_target_arguments, source_dsn, target_url

_T = TypeVar("_T")

__all__ = ["register"]

logger = logging.getLogger("mybinlog.cli")
progress_logger = logging.getLogger("mybinlog.progress")

DEFAULT_TARGET = "chdb://./mybinlog-clickhouse"


def register(sub: Any) -> None:
    rep = sub.add_parser(
        "replicate",
        help="replicate MySQL/MariaDB databases into ClickHouse (server or embedded chdb) or Kafka",
        description="Copy the tables of one or more databases into ClickHouse, then keep them current from the "
        "binlog, exactly once. Resumes from its checkpoint (stored in ClickHouse). SIGINT/SIGTERM stop it "
        "cleanly. See docs/replication.md.",
    )
    rep.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML file naming sources, targets and replicas (all run by this process; the replicas of one "
        "source share one binlog connection), instead of --source/--target/--database and the settings; see "
        "docs/replication.md, 'One configuration for many replicas'",
    )
    rep.add_argument(
        "--source",
        action="append",
        metavar="DSN",
        help="mysql://user@host:port (required without --config); repeat it (later ones may be host:port) or list "
        "mysql://user@db1:3306,db2:3306 for the other servers of one replication topology, read in turn when one "
        "fails (docs/ha.md, 'Source failover'); the password from --password-file, MYBINLOG_PASSWORD_FILE or "
        "MYBINLOG_PASSWORD (in the URL, `ps` shows it to every user)",
    )
    add_source_arguments(rep)
    rep.add_argument(
        "--target",
        default=DEFAULT_TARGET,
        metavar="URL",
        help=f"http://user@host:8123 or chdb:///path (default {DEFAULT_TARGET}); the ClickHouse password from "
        "--target-password-file, MYBINLOG_CH_PASSWORD_FILE or MYBINLOG_CH_PASSWORD; or "
        "kafka://broker:9092[,broker2:9092][?prefix=P] for Debezium messages in Kafka, exactly once (docs/kafka.md)",
    )
    add_target_arguments(rep)
    rep.add_argument("--database", "-d", action="append", help="MySQL database (repeatable; required without --config)")
    rep.add_argument("--tables", help="comma-separated tables to replicate (default: all)")
    rep.add_argument("--target-database", help="ClickHouse database (default: the MySQL name; one database only)")
    rep.add_argument("--replica", help="replica name for the checkpoint (default: the database name)")
    rep.add_argument("--engine", default="replacing", choices=("replacing", "collapsing", "replacing_is_deleted"))
    rep.add_argument("--max-rows-in-buffer", type=int, default=65_505)
    rep.add_argument("--max-bytes-in-buffer", type=int, default=1 << 20)
    rep.add_argument("--max-flush-data-time", type=int, default=1000, metavar="MS")
    rep.add_argument(
        "--max-bytes-in-binlog-queue",
        type=int,
        default=64 << 20,
        metavar="BYTES",
        help="binlog bytes queued for the replica between the shared reader and it (default 64 MiB)",
    )
    rep.add_argument(
        "--max-bytes-in-transaction",
        type=int,
        default=256 << 20,
        metavar="BYTES",
        help="rows of one transaction held in memory; beyond, they spill to a temporary file and are written in "
        "chunks at its COMMIT (default 256 MiB; 0: no bound)",
    )
    rep.add_argument(
        "--max-flush-milliseconds-in-binlog-dispatcher",
        type=int,
        default=100,
        metavar="MS",
        help="the shared binlog dispatcher delivers at least this often (default 100)",
    )
    rep.add_argument("--initial-load", choices=("auto", "none"), default="auto")
    rep.add_argument(
        "--target-retry-seconds",
        type=float,
        default=300.0,
        metavar="S",
        help="retry a failing ClickHouse (restarting from the checkpoint, with backoff) for up to S seconds before "
        f"giving up with exit code {EXIT_UNAVAILABLE} (default 300)",
    )
    rep.add_argument(
        "--source-retry-seconds",
        type=float,
        default=300.0,
        metavar="S",
        help="reconnect to an unreachable source for up to S seconds before giving up with exit code "
        f"{EXIT_UNAVAILABLE} (default 300)",
    )
    rep.add_argument(
        "--source-heartbeat-seconds",
        type=float,
        default=5.0,
        metavar="S",
        help="the source sends a heartbeat this often while it has nothing to send (default 5)",
    )
    rep.add_argument(
        "--source-idle-seconds",
        type=float,
        default=None,
        metavar="S",
        help="no byte at all (no event, no heartbeat) for this long: the connection is dead (half-open), the next "
        "server is tried (default max(30, 4 x --source-heartbeat-seconds))",
    )
    rep.add_argument(
        "--standby",
        action="store_true",
        help="when another process writes the replica, wait for it instead of exiting with code "
        f"{EXIT_LOCKED}, and take over from the checkpoint when it dies or stops confirming its lease (active/standby; "
        "needs a ClickHouse server target and a replacing engine; docs/ha.md)",
    )
    rep.add_argument(
        "--lease-seconds",
        type=float,
        default=15.0,
        metavar="S",
        help="the replica lock's lease: the source releases the lock of a process that stopped confirming it "
        "(paused, hung, cut off) for S seconds, so that a standby takes over within about S seconds (default 15; "
        "whole seconds on the server; not for --engine collapsing)",
    )
    rep.add_argument("--once", action="store_true", help="stop once caught up with the source's current end")
    rep.add_argument("--status-interval", type=float, default=10.0, metavar="S", help="log progress every S s")
    rep.add_argument(
        "--status-address",
        metavar="ADDRESS",
        help="serve the status rows and replica progress for `mybinlog status --from ADDRESS`: "
        "unix:/path.sock, http://127.0.0.1:PORT or file:/path.json; over HTTP also Prometheus metrics (/metrics), "
        "/healthz, /readyz and a status page (/ui) (docs/operations.md)",
    )
    rep.set_defaults(func=run_replicate)


# Exit codes of `mybinlog replicate` (docs/exit-codes.md): a supervisor can tell "fix something" from "run me again
# later". The one rule for every command is _common.exit_code.
EXIT_OK = _common.EXIT_OK
EXIT_ERROR = _common.EXIT_ERROR
EXIT_USAGE = _common.EXIT_USAGE
EXIT_STOPPED_TABLES = _common.EXIT_STOPPED_TABLES
EXIT_LOCKED = _common.EXIT_LOCKED
EXIT_UNAVAILABLE = _common.EXIT_UNAVAILABLE
EXIT_INTERRUPTED = _common.EXIT_INTERRUPTED
exit_code = _common.exit_code


def run_replicate(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_replicate(args))
    except MybinlogError as exc:  # before any replica ran: the source DSN, the target, the settings
        print(f"mybinlog: error: {exc}", file=sys.stderr)
        return exit_code(exc)


_Stopped = StartupStopped  # a signal arrived while still waiting for the source or target at start-up


async def _starting(
    what: str, budget: float, option: str, stop: asyncio.Event, attempt: Callable[[], Awaitable[_T]]
) -> _T:
    """:func:`retry_at_start` (shared with the library's Replicator), its retries logged as the command's."""
    return await retry_at_start(what, budget, option, stop, attempt, log=logger)


async def _wait_for_sources(replicators: list[Any], stop: asyncio.Event) -> None:
    """Connect once to each source (its binlog settings checked), retrying within its ``source_retry_seconds``."""
    from ..source import BinlogConnection

    budgets: dict[Any, float] = {}
    for r in replicators:
        budgets[r.dsn] = max(budgets.get(r.dsn, 0.0), r.settings.source_retry_seconds)
    for dsn, budget in budgets.items():

        async def connect(dsn: Any = dsn) -> None:
            conn = await BinlogConnection.connect(dsn, heartbeat_period=0)
            await conn.aclose()

        await _starting(f"the source {dsn.display}", budget, "--source-retry-seconds", stop, connect)


async def _open_target(url: str, budget: float, stop: asyncio.Event) -> Any:
    """The target of ``url`` (:func:`open_target`), a ClickHouse server not reachable yet retried within ``budget``
    seconds (``--target-retry-seconds``), as later failures are."""
    from urllib.parse import urlsplit

    from ..clickhouse import open_target

    try:
        parts = urlsplit(url)
        where = f"ClickHouse at {parts.hostname}:{parts.port or 8123}" if parts.hostname else "ClickHouse"
    except ValueError:
        where = "ClickHouse"
    return await _starting(where, budget, "--target-retry-seconds", stop, lambda: open_target(url))


async def _replicate(args: argparse.Namespace) -> int:
    # the replicas of the command line (one source, one target, --database repeated) or of a --config file (many
    # sources and targets; the replicas of one source share one client, i.e. one binlog connection); then the same
    # run for both: one replica failing stops the others, a signal stops them all
    loop = asyncio.get_running_loop()
    stopping = False
    replicators: list[Any] = []
    tasks: list[asyncio.Future[None]] = []
    starting_stop = asyncio.Event()  # a signal while waiting for the source or the target at start-up

    def on_signal() -> None:
        nonlocal stopping
        if stopping:  # second signal: stop at once (the checkpoint still covers only what is in ClickHouse)
            for task in tasks:
                task.cancel()
            return
        stopping = True
        starting_stop.set()
        logger.warning("stopping: finishing the current batch (signal again to abort)")
        for r in replicators:
            r.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    try:
        if getattr(args, "config", None):
            made, targets = await _replicas_of_config(args, starting_stop)
        else:
            made, targets = await _replicas_of_flags(args, starting_stop)
    except _Stopped:
        return EXIT_OK
    replicators.extend(made)
    try:
        # the source is retried at start-up as after a disconnection: within --source-retry-seconds
        await _wait_for_sources(replicators, starting_stop)
    except BaseException as exc:
        clients = {id(r.client): r.client for r in replicators if r.client is not None}
        for client in clients.values():
            await client.aclose()
        for target in targets:
            await target.aclose()
        if isinstance(exc, _Stopped):
            return EXIT_OK
        raise
    tasks.extend(asyncio.ensure_future(r.run(until_caught_up=args.once)) for r in replicators)

    reporter = asyncio.ensure_future(_report(replicators, args.status_interval))
    rc = 0
    status_server: Any = None
    if args.status_address:
        from ..status import serve_status

        # the document, /metrics, /healthz, /readyz and the status page show each replica's snapshot()
        status_server = serve_status(args.status_address, replicas=lambda: replicators)
        await status_server.start()
    try:
        # one replica failing stops the others (cleanly): the process exits with that replica's code, so that a
        # supervisor sees it at once instead of a process that goes on with part of its work
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            if any(not t.cancelled() and t.exception() is not None for t in done):
                for r in replicators:
                    r.stop()
        for r, task in zip(replicators, tasks, strict=True):
            if task.cancelled():
                rc = rc or EXIT_INTERRUPTED
                continue
            error = task.exception()
            if isinstance(error, MybinlogError):
                print(f"mybinlog: error: {r.replica}: {error}", file=sys.stderr)
                rc = rc or exit_code(error)
            elif error is not None:
                raise error
    finally:
        if status_server is not None:
            await status_server.aclose()
        reporter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reporter
        clients = {id(r.client): r.client for r in replicators if r.client is not None}  # one per source
        for client in clients.values():
            await client.aclose()
        for target in targets:
            await target.aclose()
    for r in replicators:
        print(json.dumps(_status_dict(r)), flush=True)
        if r.status.stopped_tables:
            print(
                f"mybinlog: error: {r.replica}: the replication of {len(r.status.stopped_tables)} table(s) stopped: "
                + "; ".join(r.status.stopped_tables.values()),
                file=sys.stderr,
            )
            rc = rc or EXIT_STOPPED_TABLES
    return rc


async def _replicas_of_flags(args: argparse.Namespace, stop: asyncio.Event) -> tuple[list[Any], list[Any]]:
    """The replicas of ``--source``/``--target``/``--database`` (one per database) and the one target."""
    from ..clickhouse import check_standby_target
    from ..replication import ReplicationSettings, Replicator, replica_name

    dsn = source_dsn(args)
    if not args.database:
        raise ConfigurationError("--database is required (or --config FILE naming the replicas)")
    if len(args.database) > 1 and (args.target_database or args.replica):
        raise ConfigurationError("--target-database/--replica go with a single --database")
    if args.replica is not None:
        _common.check_replica_name(args.replica)
    for database in args.database:
        if not database or not database.strip():
            raise ConfigurationError("--database is empty: give the MySQL database to replicate")
    settings = ReplicationSettings(
        engine=args.engine,
        max_rows_in_buffer=args.max_rows_in_buffer,
        max_bytes_in_buffer=args.max_bytes_in_buffer,
        max_flush_data_time=args.max_flush_data_time,
        max_bytes_in_transaction=args.max_bytes_in_transaction,
        max_bytes_in_binlog_queue=args.max_bytes_in_binlog_queue,
        max_flush_milliseconds_in_binlog_dispatcher=args.max_flush_milliseconds_in_binlog_dispatcher,
        initial_load=args.initial_load,
        target_retry_seconds=args.target_retry_seconds,
        source_retry_seconds=args.source_retry_seconds,
        source_heartbeat_seconds=args.source_heartbeat_seconds,
        source_idle_seconds=args.source_idle_seconds,
        standby=args.standby,
        lease_seconds=args.lease_seconds,
    )
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    if _is_kafka(args.target):
        sinks = _kafka_sinks(args.target, [(replica_name(args.replica, db), db) for db in args.database], args)
        replicators = [
            Replicator(dsn, sink, database=db, tables=tables, replica=args.replica, settings=settings)
            for db, sink in zip(args.database, sinks, strict=True)
        ]
        return replicators, sinks
    url = target_url(args)
    if settings.standby:
        check_standby_target(url)  # before opening: opening a chdb target creates its directory
    target = await _open_target(url, args.target_retry_seconds, stop)
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
    return replicators, [target]


def _is_kafka(url: str | None) -> bool:
    return bool(url) and str(url).lower().startswith("kafka:")


def _kafka_sinks(url: str, replicas: list[tuple[str, str]], args: argparse.Namespace | None) -> list[Any]:
    """One :class:`~mybinlog.kafka.KafkaSink` per ``(replica, database)`` of the ``kafka://`` target ``url``
    (refused when malformed, before anything connects; exactly-once or at-least-once is logged when each starts)."""
    from ..kafka import parse_kafka_url

    target = parse_kafka_url(url)
    if args is not None:
        if getattr(args, "target_password_file", None):
            raise ConfigurationError("--target-password-file goes with a ClickHouse server target, not kafka://")
        if getattr(args, "target_database", None):
            raise ConfigurationError(
                "--target-database goes with a ClickHouse target; a Kafka target's topics are named by its "
                "prefix and topic_pattern (kafka://broker:9092?prefix=...)"
            )
        if getattr(args, "standby", False):
            raise ConfigurationError("--standby needs a ClickHouse server target (the Kafka producer fences instead)")
    for replica, database in replicas:
        logger.info("replica %s: %s -> %s", replica, database, target.description)
    return [target.sink(replica=replica, database=database) for replica, database in replicas]


# the options that describe replicas: with --config, the file does (the others, --once and the status options,
# apply to the whole process and stay on the command line)
_REPLICA_OPTIONS = {
    "source": "--source",
    "password_file": "--password-file",
    "target": "--target",
    "target_password_file": "--target-password-file",
    "database": "--database",
    "tables": "--tables",
    "target_database": "--target-database",
    "replica": "--replica",
    "engine": "--engine",
    "max_rows_in_buffer": "--max-rows-in-buffer",
    "max_bytes_in_buffer": "--max-bytes-in-buffer",
    "max_flush_data_time": "--max-flush-data-time",
    "max_bytes_in_transaction": "--max-bytes-in-transaction",
    "max_bytes_in_binlog_queue": "--max-bytes-in-binlog-queue",
    "max_flush_milliseconds_in_binlog_dispatcher": "--max-flush-milliseconds-in-binlog-dispatcher",
    "initial_load": "--initial-load",
    "target_retry_seconds": "--target-retry-seconds",
    "source_retry_seconds": "--source-retry-seconds",
}


def _replicate_parser() -> argparse.ArgumentParser:
    """A parser of ``replicate`` alone, for its defaults: an option whose value differs from its default was given."""
    sub = ArgumentParser(add_help=False).add_subparsers()
    register(sub)
    parser: argparse.ArgumentParser = sub.choices["replicate"]
    return parser


async def _replicas_of_config(args: argparse.Namespace, stop: asyncio.Event) -> tuple[list[Any], list[Any]]:
    """The replicas of the ``--config`` file, each with its source's shared client, and the targets they use.

    Everything that can be wrong with the file or its passwords is raised (ConfigurationError: exit 2) before
    anything connects."""
    from ..clickhouse import check_standby_target
    from ..replication import ReplicationSettings, Replicator
    from ..sharing import get_binlog_client
    from ._config import load_config

    defaults = _replicate_parser()
    options = dict(_REPLICA_OPTIONS)
    for f in dataclasses.fields(ReplicationSettings):  # an option named after a setting: the file's key
        options.setdefault(f.name, "--" + f.name.replace("_", "-"))
    given = [
        flag
        for dest, flag in options.items()
        if hasattr(args, dest) and getattr(args, dest) != defaults.get_default(dest)
    ]
    if given:
        raise ConfigurationError(
            f"{', '.join(given)} cannot go with --config: the file names the sources, targets and replicas and "
            "their settings (a [settings] table holds the defaults); the command line keeps --once, "
            "--status-address and --status-interval"
        )
    config = load_config(args.config)
    used_sources = list(dict.fromkeys(r.source for r in config.replicas))
    used_targets = list(dict.fromkeys(r.target for r in config.replicas))
    # passwords now: a missing file or variable is reported before anything connects
    dsns = {name: config.source_dsn(name) for name in used_sources}
    urls = {name: config.target_url(name) for name in used_targets}
    # the file's status options, unless the command line gives them (the status server and reporter read args)
    if getattr(args, "status_address", None) is None:
        args.status_address = config.status_address
    if config.status_interval is not None and args.status_interval == defaults.get_default("status_interval"):
        args.status_interval = config.status_interval
    kafka = {name for name in used_targets if _is_kafka(urls[name])}
    for spec in config.replicas:
        if spec.settings.standby and spec.target in kafka:
            raise ConfigurationError(f"{config.path}: replica {spec.name}: standby needs a ClickHouse server target")
        if spec.settings.standby:
            check_standby_target(urls[spec.target])  # before opening: opening a chdb target creates its directory
    sinks = {
        spec.name: _kafka_sinks(urls[spec.target], [(spec.name, spec.database)], None)[0]
        for spec in config.replicas
        if spec.target in kafka
    }
    targets: dict[str, Any] = {}
    try:
        for name, url in urls.items():
            if name in kafka:
                continue
            budget = max(c.settings.target_retry_seconds for c in config.replicas if c.target == name)
            targets[name] = await _open_target(url, budget, stop)
    except BaseException:
        for opened in targets.values():
            await opened.aclose()
        raise
    clients = {}
    for name, dsn in dsns.items():
        source = config.sources[name]
        clients[name] = get_binlog_client(
            dsn,
            max_bytes_in_binlog_dispatcher_buffer=source.max_bytes_in_binlog_dispatcher_buffer,
            max_flush_milliseconds_in_binlog_dispatcher=source.max_flush_milliseconds_in_binlog_dispatcher,
            stream_options=config.stream_options(name),  # reconnects, heartbeats, the half-open bound
        )
    replicators = [
        Replicator(
            dsns[r.source],
            sinks[r.name] if r.name in sinks else targets[r.target],
            database=r.database,
            tables=r.tables,
            target_database=r.target_database,
            replica=r.name,
            settings=r.settings,
            client=clients[r.source],
        )
        for r in config.replicas
    ]
    for r in replicators:
        logger.info(
            "%s: replica %s: %s/%s -> %s %s (engine %s)",
            config.path,
            r.replica,
            r.dsn.display,
            r.database,
            r.sink.description,
            r.target_database,
            r.settings.engine,
        )
    return replicators, [*targets.values(), *sinks.values()]


def _status_dict(r: Any) -> dict[str, Any]:
    from ..replication import is_leader, observe_source

    observe_source(r)  # the server being read and the source failovers
    s = r.status
    return {
        "replica": s.replica,
        "leader": is_leader(r),
        "epoch": s.epoch,
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
        "retries": s.retries,
        "detaches": s.detaches,
        "source_server": s.source_server,
        "source_server_id": s.source_server_id,
        "source_failovers": s.source_failovers,
        "last_source_failover": s.last_source_failover,
        "load_rows": s.load_rows,
        "delivery": s.delivery,
        "error": s.error,
    }


async def _report(replicators: list[Any], interval: float) -> None:
    if interval <= 0:
        return
    while True:
        await asyncio.sleep(interval)  # periodic progress output, not synchronisation
        for r in replicators:
            # INFO on the progress logger: shown without -v (like the initial load's progress), not a warning
            progress_logger.info("status %s", json.dumps(_status_dict(r)))
