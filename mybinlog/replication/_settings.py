"""The settings of one replica and its status: plain data, shared by the replicator and the code around it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import clickhouse
from ..clickhouse import DEFAULT_META_DATABASE
from ..errors import ConfigurationError
from ._state import ReplicaState
from ._watch import BinlogCheck

__all__ = ["ReplicaStatus", "ReplicationSettings"]

_MAX_HEARTBEAT_SECONDS = 4_294_967  # the largest heartbeat period the servers take (an unsigned 32-bit in ms)


@dataclass
class ReplicationSettings:
    """Settings of one replica (names as in ClickHouse's MaterializedMySQL where it has them).

    ``target_retry_seconds``: how long a failing ClickHouse (unreachable, restarting, refusing for a reason that may
    pass) is retried, restarting from the checkpoint with backoff, before the replicator gives up
    (:class:`TargetUnavailableError`). ``source_retry_seconds``: how long the source may stay unreachable (the
    binlog stream and the replica lock reconnect meanwhile) before it gives up with the position to resume from.

    ``source_heartbeat_seconds``: the heartbeat period asked of the source (it sends a heartbeat event this often
    while it has nothing to send). ``source_idle_seconds``: no byte at all (no event, no heartbeat) for this long
    means the connection is dead (a half-open connection to a server that vanished without closing it): it is
    dropped and the next server of the source is tried (default ``max(30, 4 * source_heartbeat_seconds)``;
    docs/ha.md, "Source failover"). Both are settings of the source's binlog connection: with a shared client, the
    first creator fixes them.

    ``standby``: when another process writes the replica, wait for its lock instead of failing with
    :class:`ReplicaLockedError`, then take over from the checkpoint (docs/ha.md). ``lease_seconds``: the replica
    lock's lease: the source drops the lock of a holder that stopped confirming it (paused, hung, cut off) for that
    long, so that a standby takes over within about that time; the holder confirms every quarter of it. Collapsing
    replicas keep their lock as long as its connection lives (``lease_seconds`` does not apply) and refuse
    ``standby``: a former leader's insert that was in flight when it was paused could duplicate rows there.
    """

    engine: str = "replacing"
    max_rows_in_buffer: int = 65_505
    max_bytes_in_buffer: int = 1 << 20
    max_flush_data_time: int = 1000  # milliseconds
    max_bytes_in_binlog_queue: int = 64 << 20
    max_milliseconds_to_wait_in_binlog_queue: int = 10_000
    # the shared client's dispatcher delivers at least this often (ClickHouse's default is 1000 ms, which adds up
    # to a second of lag); fixed by the first creator of the client in the process
    max_flush_milliseconds_in_binlog_dispatcher: int = 100
    meta_database: str = DEFAULT_META_DATABASE
    initial_load: str = "auto"  # "auto": copy existing tables when there is no checkpoint; "none": stream only
    target_retry_seconds: float = 300.0
    source_retry_seconds: float = 300.0
    source_heartbeat_seconds: float = 5.0
    source_idle_seconds: float | None = None  # None: max(30, 4 * source_heartbeat_seconds)
    standby: bool = False
    lease_seconds: float = 15.0
    source_check_seconds: float = 10.0  # binlog purge risk and bytes behind: read every this often (_watch.py)
    # rows of prepared XA transactions kept in memory until their COMMIT; beyond, the oldest are read again from the
    # binlog at their COMMIT (0: none kept; docs/replication.md "XA transactions")
    max_bytes_of_prepared_xa: int = 16 << 20
    # what one transaction's rows may take in memory; beyond, they spill to a temporary file and go to the target in
    # chunks of about this size at its COMMIT (0: no bound; docs/replication.md "Memory and big transactions")
    max_bytes_in_transaction: int = 256 << 20

    def __post_init__(self) -> None:
        if self.engine not in clickhouse.ENGINES:
            raise ConfigurationError(f"unknown engine {self.engine!r}; choose one of {', '.join(clickhouse.ENGINES)}")
        if self.initial_load not in ("auto", "none"):
            raise ConfigurationError("initial_load must be 'auto' or 'none'")
        if not 1 <= self.lease_seconds <= 31_536_000:
            raise ConfigurationError(f"lease_seconds must be between 1 and 31536000 (got {self.lease_seconds:g})")
        if self.standby and self.engine == "collapsing":
            raise ConfigurationError(
                "standby is refused for the collapsing engine: a former leader paused with an insert in flight could "
                "add that batch a second time after a standby replayed it, and a collapsing table cannot absorb "
                "duplicates (docs/ha.md). Use engine 'replacing' or 'replacing_is_deleted' for active/standby, or "
                "restart a single collapsing replicator with a supervisor"
            )
        for name in (
            "max_rows_in_buffer",
            "max_bytes_in_buffer",
            "max_flush_data_time",
            "target_retry_seconds",
            "source_retry_seconds",
            "source_check_seconds",
            "max_bytes_of_prepared_xa",
            "max_bytes_in_transaction",
        ):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name} must be >= 0")
        if not 0 < self.source_heartbeat_seconds <= _MAX_HEARTBEAT_SECONDS:
            raise ConfigurationError(
                f"source_heartbeat_seconds must be above 0 and at most {_MAX_HEARTBEAT_SECONDS} (got "
                f"{self.source_heartbeat_seconds:g}): the heartbeats are what tells a quiet source from a dead one"
            )
        if self.source_idle_seconds is not None and not self.source_idle_seconds > self.source_heartbeat_seconds:
            raise ConfigurationError(
                f"source_idle_seconds ({self.source_idle_seconds:g}) must be longer than source_heartbeat_seconds "
                f"({self.source_heartbeat_seconds:g}), else a quiet but healthy source counts as dead between two "
                "heartbeats; leave it out for max(30, 4 * source_heartbeat_seconds)"
            )

    @property
    def idle_seconds(self) -> float:
        """``source_idle_seconds``, or its default ``max(30, 4 * source_heartbeat_seconds)``."""
        if self.source_idle_seconds is not None:
            return self.source_idle_seconds
        return max(30.0, 4 * self.source_heartbeat_seconds)

    def stream_options(self, retry_seconds: float | None = None) -> dict[str, Any]:
        """The options of the replica's :class:`~mybinlog.BinlogStream` (the shared client's ``stream_options``):
        reconnects for ``retry_seconds`` (default ``source_retry_seconds``), the heartbeat period and the idle
        bound of the half-open detection."""
        return {
            "max_reconnect_attempts": 1_000_000,
            "max_reconnect_seconds": self.source_retry_seconds if retry_seconds is None else retry_seconds,
            "heartbeat_period": self.source_heartbeat_seconds,
            "idle_timeout": self.idle_seconds,
        }


@dataclass
class ReplicaStatus:
    replica: str
    database: str
    target_database: str
    position: str
    lag_seconds: float | None
    rows_written: int = 0
    batches: int = 0
    transactions: int = 0
    ddl_applied: int = 0
    detaches: int = 0
    stopped_tables: dict[str, str] = field(default_factory=dict)
    state: ReplicaState = "starting"  # _state.py
    retries: int = 0
    load_rows: int = 0
    load_tables: int = 0
    load_estimate: int = 0  # rows the initial load expects (the source's table statistics: an estimate)
    error: str | None = None
    leader: bool = True  # False while this process is a standby for the replica (set by the HA code; docs/ha.md)
    epoch: int = 0  # the leader epoch this process claimed for the replica (0: none yet; docs/ha.md)
    rows_by_table: dict[str, dict[str, int]] = field(default_factory=dict)  # rows written: table -> kind -> rows
    idle_at: float | None = None  # unix time the stream last had nothing to write (for the lag, see _observe.py)
    checkpoint_time: float | None = None  # unix time this process last saved a checkpoint
    binlog_check: BinlogCheck | None = None  # the last binlog purge risk check (_watch.py)
    # the server being read and the source failovers (docs/ha.md "Source failover"; observed in _observe.py)
    source_server: str | None = None  # host:port the binlog is read from now
    source_server_id: int | None = None  # its server_id (None before the first connection to it)
    source_failovers: int = 0  # moves of the binlog connection to another server of the source
    last_source_failover: str | None = None  # why the last one happened
    # what a crash may do to the replica's output, when its sink says (Kafka: "exactly-once" or "at-least-once")
    delivery: str | None = None
