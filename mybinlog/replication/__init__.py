"""Replication of MySQL/MariaDB databases into ClickHouse (a server over HTTP, or embedded chdb).

::

    from mybinlog.clickhouse import open_target
    from mybinlog.replication import Replicator

    target = await open_target("chdb:///var/lib/mybinlog")              # or "http://user:pw@clickhouse:8123"
    replicator = Replicator("mysql://repl:pw@db:3306", target, database="shop")
    await replicator.run()                                              # stop() for a clean stop

See docs/replication.md (guide, engines, why the result is exactly-once) and docs/types.md (type mapping).
Importing this module does not import chdb or aiochclient; opening a target does.

Where things are: ``_replicator`` consumes the binlog (transactions, batches, DDL, flushes, checkpoints) and writes
through the replica's format in :mod:`mybinlog.clickhouse` (targets, types, table layout, versions, checkpoints);
the MySQL DDL model is :mod:`mybinlog.ddl`, queries to the source and the replica lock are :mod:`mybinlog.source`'s.
``_state`` declares the states a replica reports (the status layer reads them), ``_schema`` follows DDL,
``_batch``/``_spill`` hold transactions, ``_xa`` holds prepared XA transactions, ``_load`` is the in-process initial
load, ``_watch`` watches the source's binlogs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from .._checkpoint import (  # noqa: I001 (one import per module)
        Checkpoint as Checkpoint,
        checkpoint_from as checkpoint_from,
        checkpoint_json as checkpoint_json,
    )
    from ._clickhouse import ClickHouseSink as ClickHouseSink
    from ._leader import Leader as Leader
    from ._names import check_replica_name as check_replica_name, replica_name as replica_name
    from ._observe import is_leader as is_leader, observe_source as observe_source
    from ._replicator import Replicator as Replicator
    from ._settings import ReplicaStatus as ReplicaStatus, ReplicationSettings as ReplicationSettings
    from ._state import REPLICA_STATES as REPLICA_STATES, ReplicaState as ReplicaState
    from ._sink import Sink as Sink, SinkTable as SinkTable
    from ._startup import StartupStopped as StartupStopped, retry_at_start as retry_at_start
    from ._transactional import (
        RowChange as RowChange,
        Transaction as Transaction,
        TransactionalSink as TransactionalSink,
    )

# Names are imported when first used: importing the package does not import the replicator, the sharing client and
# the DDL parser. The errors are mybinlog's (mybinlog.errors); the replica's format (targets, checkpoints, versions)
# is mybinlog.clickhouse's, comparing a replica with its source mybinlog.verification's.
__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        # the record every sink keeps and its JSON form (mybinlog/_checkpoint.py): what a sink of one's own stores
        ".._checkpoint": ("Checkpoint", "checkpoint_from", "checkpoint_json"),
        "._clickhouse": ("ClickHouseSink",),
        "._leader": ("Leader",),
        "._names": ("check_replica_name", "replica_name"),
        "._observe": ("is_leader", "observe_source"),
        "._replicator": ("Replicator",),
        "._settings": ("ReplicaStatus", "ReplicationSettings"),
        "._state": ("REPLICA_STATES", "ReplicaState"),
        "._sink": ("Sink", "SinkTable"),
        "._startup": ("StartupStopped", "retry_at_start"),
        "._transactional": ("RowChange", "Transaction", "TransactionalSink"),
    },
)
