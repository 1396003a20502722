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

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from ._checkpoint import (  # noqa: I001 (one import per module)
        Checkpoint as Checkpoint,
        load_checkpoint as load_checkpoint,
        save_checkpoint as save_checkpoint,
    )
    from ._replicator import Replicator as Replicator
    from ._settings import ReplicaStatus as ReplicaStatus, ReplicationSettings as ReplicationSettings
    from ._version import snapshot_version as snapshot_version, transaction_version as transaction_version
    from .target import Capabilities as Capabilities, Target as Target, open_target as open_target
    from .verification import (
        ColumnDifference as ColumnDifference,
        RowDifference as RowDifference,
        TableResult as TableResult,
        VerifyReport as VerifyReport,
        verify as verify,
    )

# Names are imported when first used: the snapshot's Spark workers import this package for a few helpers
# (``_version``, the row encoders) and should not pay for the replicator, the sharing client and the DDL parser at
# every worker start (about 0.15 s each). The errors are mybinlog's (mybinlog.errors).
__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "._checkpoint": ("Checkpoint", "load_checkpoint", "save_checkpoint"),
        "._replicator": ("Replicator",),
        "._settings": ("ReplicaStatus", "ReplicationSettings"),
        "._version": ("snapshot_version", "transaction_version"),
        ".target": ("Capabilities", "Target", "open_target"),
        ".verification": ("ColumnDifference", "RowDifference", "TableResult", "VerifyReport", "verify"),
    },
)
