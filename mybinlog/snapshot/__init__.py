"""Snapshot and backfill on Spark: copy MySQL tables into ClickHouse consistently with the binlog.

::

    from mybinlog.snapshot import SnapshotOptions, run_snapshot

    result = await run_snapshot(SnapshotOptions(source="mysql://repl:pw@db:3306", target="http://ch:8123",
                                                database="shop"))
    print(result.summary())        # an initial load also saved the replica's checkpoint at result.position

Each table is split into primary-key chunks; each Spark task records the binlog position (low watermark) right
before reading its chunk and writes the rows with ``_version = snapshot_version(watermark)``; replication then
streams from the smallest watermark, so a ReplacingMergeTree replica converges to exactly the source. No locks.
See docs/snapshot.md. Importing this package does not import PySpark, chdb or aiochclient.
"""

from __future__ import annotations

from ._chunks import Chunk, TablePlan, parse_key_range
from ._job import (
    SnapshotOptions,
    SnapshotProgress,
    SnapshotResult,
    spark_session,
)
from ._run import run_snapshot

__all__ = [
    "Chunk",
    "SnapshotOptions",
    "SnapshotProgress",
    "SnapshotResult",
    "TablePlan",
    "parse_key_range",
    "run_snapshot",
    "spark_session",
]
