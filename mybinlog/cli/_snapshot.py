"""Command line of the snapshot job, shared by ``mybinlog snapshot`` and ``spark-submit mybinlog/snapshot/job.py``.

Progress lines go to stderr (``rows done/total, rate, ETA``), the summary (or ``--json``) to stdout. Under
spark-submit, whose PythonRunner merges the Python driver's stderr into its stdout, progress lines, log records and
errors go to the JVM's ``System.err`` (:class:`_DriverStderr`).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any, TextIO

from ..errors import ConfigurationError, MybinlogError
from ._common import (
    ArgumentParser,
    add_source_arguments,
    add_target_arguments,
    check_replica_name,
    exit_code,
    source_dsn,
    target_url,
)

__all__ = ["add_arguments", "main", "options_from_args", "register", "run"]

DEFAULT_TARGET = "chdb://./mybinlog-clickhouse"


def add_arguments(parser: argparse.ArgumentParser, *, spark_submit: bool = False) -> None:
    src = parser.add_argument_group("source and target")
    src.add_argument(
        "--source",
        "--dsn",
        dest="source",
        required=True,
        action="append",
        metavar="DSN",
        help="mysql://user@host:port[/database] (repeatable, or a list db1:3306,db2:3306: the servers of one "
        "topology, the first that answers is read); the password from --password-file, MYBINLOG_PASSWORD_FILE or "
        "MYBINLOG_PASSWORD (in the URL, `ps` shows it to every user)",
    )
    add_source_arguments(src)
    src.add_argument(
        "--target",
        default=DEFAULT_TARGET,
        metavar="URL",
        help=f"http://user@host:8123 or chdb:///path (default {DEFAULT_TARGET}); the ClickHouse password from "
        "--target-password-file, MYBINLOG_CH_PASSWORD_FILE or MYBINLOG_CH_PASSWORD; or kafka://broker:9092?prefix=P "
        "(Debezium op r messages, then `replicate --target kafka://` goes on: docs/kafka.md)",
    )
    add_target_arguments(src)
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
    from ..snapshot import SnapshotOptions, parse_key_range

    dsn = source_dsn(args)
    database = args.database or dsn.database
    if not database:
        raise ConfigurationError("name the MySQL database: --database, or a DSN ending in /database")
    hold = None
    if args.test_hold:
        n, _, path = args.test_hold.partition(":")
        hold = (int(n), path)
    options = SnapshotOptions(
        source=dsn,
        target=target_url(args),  # with the password of --target-password-file: never print it
        database=database,
        tables=tuple(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else (),
        target_database=args.target_database,
        replica=check_replica_name(args.replica) if args.replica is not None else None,
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


class _DriverStderr(io.TextIOBase):
    """stderr of the spark-submit driver: the JVM's ``System.err`` once :meth:`attach` found it, else Python's.

    Spark's PythonRunner starts the Python driver with its stderr merged into its stdout
    (``redirectErrorStream(true)``) and copies that to spark-submit's stdout, which must hold only the result.
    The JVM's ``System.err``, reached through spark-submit's py4j gateway, is spark-submit's stderr.
    """

    def __init__(self, fallback: TextIO) -> None:
        self._fallback = fallback
        self._jvm_err: Any = None
        self._busy = threading.local()  # a write made by py4j itself (its logging) must not call py4j again

    def attach(self) -> None:
        """Under spark-submit (which tells the driver its gateway in ``PYSPARK_GATEWAY_PORT``), write to the JVM's
        ``System.err`` from now on. The gateway exists before the SparkSession: connecting to it is the first
        thing ``SparkContext()`` does (``_ensure_initialized``, checked with PySpark 4.3)."""
        if "PYSPARK_GATEWAY_PORT" not in os.environ:
            return
        try:
            from pyspark import SparkContext

            context: Any = SparkContext
            context._ensure_initialized()
            self._jvm_err = context._jvm.java.lang.System.err
        except Exception:  # no gateway: Python's stderr, as before
            logging.getLogger("mybinlog.snapshot").debug("no JVM System.err", exc_info=True)

    def release(self) -> None:
        """Back to Python's stderr (at exit the gateway may be gone)."""
        self._jvm_err = None

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        jvm_err = self._jvm_err
        if jvm_err is not None and not getattr(self._busy, "on", False):
            self._busy.on = True
            try:
                jvm_err.print(text)
                return len(text)
            except Exception:  # noqa: BLE001 - the gateway is gone (the JVM stopped): Python's stderr will do
                self._jvm_err = None
            finally:
                self._busy.on = False
        return self._fallback.write(text)

    def flush(self) -> None:
        jvm_err = self._jvm_err
        if jvm_err is not None and not getattr(self._busy, "on", False):
            self._busy.on = True
            try:
                jvm_err.flush()
                return
            except Exception:  # noqa: BLE001 - as in write()
                self._jvm_err = None
            finally:
                self._busy.on = False
        self._fallback.flush()


