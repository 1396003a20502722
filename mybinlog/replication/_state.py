"""The states a replica reports (``ReplicaStatus.state``, ``Replicator.snapshot()["state"]``), declared once: the
replicator sets them, the status layer (:mod:`mybinlog.status`: readiness, metrics, the page) reads them.

======================  ============================================================================================
``starting``            connecting to the source and the target, reading the checkpoint
``standby``             waiting for another process's replica lock (``standby=True``; docs/ha.md)
``initial load``        copying the existing tables (in-process initial load)
``streaming``           following the binlog
``retrying``            restarting from the checkpoint after a failure that may pass (target or source)
``stopped``             stopped cleanly (``stop()``)
``failed``              gave up (the error is in ``error``)
======================  ============================================================================================

Imports nothing: the status layer reads these without importing the replicator.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

__all__ = ["REPLICA_STATES", "ReplicaState"]

ReplicaState: TypeAlias = Literal["starting", "standby", "initial load", "streaming", "retrying", "stopped", "failed"]

REPLICA_STATES: Final[tuple[ReplicaState, ...]] = get_args(ReplicaState)
"""Every state, in the order a replica usually goes through them."""
