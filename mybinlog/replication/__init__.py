"""Replication of MySQL/MariaDB databases into ClickHouse (a server over HTTP, or embedded chdb).

::

    import mybinlog.replication as rep

    target = await rep.open_target("chdb:///var/lib/mybinlog")          # or "http://user:pw@clickhouse:8123"
    replicator = rep.Replicator("mysql://repl:pw@db:3306", target, database="shop")
    await replicator.run()                                              # stop() for a clean stop

See docs/replication.md (guide, engines, why the result is exactly-once) and docs/types.md (type mapping).
Importing this module does not import chdb or aiochclient; opening a target does.

Where things are: ``_replicator`` consumes the binlog (transactions, batches, DDL, flushes, checkpoints); a row
event becomes a ClickHouse row in :mod:`.types` (``make_row_encoder``), in a table that ``_chschema`` creates and
alters from the :mod:`.ddl` model, written through a :mod:`.target` (a server over HTTP, or chdb). ``_checkpoint``,
``_lease``, ``_version`` and ``_source`` serve the replicator; :mod:`.verify` compares a replica with its source.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._checkpoint import Checkpoint, load_checkpoint, save_checkpoint
    from ._replicator import (
        ReplicaLockedError,
        ReplicationError,
        Replicator,
        TargetUnavailableError,
    )
    from ._settings import ReplicaStatus, ReplicationSettings
    from ._version import snapshot_version, transaction_version
    from .target import Capabilities, Target, TargetError, open_target
    from .verification import ColumnDifference, RowDifference, TableResult, VerifyReport, verify

# Names are imported when first used (PEP 562): the snapshot's Spark workers import this package for a few helpers
# (``_version``, the row encoders) and should not pay for the replicator, the sharing client and the DDL parser at
# every worker start (about 0.15 s each).
_WHERE = {
    "Checkpoint": "._checkpoint",
    "load_checkpoint": "._checkpoint",
    "save_checkpoint": "._checkpoint",
    "ReplicaLockedError": "._replicator",
    "ReplicaStatus": "._settings",
    "ReplicationError": "._replicator",
    "ReplicationSettings": "._settings",
    "Replicator": "._replicator",
    "TargetUnavailableError": "._replicator",
    "snapshot_version": "._version",
    "transaction_version": "._version",
    "Capabilities": ".target",
    "Target": ".target",
    "TargetError": ".target",
    "open_target": ".target",
    "ColumnDifference": ".verification",
    "RowDifference": ".verification",
    "TableResult": ".verification",
    "VerifyReport": ".verification",
    "verify": ".verification",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Capabilities",
    "Checkpoint",
    "ColumnDifference",
    "ReplicaLockedError",
    "ReplicaStatus",
    "ReplicationError",
    "ReplicationSettings",
    "Replicator",
    "RowDifference",
    "TableResult",
    "Target",
    "TargetError",
    "TargetUnavailableError",
    "VerifyReport",
    "load_checkpoint",
    "open_target",
    "save_checkpoint",
    "snapshot_version",
    "transaction_version",
    "verify",
]