def run(args: argparse.Namespace, *, spark_submit: bool = False, err: TextIO | _DriverStderr | None = None) -> int:
    """Run the snapshot described by ``args``; returns the exit code (0 done, 1 error). Progress lines go to
    ``err`` (default stderr)."""
    from ..snapshot import SnapshotOptions, SnapshotProgress, run_snapshot, spark_session

    err = err or sys.stderr
    options, master = options_from_args(args)
    assert isinstance(options, SnapshotOptions)
    if not spark_submit and master is None:
        master = f"local[{options.parallelism}]" if options.parallelism else "local[*]"

    def progress(p: SnapshotProgress) -> None:
        print(p.line(), file=err, flush=True)

    async def main() -> int:
        # the first line at once: starting Spark takes seconds, planning (table sizes, key ranges) some more
        tables = ", ".join(options.tables) if options.tables else "all tables"
        print(
            f"snapshot {options.database} ({tables}): starting Spark ({master or 'as spark-submit configured'}) and "
            "planning chunks...",
            file=err,
            flush=True,
        )
        if spark_submit:  # spark-submit's JVM is up: the session is there at once, and stays
            spark = await asyncio.to_thread(spark_session)
            result = await run_snapshot(options, spark=spark, on_progress=progress)
        else:  # Spark starts while the driver plans; run_snapshot stops it at the end
            result = await run_snapshot(options, master=master, on_progress=progress)
        if args.json:
            print(json.dumps(result.to_dict(), indent=2))
        else:
            print(result.summary())
        return 0

    return asyncio.run(main())


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit mybinlog/snapshot/job.py --source ... --target ...``"""
    parser = ArgumentParser(
        prog="job.py",
        description="mybinlog snapshot job: copy MySQL/MariaDB tables into ClickHouse in parallel primary-key "
        "chunks, consistent with the binlog (docs/snapshot.md).",
    )
    add_arguments(parser, spark_submit=True)
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    err = _DriverStderr(sys.stderr)  # stdout is for the result only
    err.attach()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=err)
    logging.getLogger("py4j").setLevel(logging.WARNING)  # a line per gateway call, one at exit (to Python's stderr)
    logging.captureWarnings(True)  # Python's warnings too
    try:
        return run(args, spark_submit=True, err=err)
    except MybinlogError as exc:
        print(f"mybinlog snapshot: error: {exc}", file=err, flush=True)
        return exit_code(exc)
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001 - not Python's stderr, which spark-submit sends to stdout
        traceback.print_exc(file=err)
        err.flush()
        return 1
    finally:
        err.release()


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "snapshot",
        help="copy MySQL tables into ClickHouse with Spark, consistent with the binlog (initial load, backfill)",
        description="Copy one or many MySQL/MariaDB tables into ClickHouse in parallel primary-key chunks, without "
        "locks and consistent with the binlog: each chunk records its binlog position before it is read, and the "
        "stream starts at the smallest one. With no checkpoint for the replica this is the initial load (it saves "
        "the checkpoint replication starts from); otherwise a backfill while streaming goes on. Runs Spark in "
        "local mode; on a cluster use spark-submit mybinlog/snapshot/job.py. See docs/snapshot.md.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
