"""Health of a process from its status: :func:`replica_snapshots` (the replicas a status server shows, as dicts) and
:func:`readiness` (what ``/readyz`` answers). Liveness (``/healthz``) is the server answering at all: it runs on the
process's event loop.

The replicas' states are the replication layer's (:data:`mybinlog.replication.ReplicaState`): this layer observes
the replicators from above and restates none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol, TypeAlias

from ..errors import ConfigurationError
from ..replication import REPLICA_STATES, ReplicaState

__all__ = [
    "DEFAULT_READY_MAX_LAG_SECONDS",
    "Replica",
    "ReplicaSource",
    "SnapshotSource",
    "readiness",
    "replica_ready",
    "replica_snapshots",
    "replica_state",
]

DEFAULT_READY_MAX_LAG_SECONDS: Final = 60.0


class SnapshotSource(Protocol):
    """A replica shown as its ``snapshot()``: a :class:`~mybinlog.replication.Replicator` (or anything with one)."""

    def snapshot(self) -> Mapping[str, Any]: ...


Replica: TypeAlias = SnapshotSource | Mapping[str, Any]
"""One replica for the status: a replicator (its ``snapshot()`` is read at each look) or a snapshot already taken."""

ReplicaSource: TypeAlias = Callable[[], Iterable[Replica]] | Iterable[Replica]
"""The replicas a status server or collector shows: an iterable (or a callable returning one) of :data:`Replica`."""


def replica_snapshots(replicas: ReplicaSource | None) -> list[dict[str, Any]]:
    """The replicas' status dicts now (see :data:`ReplicaSource`)."""
    if replicas is None:
        return []
    items = replicas() if callable(replicas) else replicas
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Mapping):
            out.append(dict(item))
        elif callable(getattr(item, "snapshot", None)):
            out.append(dict(item.snapshot()))
        else:
            raise ConfigurationError(
                f"a replica for the status must be a mapping or have a snapshot() method, not {type(item).__name__}"
            )
    return out


def replica_state(rep: Mapping[str, Any]) -> ReplicaState | None:
    """The state a replica's snapshot reports (None: none, or one this version does not know)."""
    state = rep.get("state")
    for known in REPLICA_STATES:
        if state == known:
            return known
    return None


def replica_ready(rep: Mapping[str, Any], max_lag_seconds: float = DEFAULT_READY_MAX_LAG_SECONDS) -> tuple[bool, str]:
    """(ready, why) for one replica: the leader is ready when it streams with its source connected and its lag is
    within ``max_lag_seconds`` (unknown for at most a moment after it starts); a waiting standby is ready (it is
    ready to take over); a process that is neither (``leader`` false while it streams: a former leader whose lease
    may have expired, about to stop) is not."""
    state = replica_state(rep)
    if state == "standby":
        return True, "standby"
    if state == "failed" or state == "stopped":
        return False, f"state {state}"
    if not rep.get("leader", True):
        return False, "not the leader: its replica lease may have expired or was lost (it stops)"
    if state != "streaming":
        return False, f"state {rep.get('state') or 'unknown'}"
    if rep.get("connected") is False:
        return False, "the source connection is down (reconnecting)"
    lag = rep.get("lag_seconds")
    if lag is not None and float(lag) > max_lag_seconds:
        return False, f"lag {float(lag):.0f} s > {max_lag_seconds:g} s"
    return True, "streaming"


def readiness(
    replicas: list[dict[str, Any]], rows: list[Mapping[str, Any]], connected: list[bool], max_lag_seconds: float
) -> tuple[bool, dict[str, Any]]:
    """(ready, details): with replicas, every replica ready (:func:`replica_ready`); without, every dispatcher's
    connection up (``connected``, one flag per running dispatcher) and at least one consumer (``rows``)."""
    if replicas:
        checks = {str(r.get("replica")): replica_ready(r, max_lag_seconds) for r in replicas}
        ok = all(ready for ready, _ in checks.values())
        return ok, {"replicas": {name: {"ready": ready, "why": why} for name, (ready, why) in checks.items()}}
    if not rows:
        return False, {"why": "no consumer"}
    if not all(connected):
        return False, {"why": f"{connected.count(False)} of {len(connected)} connection(s) down (reconnecting)"}
    return True, {"why": f"{len(rows)} consumer(s), every connection up"}
