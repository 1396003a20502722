"""Health of a process from its status: :func:`replica_snapshots` (the replicas a status server shows, as dicts) and
:func:`readiness` (what ``/readyz`` answers). Liveness (``/healthz``) is the server answering at all: it runs on the
process's event loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ..errors import ConfigurationError

__all__ = ["DEFAULT_READY_MAX_LAG_SECONDS", "ReplicaSource", "readiness", "replica_ready", "replica_snapshots"]

DEFAULT_READY_MAX_LAG_SECONDS: Final = 60.0

ReplicaSource = Callable[[], Iterable[Any]] | Iterable[Any]
"""The replicas a status server or collector shows: an iterable (or a callable returning one) of objects with a
``snapshot()`` method returning a dict (:class:`~mybinlog.replication.Replicator`), or of such dicts."""


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


def replica_ready(rep: Mapping[str, Any], max_lag_seconds: float = DEFAULT_READY_MAX_LAG_SECONDS) -> tuple[bool, str]:
    """(ready, why) for one replica: the leader is ready when it streams with its source connected and its lag is
    within ``max_lag_seconds`` (unknown for at most a moment after it starts); a waiting standby is ready (it is
    ready to take over); a process that is neither (``leader`` false while it streams: a former leader whose lease
    may have expired, about to stop) is not."""
    state = str(rep.get("state") or "")
    if state == "standby":
        return True, "standby"
    if state in ("failed", "stopped"):
        return False, f"state {state}"
    if not rep.get("leader", True):
        return False, "not the leader: its replica lease may have expired or was lost (it stops)"
    if state != "streaming":
        return False, f"state {state or 'unknown'}"
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
