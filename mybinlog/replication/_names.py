"""Replica names: what may name a replica (its checkpoint row, its lock, log lines and status rows). Standard library
and the exception tree only: every command imports it without start-up cost."""

from __future__ import annotations

from ..errors import ConfigurationError

__all__ = ["check_replica_name", "replica_name"]


def check_replica_name(name: str, *, where: str = "--replica", leave_out: str = "leave --replica out") -> str:
    """``name`` if it can name a replica (its checkpoint, its lock, log lines); else :class:`ConfigurationError`.

    An empty name (which would silently become the database's) and control characters (a newline splits log
    lines and status output) are refused. ``where`` names what the user wrote, ``leave_out`` how to get the
    database's name instead."""
    if not name or not name.strip():
        raise ConfigurationError(
            f"{where} is empty: give the replica a name (e.g. the database's: {leave_out} for that)"
        )
    bad = next((c for c in name if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029"), None)
    if bad is not None:
        raise ConfigurationError(
            f"{where} {name!r} holds the control character {bad!r}: a replica's name appears in log lines, status "
            "rows and lock names; use letters, digits, '_', '-' or '.'"
        )
    return name


def replica_name(replica: str | None, database: str) -> str:
    """The name of a :class:`Replicator`'s replica: ``replica`` checked (:func:`check_replica_name`), or the
    database's name when it is None."""
    if replica is None:
        return database
    return check_replica_name(replica, where="Replicator(replica=...)", leave_out="pass replica=None")
