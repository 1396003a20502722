"""``mybinlog snapshot``: the Spark snapshot/backfill job, run in local mode (see mybinlog/snapshot/_cli.py).

Importing this module imports neither PySpark nor ClickHouse clients: ``mybinlog --help`` stays fast.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    from .snapshot._cli import add_arguments

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


def run(args: argparse.Namespace) -> int:
    from .snapshot._cli import run as run_snapshot_cli

    return run_snapshot_cli(args)
