"""The status rows of the sharing layer: :class:`BinlogStatus`, one per live consumer with exactly the columns of
ClickHouse's ``system.mysql_binlogs``, and the per-second rates of its dispatcher columns; and a client's totals
since it was created (:class:`BinlogClientStatistics`, what the Prometheus counters count).

Each dispatcher makes the rows of its consumers (:meth:`BinlogEventsDispatcher.status`); :mod:`mybinlog.status`
serves them to other processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

__all__ = ["BinlogClientStatistics", "BinlogStatus"]


class BinlogStatus(TypedDict):
    """One row per live consumer, with the columns of ClickHouse's ``system.mysql_binlogs`` and, last, mybinlog's
    ``dispatcher_source_server``: ``host:port`` of the server the dispatcher reads (with several servers of one
    source, the one it is on; docs/ha.md, "Source failover")."""

    binlog_client_name: str
    name: str
    mysql_binlog_name: str
    mysql_binlog_pos: int
    mysql_binlog_timestamp: int
    mysql_binlog_executed_gtid_set: str
    dispatcher_name: str
    dispatcher_mysql_binlog_name: str
    dispatcher_mysql_binlog_pos: int
    dispatcher_mysql_binlog_timestamp: int
    dispatcher_mysql_binlog_executed_gtid_set: str
    size: int
    bytes: int
    max_bytes: int
    max_waiting_ms: int
    dispatcher_events_read_per_sec: float
    dispatcher_bytes_read_per_sec: float
    dispatcher_events_flush_per_sec: float
    dispatcher_bytes_flush_per_sec: float
    dispatcher_source_server: str


@dataclass(frozen=True, slots=True)
class BinlogClientStatistics:
    """A :class:`BinlogClient`'s totals since it was created, over every dispatcher it ever ran (from
    :meth:`BinlogClient.statistics`): the counters only grow. ``dispatchers``, ``connected`` and ``consumers`` are
    the state now."""

    name: str
    """``user@host:port``."""
    dispatchers: int
    """Dispatchers running now (one upstream connection each)."""
    connected: int
    """Of those, the ones whose connection is up (the others are reconnecting)."""
    consumers: int
    """Live consumers."""
    events_read: int
    """Events read from the source."""
    bytes_read: int
    """Their bytes (``Event.size``, as on the wire)."""
    reconnects: int
    """Reconnects of the upstream connections after a loss."""
    merges: int
    """Catch-up dispatchers merged into another (one connection fewer each)."""
    detaches: int
    """Consumers detached because their queue stayed full longer than their ``max_waiting_ms``."""
    queue_waits: int
    """Times a dispatcher waited for room in a full consumer queue."""
    queue_wait_seconds: float
    """How long those waits took in all."""
    failovers: int = 0
    """Moves of the upstream connections to another server of the source (source failover, docs/ha.md)."""
    last_failover: str | None = None
    """Why the last move happened (``BinlogStream.last_failover``), or None."""


class _Rate:
    """Events (or bytes) per second over the last full second of ``clock`` (a monotonic clock in seconds).

    The count of the second before the current one: a steady flow of N per second reads N, a burst is seen for
    one second, an idle dispatcher reads 0 after at most two seconds.
    """

    __slots__ = ("_clock", "_current", "_previous", "_second")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._second = int(clock())
        self._current = 0
        self._previous = 0

    def _roll(self, now: int) -> None:
        if now != self._second:
            self._previous = self._current if now == self._second + 1 else 0
            self._current = 0
            self._second = now

    def add(self, n: int) -> None:
        self._roll(int(self._clock()))
        self._current += n

    def per_sec(self) -> float:
        self._roll(int(self._clock()))
        return float(self._previous)
