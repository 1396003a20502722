"""Command line of the snapshot job, shared by ``mybinlog snapshot`` and ``spark-submit mybinlog/snapshot/job.py``.

Progress lines go to stderr (``rows done/total, rate, ETA``), the summary (or ``--json``) to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from typing import TextIO

from .._dsn import DSN
from .._exceptions import ConfigurationError, MybinlogError
from ._chunks import parse_key_range

__all__ = ["add_arguments", "main", "options_from_args", "run"]

DEFAULT_TARGET = "chdb://./mybinlog-clickhouse"


def add_arguments(parser: argparse.ArgumentParser, *, spark_submit: bool = False) -> None:
    src = parser.add_argument_group("source and target")
    src.add_argument(
        "--source",
        "--dsn",
        dest="source",
        required=True,
        metavar="DSN",
        help="mysql://user:password@host:port[/database] (password also from MYBINLOG_PASSWORD)",
    )
    src.add_argument(
        "--target",
        default=DEFAULT_TARGET,
        metavar="URL",
        help=f"http://user:password@host:8123 or chdb:///path (default {DEFAULT_TARGET}); "
        "the ClickHouse password may come from MYBINLOG_CH_PASSWORD",
    )
    src.add_argument("--database", "-d", help="MySQL database (default: the DSN's database)")
    src.add_argument("--tables", help="comma-separated tables (default: every base table of the database)")
    src.add_argument("--target-database", help="ClickHouse database (default: the MySQL database name)")
    src.add_argument("--replica", help="replica name of the checkpoint (default: the database name)")
    src.add_argument("--engine", default="replacing", choices=("replacing", "replacing_is_deleted"))
    src.add_argument("--meta-database", default="mybinlog_meta", help="where checkpoints and snapshot state live")

    what = parser.add_argument_group("what to copy")
    what.add_argument(
        "--mode",
        choices=("auto", "initial", "backfill"),
        default="auto",
        help="initial load (no checkpoint yet: saves the stream's starting checkpoint) or backfill (streaming "
        "goes on; the checkpoint is not touched); auto decides from the checkpoint (default)",
    )
    what.add_argument("--where", metavar="SQL", help="copy only rows meeting this MySQL condition (backfill)")
    what.add_argument(
        "--key-range",
        metavar="LOW:HIGH",
        help="copy only rows whose first key column is in [LOW, HIGH] (either side may be empty)",
    )
    what.add_argument("--recreate", action="store_true", help="initial load: drop and recreate existing tables")

    run = parser.add_argument_group("how")
    run.add_argument("--chunk-rows", type=int, metavar="N", help="rows per chunk (default: ~4 chunks per core)")
    run.add_argument("--parallelism", type=int, metavar="N", help="at most N tasks (MySQL connections) at once")
    run.add_argument("--batch-rows", type=int, default=100_000, metavar="N", help="rows per insert (100000)")
    run.add_argument("--batch-mb", type=int, default=32, metavar="MB", help="bytes per insert (32 MiB)")
    if not spark_submit:
        run.add_argument(
            "--master",
            default=None,
            help="Spark master (default local[N] with N = --parallelism, else local[*]); "
            "for a cluster use spark-submit mybinlog/snapshot/job.py (docs/snapshot.md)",
        )
    run.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="ID",
        help="continue an interrupted snapshot (default: the newest unfinished one of the replica)",
    )
    run.add_argument("--snapshot-id", metavar="ID", help="name a new snapshot (default: generated)")
    run.add_argument("--spool-dir", metavar="DIR", help="chdb target: where executors leave batches for the driver")
    run.add_argument("--progress-interval", type=float, default=2.0, metavar="S", help="seconds between lines")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--test-hold", metavar="N:PATH", help=argparse.SUPPRESS)
    if spark_submit:
        parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")


def options_from_args(args: argparse.Namespace) -> tuple[object, str | None]:
    """(SnapshotOptions, master) from parsed arguments."""
    from ._job import SnapshotOptions

    dsn = DSN.parse(args.source)
    database = args.database or dsn.database
    if not database:
        raise ConfigurationError("name the MySQL database: --database, or a DSN ending in /database")
    hold = None
    if args.test_hold:
        n, _, path = args.test_hold.partition(":")
        hold = (int(n), path)
    options = SnapshotOptions(
        source=dsn,
        target=args.target,
        database=database,
        tables=tuple(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else (),
        target_database=args.target_database,
        replica=args.replica,
        engine=args.engine,
        mode=args.mode,
        where=args.where,
        key_range=parse_key_range(args.key_range) if args.key_range else None,
        chunk_rows=args.chunk_rows,
        parallelism=args.parallelism,
        batch_rows=args.batch_rows,
        batch_bytes=args.batch_mb << 20,
        resume=args.resume,
        snapshot_id=args.snapshot_id,
        meta_database=args.meta_database,
        spool_dir=args.spool_dir,
        recreate=args.recreate,
        progress_interval=args.progress_interval,
        hold=hold,
    )
    master = getattr(args, "master", None)
    return options, master


def run(args: argparse.Namespace, *, spark_submit: bool = False, err: TextIO | None = None) -> int:
    """Run the snapshot described by ``args``; returns the exit code (0 done, 1 error)."""
    from ._job import SnapshotOptions, SnapshotProgress, run_snapshot, spark_session

    err = err or sys.stderr
    options, master = options_from_args(args)
    assert isinstance(options, SnapshotOptions)
    if not spark_submit and master is None:
        master = f"local[{options.parallelism}]" if options.parallelism else "local[*]"

    def progress(p: SnapshotProgress) -> None:
        print(p.line(), file=err, flush=True)

    async def main() -> int:
        spark = await asyncio.to_thread(spark_session, master)
        try:
            result = await run_snapshot(options, spark=spark, on_progress=progress)
        finally:
            if not spark_submit:
                await asyncio.to_thread(spark.stop)
        if args.json:
            print(json.dumps(result.to_dict(), indent=2))
        else:
            print(result.summary())
        return 0

    return asyncio.run(main())


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit mybinlog/snapshot/job.py --source ... --target ...``"""
    parser = argparse.ArgumentParser(
        prog="job.py",
        description="mybinlog snapshot job: copy MySQL/MariaDB tables into ClickHouse in parallel primary-key "
        "chunks, consistent with the binlog (docs/snapshot.md).",
    )
    add_arguments(parser, spark_submit=True)
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return run(args, spark_submit=True)
    except MybinlogError as exc:
        print(f"mybinlog snapshot: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
