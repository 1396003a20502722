"""Which ClickHouse a target is (the replica lock is named after it), and which targets a standby can share."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from ..errors import ConfigurationError, TargetConnectionError, TargetError

__all__ = ["check_standby_target", "target_identity"]

logger = logging.getLogger("mybinlog.replication")

_IDENTITY_ATTR = "_mybinlog_identity"  # the identity, cached on the target object (asked once per target)
_UNKNOWN_FUNCTION = 46  # ClickHouse's code for a function the server does not have (serverUUID() before 21.x)
_NO_UUID = "00000000-0000-0000-0000-000000000000"


async def target_identity(target: Any) -> str:
    """Which ClickHouse a target writes to, whatever its address is spelled like: what the server itself reports
    (docs/ha.md, "The replica's identity"), or chdb's real directory.

    * a server: ``serverUUID()`` (ClickHouse 21.x and later: a UUID the server keeps in its data directory); where it
      is missing (18.16) or zero, ``hostName()`` with the data directory of its ``system`` database (two servers on
      one host cannot share a data directory). ``127.0.0.1``, ``localhost``, a DNS name, an IPv6 literal, with or
      without a user, a path or a trailing slash, all give the same identity.
    * embedded ClickHouse (chdb): ``chdb:`` and the directory with every symbolic link resolved (a relative path and
      a link name give the same).
    * anything else (a test double): its ``description``.

    The answer is cached on the target. A server that answers neither query falls back to its endpoint as written
    (logged as a WARNING: two spellings of that server are then two replicas to the lock).
    """
    cached = getattr(target, _IDENTITY_ATTR, None)
    if isinstance(cached, str):
        return cached
    identity = await _ask_identity(target)
    with contextlib.suppress(AttributeError, TypeError):  # a target that takes no attributes: asked every time
        setattr(target, _IDENTITY_ATTR, identity)
    return identity


async def _ask_identity(target: Any) -> str:
    path = getattr(target, "path", None)
    if isinstance(path, str):
        return f"chdb:{path}"  # resolved when the target was opened (every symbolic link, a relative path)
    endpoint = getattr(target, "_endpoint", None)
    if not isinstance(endpoint, str) or not hasattr(target, "query"):
        return str(getattr(target, "description", repr(target)))
    try:
        rows = await target.query("SELECT toString(serverUUID())")
        uuid = str(rows[0][0] or "") if rows else ""
        if uuid and uuid != _NO_UUID:
            return f"clickhouse-uuid:{uuid}"
    except TargetConnectionError:
        raise  # not reachable now: never guess (the caller retries or stops)
    except TargetError as exc:
        if exc.code != _UNKNOWN_FUNCTION:
            return _endpoint_identity(target, endpoint, exc)
    try:
        rows = await target.query("SELECT hostName(), data_path FROM system.databases WHERE name = 'system'")
    except TargetConnectionError:
        raise
    except TargetError as exc:
        return _endpoint_identity(target, endpoint, exc)
    if not rows or not rows[0][0] or not rows[0][1]:
        return _endpoint_identity(target, endpoint, None)
    return f"clickhouse-host:{rows[0][0]}:{rows[0][1]}"


def _endpoint_identity(target: Any, endpoint: str, exc: BaseException | None) -> str:
    logger.warning(
        "%s: cannot ask the server who it is (%s): the replica lock is keyed on the address as written, so every "
        'process of a replica must spell the target the same way (docs/ha.md, "The replica\'s identity"); grant '
        "the user SELECT on system.databases to lift this",
        getattr(target, "description", endpoint),
        exc or "no answer",
    )
    return endpoint


def check_standby_target(url: str) -> None:
    """Refuse a standby whose target is embedded ClickHouse (chdb) before the target is opened (opening creates the
    directory): chdb opens a directory in one process at a time, so a leader and its standbys cannot share it."""
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(
            "standby needs a ClickHouse server as the target: embedded ClickHouse (chdb) opens its directory in "
            "one process at a time, so the active and its standbys cannot share it (docs/ha.md); drop --standby "
            "(run one replicator under a supervisor) or replicate into a ClickHouse server (http://host:8123)"
        )
