"""Start-up checks shared by the library's :class:`~mybinlog.replication.Replicator` and the command line: the name
of a replica, and waiting for a source or ClickHouse that is not reachable yet within its retry budget.

Standard library and the exception tree only: the command modules import it without start-up cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from ..errors import MybinlogError, SourceConnectionError, TargetUnavailableError
from ._names import check_replica_name, replica_name

if TYPE_CHECKING:
    from ..source import DSN, SourceConnection

__all__ = ["StartupStopped", "check_replica_name", "connect_source", "replica_name", "retry_at_start"]


logger = logging.getLogger("mybinlog.replication")

_T = TypeVar("_T")


class StartupStopped(Exception):
    """A stop (a signal, :meth:`Replicator.stop`) arrived while still waiting for the source or target at start-up."""


async def retry_at_start(
    what: str,
    budget: float,
    option: str,
    stop: asyncio.Event,
    attempt: Callable[[], Awaitable[_T]],
    *,
    log: logging.Logger = logger,
) -> _T:
    """``await attempt()``, tried again with backoff while it fails with a retriable error (the source or ClickHouse
    not reachable yet: a server restarting looks like that), for up to ``budget`` seconds, as a reconnect would be.
    A permanent error (a wrong TLS CA, a wrong password, a missing grant) is raised at once; beyond the budget a
    :class:`SourceConnectionError` or :class:`TargetUnavailableError` naming ``option``. Raises
    :class:`StartupStopped` when ``stop`` is set meanwhile. The retries are logged on ``log``."""
    started = time.monotonic()
    delay = 0.2
    while True:
        try:
            return await attempt()
        except MybinlogError as exc:
            if not exc.retriable:
                raise
            if time.monotonic() - started + delay > budget:
                message = (
                    f"{what} stayed unreachable for {budget:g} s since the start ({option}; last error: {exc}); "
                    "nothing was written: run again later"
                )
                if isinstance(exc, SourceConnectionError):
                    raise SourceConnectionError(message, errno=exc.errno) from exc
                raise TargetUnavailableError(message) from exc
            log.warning(
                "%s is not reachable (%s); trying again in %.1f s (for up to %g s, %s)",
                *(what, exc, delay, budget, option),
            )
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await stop.wait()  # a backoff that a stop cuts short
        if stop.is_set():
            raise StartupStopped
        delay = min(delay * 2, 5.0)


async def connect_source(dsn: DSN, budget: float, stop: asyncio.Event) -> SourceConnection | None:
    """A query connection to the source, waited for within ``budget`` seconds (``source_retry_seconds``) as a
    reconnect is; None when ``stop`` was set while waiting."""
    from ..source import SourceConnection

    try:
        return await retry_at_start(
            f"the source {dsn.display}", budget, "source_retry_seconds", stop, lambda: SourceConnection.connect(dsn)
        )
    except StartupStopped:
        return None
