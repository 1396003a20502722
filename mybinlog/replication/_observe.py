"""What a replicator shows about itself beyond its counters: :func:`replica_snapshot` (``Replicator.snapshot()``: the
status as a JSON-able dict with the values that change by the second: lag, checkpoint age, the connection) and
:func:`count_batch` (the rows of a written batch by table and kind, for ``rows_by_table``). See
docs/operations.md.

The lag is an upper bound computed when asked: now minus the later of the source commit time of the last
transaction written (once this process has saved a checkpoint) and the last moment the stream had nothing to write
(``ReplicaStatus.idle_at``). It grows while the replica does not keep up, retries or is stuck, and stays near 0
while it keeps up, however long the source has been idle; a burst after a quiet hour does not read as an hour.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._text import duration

if TYPE_CHECKING:
    from .._checkpoint import Checkpoint
    from ..sharing import Binlog
    from ._settings import ReplicaStatus

__all__ = ["Observed", "count_batch", "count_rows", "is_leader", "observe_source", "replica_snapshot"]


class Observed(Protocol):
    """What the functions below read of a replica (the replicator; its lease and client are read when present)."""

    @property
    def status(self) -> ReplicaStatus: ...
    @property
    def binlog(self) -> Binlog | None: ...
    @property
    def checkpoint(self) -> Checkpoint | None: ...


progress_logger = logging.getLogger("mybinlog.progress")


def count_batch(
    counts: dict[str, dict[str, int]], batch: Mapping[str, Mapping[Any, Any]], tables: Mapping[str, Any]
) -> None:
    """Add a written batch (table -> key -> change) to ``counts``, for the tables the replica writes."""
    for name, changes in batch.items():
        if name in tables and changes:
            count_rows(counts, name, changes.values())


def count_rows(counts: dict[str, dict[str, int]], table: str, changes: Iterable[Any]) -> None:
    """Add a written batch's net changes of ``table`` to ``counts`` by kind: ``delete`` (the key is gone after the
    batch), ``insert`` (it was new in the batch), ``update`` (it existed before and still does)."""
    inserts = updates = deletes = 0
    for first_before, after, _last, _version in changes:  # _batch.Change tuples
        if after is None:
            deletes += 1
        elif first_before is None:
            inserts += 1
        else:
            updates += 1
    kinds = counts.setdefault(table, {"insert": 0, "update": 0, "delete": 0})
    kinds["insert"] += inserts
    kinds["update"] += updates
    kinds["delete"] += deletes


def is_leader(r: Observed) -> bool:
    """Whether this process writes the replica now: it claimed it (``status.leader``), is not a standby, did not fail
    or lose its lease, and its lease cannot have expired meanwhile (a leader paused, hung or cut off for longer than
    the lease has most likely been replaced: it says so at once when it resumes, before its next confirmation fails
    and it stops). A failed process released its lock: it leads nothing. See docs/ha.md."""
    s = r.status
    if not s.leader or s.state in ("standby", "failed"):
        return False
    lease = getattr(r, "_lease", None)  # ReplicaLease while it runs
    return lease is None or (lease.failure is None and not lease.maybe_expired())


def observe_source(r: Observed) -> None:
    """Update the replica status's source fields from its binlog connection: ``source_server`` (``host:port``
    read now) and ``source_server_id`` from the dispatcher serving its consumer (its :class:`~mybinlog.BinlogStream`),
    ``source_failovers`` and ``last_source_failover`` from its client's totals (every dispatcher it ran, so the count
    never goes back when the consumer is reopened on another dispatcher). See docs/ha.md, "Source failover"."""
    s = r.status
    binlog = r.binlog
    dispatcher = binlog.dispatcher if binlog is not None else None
    if dispatcher is not None and dispatcher.source_server:
        s.source_server = dispatcher.source_server
        s.source_server_id = dispatcher.source_server_id
    client = getattr(r, "client", None)  # the replica's shared client, once it made or was given one
    if client is not None:
        stats = client.statistics()
        s.source_failovers = max(s.source_failovers, stats.failovers)
        s.last_source_failover = stats.last_failover or s.last_source_failover


def replica_snapshot(r: Observed, now: float | None = None) -> dict[str, Any]:
    """The replica's status as a dict (every :class:`ReplicaStatus` field, the source check flattened) plus
    ``lag_seconds`` computed now (see the module docstring; the stored value once it stopped), ``detached`` (its
    consumer was detached from the shared connection and it has not read that yet: counted in ``detaches``),
    ``connected`` (its binlog connection is up; None when it is not streaming), ``checkpoint_age_seconds`` and
    ``checkpoint_timestamp``."""
    s = r.status
    now = time.time() if now is None else now
    observe_source(r)
    # copied field by field (dataclasses.asdict recurses into every table's counters: 10x slower with thousands)
    out = {f.name: getattr(s, f.name) for f in dataclasses.fields(s)}
    out["stopped_tables"] = dict(s.stopped_tables)
    out["rows_by_table"] = {table: dict(kinds) for table, kinds in s.rows_by_table.items()}
    out.pop("binlog_check", None)
    check = dataclasses.asdict(s.binlog_check) if s.binlog_check is not None else {}
    out.pop("idle_at", None)
    out.pop("checkpoint_time", None)
    out["leader"] = is_leader(r)
    cp = r.checkpoint
    ts = cp.position.timestamp if cp is not None and cp.loading is None else 0
    if s.state in ("streaming", "retrying"):
        written = ts if s.checkpoint_time is not None else 0  # a checkpoint of this process: its time is current
        base = max(written, s.idle_at or 0.0)
        out["lag_seconds"] = round(max(0.0, now - base), 3) if base else None
    binlog = r.binlog
    # detached from the shared connection now: the replica (busy writing) has not read that yet, nor counted it
    out["detached"] = bool(binlog is not None and getattr(binlog, "detached", False))
    if out["detached"]:
        out["detaches"] = s.detaches + 1
    dispatcher = binlog.dispatcher if binlog is not None else None
    if dispatcher is not None:
        out["connected"] = dispatcher.connected
    else:
        out["connected"] = False if s.state == "streaming" else None
    out["checkpoint_age_seconds"] = None if s.checkpoint_time is None else round(max(0.0, now - s.checkpoint_time), 3)
    out["checkpoint_timestamp"] = ts or None
    out["lag_bytes"] = check.get("lag_bytes")
    out["binlog_purge_risk"] = check.get("risk")
    out["binlog_purge_reason"] = check.get("reason")
    out["binlog_retention_seconds"] = check.get("retention_seconds")
    out["binlog_retention_left_seconds"] = check.get("retention_left_seconds")
    out["binlog_files"] = check.get("files")
    return out


class _LoadProgress:
    """Progress lines of the initial load (logger ``mybinlog.progress``, shown by the CLI without -v): rows copied
    of the estimate, rate and ETA, at most every ``interval`` seconds, and one final line."""

    def __init__(self, replica: str, tables: int, estimate: int, interval: float = 2.0) -> None:
        self.replica = replica
        self.tables = tables
        self.estimate = estimate
        self.interval = interval
        self.started = self.last = time.monotonic()

    def update(self, rows: int, table: str) -> None:
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        rate = rows / (now - self.started) if now > self.started else 0.0
        total = max(self.estimate, rows)
        eta = f"ETA {duration((total - rows) / rate)}" if rate > 0 else "ETA ?"
        progress_logger.info(
            "%s: initial load %s/~%s rows (%.0f%%) of %d tables, now %s, %s rows/s, %s",
            self.replica,
            f"{rows:,}",
            f"{total:,}",
            100.0 * rows / total if total else 100.0,
            self.tables,
            table,
            f"{rate:,.0f}",
            eta,
        )

    def finish(self, rows: int) -> None:
        seconds = time.monotonic() - self.started
        progress_logger.info(
            "%s: initial load done: %s rows of %d tables in %s",
            self.replica,
            f"{rows:,}",
            self.tables,
            duration(seconds),
        )
