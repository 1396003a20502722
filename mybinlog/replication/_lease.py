"""One writer per replica: a named lock on the source, held for as long as the replicator writes.

Two ``mybinlog replicate`` processes with the same replica (the same checkpoint row in the same ClickHouse) would
both write, each from its own idea of the position. The replicator therefore holds ``GET_LOCK(name)`` on a
connection to the source of its own (MySQL and MariaDB release such a lock when its connection ends, so a killed
process frees it at once; no privilege is needed), refuses to start while another process holds it
(:class:`ReplicaLockedError`), and confirms it still holds the lock before it writes (at most once a
``confirm_interval``): when the lock connection broke (the source restarted), it takes the lock again, and stops
if someone else took it meanwhile. See docs/replication.md, "What can go wrong".
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
import time
from typing import Any

from ..errors import MybinlogError, ReplicaLockedError, SourceConnectionError
from ..source._dsn import DSN
from ._source import SourceConnection

__all__ = ["ReplicaLease", "ReplicaLockedError", "lease_name"]

logger = logging.getLogger("mybinlog.replication")


def lease_name(target_identity: str, meta_database: str, replica: str) -> str:
    """The lock name for a replica: short (MySQL allows 64 characters), the same for every process that would write
    the same checkpoint row."""
    digest = hashlib.sha256(f"{target_identity}\0{meta_database}\0{replica}".encode()).hexdigest()[:40]
    return f"mybinlog:{digest}"


def target_identity(target: Any) -> str:
    """Where a target keeps its data: the server's endpoint (without user and database) or chdb's directory."""
    path = getattr(target, "path", None)
    if isinstance(path, str):
        return f"chdb:{path}"
    endpoint = getattr(target, "_endpoint", None)
    if isinstance(endpoint, str):
        return endpoint
    return str(getattr(target, "description", repr(target)))


class ReplicaLease:
    """The lock of one replica on its source (see the module docstring)."""

    def __init__(
        self,
        dsn: DSN,
        name: str,
        *,
        replica: str,
        confirm_interval: float = 1.0,
        retry_seconds: float = 300.0,
    ) -> None:
        self.dsn = dsn
        self.name = name
        self.replica = replica
        self.confirm_interval = confirm_interval
        self.retry_seconds = retry_seconds
        self._conn: SourceConnection | None = None
        self._confirmed = 0.0  # time.monotonic() of the last confirmation
        self.reacquired = 0

    def __repr__(self) -> str:
        return f"<ReplicaLease {self.replica!r} {self.name} on {self.dsn.display}>"

    async def acquire(self) -> None:
        """Take the lock, or raise :class:`ReplicaLockedError` when another process holds it."""
        conn = await SourceConnection.connect(self.dsn)
        try:
            await self._take(conn, "is already being written by")
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        self._confirmed = time.monotonic()
        logger.info("%s: holds the replica lock %s on %s", self.replica, self.name, self.dsn.display)

    async def confirm(self) -> None:
        """Make sure the lock is still ours before writing (at most once per ``confirm_interval``).

        A broken lock connection is reconnected (with backoff, for up to ``retry_seconds``) and the lock taken again;
        raises :class:`ReplicaLockedError` when another process holds it by then, and
        :class:`SourceConnectionError` when the source stays unreachable.
        """
        if time.monotonic() - self._confirmed < self.confirm_interval:
            return
        conn = self._conn
        if conn is not None:
            try:
                rows = await conn.query("SELECT IS_USED_LOCK(%s) = CONNECTION_ID()", (self.name,))
            except SourceConnectionError as exc:
                logger.warning("%s: the replica lock's connection broke (%s); taking it again", self.replica, exc)
                await self._drop()
            else:
                if rows and rows[0][0] in (1, "1"):
                    self._confirmed = time.monotonic()
                    return
                await self._drop()
                raise ReplicaLockedError(
                    f"replica {self.replica!r}: lost its lock {self.name} on {self.dsn.display} (the server released "
                    "it); stopping so that two processes never write the same replica"
                )
        await self._retake()

    async def _retake(self) -> None:
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.1
        while True:
            try:
                conn = await SourceConnection.connect(self.dsn)
            except SourceConnectionError as exc:
                if time.monotonic() + delay > deadline:
                    raise SourceConnectionError(
                        f"{self.dsn.display}: cannot take replica {self.replica!r}'s lock again: the source stayed "
                        f"unreachable for {self.retry_seconds:g} s ({exc}); nothing was written meanwhile, run again "
                        "to resume from the checkpoint"
                    ) from exc
                await asyncio.sleep(delay * (0.5 + random.random() / 2))  # backoff before the next attempt
                delay = min(delay * 2, 10.0)
                continue
            try:
                await self._take(conn, "was taken over by")
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
            self._confirmed = time.monotonic()
            self.reacquired += 1
            logger.warning("%s: took its replica lock again on %s", self.replica, self.dsn.display)
            return

    async def _take(self, conn: SourceConnection, verb: str) -> None:
        """GET_LOCK on ``conn``, or :class:`ReplicaLockedError` saying who holds it."""
        rows = await conn.query("SELECT GET_LOCK(%s, 0)", (self.name,))
        if not (rows and rows[0][0] in (1, "1")):
            raise ReplicaLockedError(await self._held_message(conn, verb))

    async def _held_message(self, conn: SourceConnection, verb: str) -> str:
        holder = "another connection"
        with contextlib.suppress(MybinlogError):
            rows = await conn.query("SELECT IS_USED_LOCK(%s)", (self.name,))
            if rows and rows[0][0] is not None:
                holder = f"source connection {rows[0][0]}"
                with contextlib.suppress(MybinlogError):
                    hosts = await conn.query(
                        "SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = %s", (rows[0][0],)
                    )
                    if hosts and hosts[0][0]:
                        holder += f" from {hosts[0][0]}"
        return (
            f"replica {self.replica!r} {verb} another mybinlog process ({holder} holds the lock {self.name} on "
            f"{self.dsn.display}): one process writes a replica at a time. Stop the other process first, or give "
            "this one another replica name (--replica) and target database"
        )

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def release(self) -> None:
        """Give the lock back (closing its connection releases it too)."""
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.query("SELECT RELEASE_LOCK(%s)", (self.name,))
        await self._drop()
