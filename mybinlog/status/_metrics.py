"""Prometheus metrics of a mybinlog process: :class:`MetricsCollector` (register it in your own
``prometheus_client`` registry) and :func:`render_metrics` (what a status server answers at ``/metrics``).

The values are read when Prometheus scrapes, from the sharing layer (every client of a factory: its totals,
:meth:`BinlogClient.statistics`, and each consumer's queue, :meth:`Binlog.statistics`) and from the replicas given
(their ``snapshot()`` dicts). Names follow Prometheus's conventions: the ``mybinlog_`` prefix, ``_total`` on
counters, base units (``_seconds``, ``_bytes``). :data:`METRICS` lists every one (docs/operations.md shows them).

``prometheus_client`` is optional (``pip install 'mybinlog[metrics]'``, part of ``[cli]``): nothing here imports it
before :meth:`MetricsCollector.collect` or :func:`render_metrics` runs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..errors import ConfigurationError
from ..replication import REPLICA_STATES  # the states a replica reports: mybinlog_replica_state has a sample for each
from ..sharing import BinlogClientFactory, get_binlog_client_factory
from ._health import DEFAULT_READY_MAX_LAG_SECONDS, ReplicaSource, replica_ready, replica_snapshots, replica_state

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

__all__ = ["METRICS", "REPLICA_STATES", "MetricSpec", "MetricsCollector", "render_metrics"]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric: its full name (counters end in ``_total``), kind (``counter``/``gauge``), help and labels."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...] = ()


_C = ("client",)
_Q = ("client", "consumer", "dispatcher")
_R = ("replica",)

METRICS: Final[tuple[MetricSpec, ...]] = (
    MetricSpec("mybinlog_build_info", "gauge", "Always 1; the mybinlog version in its label.", ("version",)),
    # the shared binlog connections (sharing layer), per client (user@host:port)
    MetricSpec("mybinlog_binlog_dispatchers", "gauge", "Dispatchers running (one source connection each).", _C),
    MetricSpec("mybinlog_binlog_connected_dispatchers", "gauge", "Dispatchers whose source connection is up now.", _C),
    MetricSpec("mybinlog_binlog_consumers", "gauge", "Live consumers of the client.", _C),
    MetricSpec("mybinlog_binlog_read_events_total", "counter", "Binlog events read from the source.", _C),
    MetricSpec("mybinlog_binlog_read_bytes_total", "counter", "Bytes of binlog events read from the source.", _C),
    MetricSpec("mybinlog_binlog_reconnects_total", "counter", "Source connections re-established after a loss.", _C),
    MetricSpec(
        "mybinlog_binlog_merges_total", "counter", "Catch-up dispatchers merged into another (a connection fewer).", _C
    ),
    MetricSpec(
        "mybinlog_binlog_detaches_total", "counter", "Consumers detached because their queue stayed full too long.", _C
    ),
    MetricSpec(
        "mybinlog_binlog_queue_waits_total",
        "counter",
        "Times a dispatcher waited for room in a full consumer queue.",
        _C,
    ),
    MetricSpec(
        "mybinlog_binlog_queue_wait_seconds_total", "counter", "Seconds dispatchers spent waiting for queue room.", _C
    ),
    # source failover: the server each connection reads, and the moves to another server of the source
    MetricSpec(
        "mybinlog_source_failovers_total",
        "counter",
        "Moves of the client's binlog connections to another server of the source (source failover).",
        _C,
    ),
    MetricSpec(
        "mybinlog_source_server_info",
        "gauge",
        "Always 1; the server (host:port and server_id) each dispatcher's binlog connection reads now in its labels.",
        ("client", "dispatcher", "server", "server_id"),
    ),
    # each consumer's queue
    MetricSpec("mybinlog_consumer_queue_bytes", "gauge", "Bytes of events queued for the consumer, not read yet.", _Q),
    MetricSpec("mybinlog_consumer_queue_events", "gauge", "Events queued for the consumer, not read yet.", _Q),
    MetricSpec(
        "mybinlog_consumer_queue_limit_bytes", "gauge", "The queue's max_bytes_in_binlog_queue (0: unlimited).", _Q
    ),
    MetricSpec(
        "mybinlog_consumer_queue_waits_total",
        "counter",
        "Times the dispatcher found this consumer's queue full and waited for room.",
        _Q,
    ),
    MetricSpec(
        "mybinlog_consumer_queue_wait_seconds_total", "counter", "Seconds the dispatcher waited for room in it.", _Q
    ),
    MetricSpec("mybinlog_consumer_received_events_total", "counter", "Events the consumer has read.", _Q),
    MetricSpec("mybinlog_consumer_received_bytes_total", "counter", "Bytes of the events the consumer has read.", _Q),
    # replicas (the replicator)
    MetricSpec(
        "mybinlog_replica_info",
        "gauge",
        "Always 1; the replica's databases in its labels.",
        (*_R, "database", "target"),
    ),
    MetricSpec(
        "mybinlog_replica_state", "gauge", "1 for the replica's current state, 0 for the others.", (*_R, "state")
    ),
    MetricSpec(
        "mybinlog_replica_leader", "gauge", "1 when this process writes the replica, 0 while it is a standby.", _R
    ),
    MetricSpec("mybinlog_replica_ready", "gauge", "1 when the replica is ready (what /readyz checks), else 0.", _R),
    MetricSpec(
        "mybinlog_replica_source_connected", "gauge", "1 when the replica's binlog connection is up, else 0.", _R
    ),
    MetricSpec(
        "mybinlog_replica_source_info",
        "gauge",
        "Always 1; the server (host:port and server_id) the replica's binlog is read from now in its labels.",
        (*_R, "server", "server_id"),
    ),
    MetricSpec(
        "mybinlog_replica_lag_seconds",
        "gauge",
        "Seconds the replica is behind the source: now minus the source time of the last transaction written or of "
        "the last moment it had nothing to write, whichever is later.",
        _R,
    ),
    MetricSpec(
        "mybinlog_replica_lag_bytes",
        "gauge",
        "Binlog bytes between the replica's checkpoint and the source's end (read every source check).",
        _R,
    ),
    MetricSpec("mybinlog_replica_transactions_total", "counter", "Source transactions the replica has processed.", _R),
    MetricSpec("mybinlog_replica_batches_total", "counter", "Batches written to ClickHouse (one checkpoint each).", _R),
    MetricSpec(
        "mybinlog_replica_rows_written_total",
        "counter",
        "Rows written to ClickHouse by the stream, by table and kind (insert, update, delete; the net change per "
        "key and batch).",
        (*_R, "table", "kind"),
    ),
    MetricSpec("mybinlog_replica_initial_load_rows", "gauge", "Rows copied by the initial load so far.", _R),
    MetricSpec("mybinlog_replica_ddl_applied_total", "counter", "DDL statements applied in ClickHouse.", _R),
    MetricSpec(
        "mybinlog_replica_detaches_total", "counter", "Times the replica's consumer was detached and reopened.", _R
    ),
    MetricSpec(
        "mybinlog_replica_retries_total", "counter", "Restarts from the checkpoint after a ClickHouse failure.", _R
    ),
    MetricSpec(
        "mybinlog_replica_checkpoint_age_seconds", "gauge", "Seconds since this process last saved a checkpoint.", _R
    ),
    MetricSpec(
        "mybinlog_replica_checkpoint_timestamp_seconds",
        "gauge",
        "Source commit time (unix seconds) of the last transaction the checkpoint covers.",
        _R,
    ),
    MetricSpec("mybinlog_replica_stopped_tables", "gauge", "Tables whose replication stopped.", _R),
    MetricSpec(
        "mybinlog_replica_table_stopped", "gauge", "1 for each table whose replication stopped.", (*_R, "table")
    ),
    MetricSpec(
        "mybinlog_replica_binlog_purge_risk",
        "gauge",
        "0: the binlog the replica needs is safe; 1: it may be purged soon (the oldest file left, or near the "
        "retention); 2: it was purged (the replica cannot resume from its checkpoint).",
        _R,
    ),
    MetricSpec(
        "mybinlog_replica_binlog_retention_left_seconds",
        "gauge",
        "At least this many seconds until the source's retention may purge the binlog file the replica needs.",
        _R,
    ),
    MetricSpec(
        "mybinlog_replica_source_binlog_retention_seconds",
        "gauge",
        "The source's binlog retention (binlog_expire_logs_seconds or expire_logs_days; 0: none).",
        _R,
    ),
    MetricSpec("mybinlog_replica_source_binlog_files", "gauge", "Binlog files on the source (SHOW BINARY LOGS).", _R),
)


_PURGE_RISK: Final = {"ok": 0, "warning": 1, "purged": 2}
_ROW_KINDS: Final = ("insert", "update", "delete")

Sample = tuple[tuple[str, ...], float]


class MetricsCollector:
    """A Prometheus collector of a mybinlog process's metrics (:data:`METRICS`).

    ``registry.register(MetricsCollector(replicas=[replicator]))`` in your own ``prometheus_client`` registry
    (``prometheus_client.REGISTRY`` for the default one), then serve it as you serve the rest of your metrics.
    ``factory``: whose clients to count (default: the factory of :func:`get_binlog_client`). ``replicas``: see
    :data:`~mybinlog.status._health.ReplicaSource` (a list of replicators, or a callable returning the ones
    running now). ``ready_max_lag_seconds``: the lag above which ``mybinlog_replica_ready`` is 0.

    Values are read at each scrape; nothing is kept between scrapes, and reading takes no lock and no IO.
    """

    def __init__(
        self,
        *,
        factory: BinlogClientFactory | None = None,
        replicas: ReplicaSource | None = None,
        ready_max_lag_seconds: float = DEFAULT_READY_MAX_LAG_SECONDS,
    ) -> None:
        self._factory = factory
        self._replicas = replicas
        self.ready_max_lag_seconds = ready_max_lag_seconds

    def __repr__(self) -> str:
        return f"<MetricsCollector factory={self._factory!r}>"

    # -- prometheus_client's collector protocol ---------------------------------------------------------------
    def describe(self) -> list[Metric]:
        """The metric families without samples (the registry checks names with it when registering)."""
        return [_family(spec) for spec in METRICS]

    def collect(self) -> Iterator[Metric]:
        """Every family with its samples now (what the registry calls at each scrape)."""
        return _families(self.samples())

    # -- the values ---------------------------------------------------------------------------------------------
    def samples(self, replicas: list[dict[str, Any]] | None = None) -> dict[str, list[Sample]]:
        """Every sample now: metric name -> [(label values in :attr:`MetricSpec.labels` order, value)].
        ``replicas``: snapshots already taken (else they are taken from the ``replicas`` given)."""
        out: dict[str, list[Sample]] = {spec.name: [] for spec in METRICS}
        # the package's version (mybinlog/__init__.py, always imported before its layers; read, not imported)
        version = str(getattr(sys.modules.get("mybinlog"), "__version__", "unknown"))
        out["mybinlog_build_info"].append(((version,), 1.0))
        self._sharing(out)
        for rep in replica_snapshots(self._replicas) if replicas is None else replicas:
            self._replica(out, rep)
        return out

    def _sharing(self, out: dict[str, list[Sample]]) -> None:
        factory = self._factory or get_binlog_client_factory()
        for client in factory.clients:
            st = client.statistics()
            c = (st.name,)
            for name, value in (
                ("dispatchers", st.dispatchers),
                ("connected_dispatchers", st.connected),
                ("consumers", st.consumers),
                ("read_events_total", st.events_read),
                ("read_bytes_total", st.bytes_read),
                ("reconnects_total", st.reconnects),
                ("merges_total", st.merges),
                ("detaches_total", st.detaches),
                ("queue_waits_total", st.queue_waits),
                ("queue_wait_seconds_total", st.queue_wait_seconds),
            ):
                out[f"mybinlog_binlog_{name}"].append((c, float(value)))
            out["mybinlog_source_failovers_total"].append((c, float(st.failovers)))
            for d in client.dispatchers:
                if d.source_server:
                    server_id = d.source_server_id
                    labels = (client.name, d.name, d.source_server, "" if server_id is None else str(server_id))
                    out["mybinlog_source_server_info"].append((labels, 1.0))
                for consumer in d.consumers:
                    q = client.name, consumer.name, d.name
                    cs = consumer.statistics()
                    for name, value in (
                        ("queue_bytes", cs.bytes),
                        ("queue_events", cs.size),
                        ("queue_limit_bytes", cs.max_bytes),
                        ("queue_waits_total", cs.queue_waits),
                        ("queue_wait_seconds_total", cs.queue_wait_seconds),
                        ("received_events_total", cs.events_received),
                        ("received_bytes_total", cs.bytes_received),
                    ):
                        out[f"mybinlog_consumer_{name}"].append((q, float(value)))

    def _replica(self, out: dict[str, list[Sample]], rep: dict[str, Any]) -> None:
        name = str(rep.get("replica", ""))
        r = (name,)

        def put(metric: str, value: Any, labels: tuple[str, ...] = r) -> None:
            if value is not None:
                out[f"mybinlog_replica_{metric}"].append((labels, float(value)))

        put("info", 1, (name, str(rep.get("database", "")), str(rep.get("target_database", ""))))
        state = str(rep.get("state", ""))  # and any state this version does not know, as it is
        for known in (*REPLICA_STATES, *(() if replica_state(rep) else (state,))):
            put("state", 1 if known == state else 0, (name, known))
        put("leader", 1 if rep.get("leader", True) else 0)
        put("ready", 1 if replica_ready(rep, self.ready_max_lag_seconds)[0] else 0)
        if rep.get("connected") is not None:
            put("source_connected", 1 if rep["connected"] else 0)
        if rep.get("source_server"):
            server_id = rep.get("source_server_id")
            put("source_info", 1, (name, str(rep["source_server"]), "" if server_id is None else str(server_id)))
        put("lag_seconds", rep.get("lag_seconds"))
        put("lag_bytes", rep.get("lag_bytes"))
        for metric, key in (
            ("transactions_total", "transactions"),
            ("batches_total", "batches"),
            ("ddl_applied_total", "ddl_applied"),
            ("detaches_total", "detaches"),
            ("retries_total", "retries"),
            ("initial_load_rows", "load_rows"),
        ):
            put(metric, rep.get(key, 0))
        for table, kinds in sorted((rep.get("rows_by_table") or {}).items()):
            for kind in _ROW_KINDS:
                put("rows_written_total", kinds.get(kind, 0), (name, table, kind))
        put("checkpoint_age_seconds", rep.get("checkpoint_age_seconds"))
        put("checkpoint_timestamp_seconds", rep.get("checkpoint_timestamp") or None)
        stopped = rep.get("stopped_tables") or {}
        put("stopped_tables", len(stopped))
        for table in sorted(stopped):
            put("table_stopped", 1, (name, table))
        put("binlog_purge_risk", _PURGE_RISK.get(str(rep.get("binlog_purge_risk"))))
        put("binlog_retention_left_seconds", rep.get("binlog_retention_left_seconds"))
        put("source_binlog_retention_seconds", rep.get("binlog_retention_seconds"))
        put("source_binlog_files", rep.get("binlog_files"))


def _prometheus() -> Any:
    try:
        import prometheus_client
        import prometheus_client.core
        import prometheus_client.exposition
    except ImportError as exc:
        raise ConfigurationError(
            "Prometheus metrics need prometheus_client: pip install 'mybinlog[metrics]' (or 'mybinlog[cli]')"
        ) from exc
    return prometheus_client


def _families(values: dict[str, list[Sample]]) -> Iterator[Metric]:
    for spec in METRICS:
        family = _family(spec)
        for labels, value in values.get(spec.name, ()):
            family.add_metric(list(labels), value)
        yield family


def _family(spec: MetricSpec) -> Any:
    """A ``CounterMetricFamily`` or ``GaugeMetricFamily`` for ``spec``, without samples."""
    core = _prometheus().core
    if spec.kind == "counter":
        return core.CounterMetricFamily(spec.name, spec.help, labels=list(spec.labels))
    return core.GaugeMetricFamily(spec.name, spec.help, labels=list(spec.labels))


class _Fixed:
    """A collector of samples taken already (one scrape of a status server)."""

    def __init__(self, collector: MetricsCollector, replicas: list[dict[str, Any]]) -> None:
        self._collector = collector
        self._replicas = replicas

    def collect(self) -> Iterator[Metric]:
        return _families(self._collector.samples(self._replicas))


def render_metrics(
    collector: MetricsCollector, *, replicas: list[dict[str, Any]] | None = None, accept: str = ""
) -> tuple[bytes, str]:
    """(body, content type) of a ``/metrics`` answer: the collector's families in Prometheus's text format (or the
    format ``accept`` prefers, OpenMetrics say), with the process's own (``process_*``: CPU, memory, open files) where
    the platform has them. Raises :class:`~mybinlog.ConfigurationError` naming the extra when prometheus_client is
    not installed."""
    prom = _prometheus()
    registry = prom.CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(collector, replica_snapshots(collector._replicas) if replicas is None else replicas))
    prom.ProcessCollector(registry=registry)
    prom.PlatformCollector(registry=registry)
    encoder, content_type = prom.exposition.choose_encoder(accept)  # the text format, or what Accept prefers
    return encoder(registry), str(content_type)
