"""The status document: what a status endpoint serves (``{"format", "pid", "time", "columns", "mysql_binlogs",
...}``), built from the sharing layer's status rows (:class:`~mybinlog.BinlogStatus`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ..errors import ConfigurationError
from ..sharing import BinlogStatus, get_binlog_client_factory
from ._health import ReplicaSource, replica_snapshots

__all__ = ["STATUS_COLUMNS", "STATUS_FORMAT", "StatusSource", "status_document"]

STATUS_FORMAT: Final = "mybinlog-status/1"
STATUS_COLUMNS: Final[tuple[str, ...]] = tuple(BinlogStatus.__annotations__)
"""The columns of a status row: ClickHouse's ``system.mysql_binlogs`` (19, in its order), then mybinlog's
``dispatcher_source_server`` (the server the dispatcher reads; docs/ha.md, "Source failover")."""

StatusSource = Callable[[], Sequence[Mapping[str, Any]]]
"""What gives the rows of a document (e.g. ``BinlogClientFactory.status``)."""


def status_document(
    source: StatusSource | None = None,
    extra: Callable[[], Mapping[str, Any]] | None = None,
    *,
    replicas: ReplicaSource | None = None,
) -> dict[str, Any]:
    """What a status endpoint serves: ``{"format", "pid", "time", "columns", "mysql_binlogs": [rows], ...}``.

    ``source`` gives the rows (default: the default factory's :meth:`BinlogClientFactory.status`); ``replicas``
    adds ``"replicas"``: one dict per replica (their ``snapshot()``, see
    :data:`~mybinlog.status._health.ReplicaSource`); ``extra`` adds keys of its own (a replicator's checkpoints,
    say), which must not replace the standard ones.
    """
    rows = (source or get_binlog_client_factory().status)()
    doc: dict[str, Any] = {
        "format": STATUS_FORMAT,
        "pid": os.getpid(),
        "time": time.time(),
        "columns": list(STATUS_COLUMNS),
        "mysql_binlogs": [dict(row) for row in rows],
    }
    if replicas is not None:
        doc["replicas"] = replica_snapshots(replicas)
    if extra is not None:
        for key, value in extra().items():
            if key in doc:
                raise ConfigurationError(f"status extra key {key!r} would replace a standard key")
            doc[key] = value
    return doc
