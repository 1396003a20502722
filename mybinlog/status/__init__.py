"""The status layer: a consuming process shows its status rows to other processes (``mybinlog status --from``),
to Prometheus, to health checks and to a browser.

``_address`` parses status addresses (``unix:``, ``http://``, ``file:``) -> ``_document`` builds the status document
(the sharing layer's :class:`~mybinlog.BinlogStatus` rows, ClickHouse's ``system.mysql_binlogs`` columns, the
replicas' snapshots, plus the keys of ``extra``) -> ``_server`` serves it (:class:`StatusServer`: HTTP/1.1 over a
unix socket or TCP, or a JSON file rewritten atomically) and ``_read`` reads it from outside (:func:`read_status`).
Beside the document the server answers ``/metrics`` (``_metrics``: :class:`MetricsCollector`, which users may also
register in their own Prometheus registry), ``/healthz`` and ``/readyz`` (``_health``), ``/history`` and the status
page ``/ui`` (``_page``). See docs/sharing.md, "Status", and docs/operations.md.

Layer rules: an observer above the replicators: may import :mod:`mybinlog.replication` (the states a replica
reports, :data:`~mybinlog.replication.ReplicaState`), :mod:`mybinlog.sharing` (the rows, the default factory),
:mod:`mybinlog.source`, :mod:`mybinlog.protocol` and :mod:`mybinlog.errors`; never the snapshot or cli layers (they
import it). The replication layer never imports it: a replicator is shown by passing it to the status server.
"""

from ._address import parse_status_address
from ._document import STATUS_COLUMNS, STATUS_FORMAT, StatusSource, status_document
from ._health import DEFAULT_READY_MAX_LAG_SECONDS, ReplicaSource
from ._metrics import METRICS, REPLICA_STATES, MetricsCollector, MetricSpec
from ._read import read_status
from ._server import StatusServer, serve_status

__all__ = [
    "DEFAULT_READY_MAX_LAG_SECONDS",
    "METRICS",
    "REPLICA_STATES",
    "STATUS_COLUMNS",
    "STATUS_FORMAT",
    "MetricSpec",
    "MetricsCollector",
    "ReplicaSource",
    "StatusServer",
    "StatusSource",
    "parse_status_address",
    "read_status",
    "serve_status",
    "status_document",
]
