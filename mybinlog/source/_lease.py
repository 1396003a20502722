"""One writer per replica: a named lock on the source that expires when its holder stops confirming it.

Two ``mybinlog replicate`` processes with the same replica (the same checkpoint row in the same ClickHouse) would
both write, each from its own idea of the position. The replicator therefore holds ``GET_LOCK(name)`` on a
connection to the source of its own (MySQL and MariaDB release such a lock when its connection ends, so a killed
process frees it at once; no privilege is needed), refuses to start while another process holds it
(:class:`ReplicaLockedError`), or, as a standby, waits until it is free (:meth:`ReplicaLease.acquire` with
``wait=True``). Before it writes it confirms that it still holds the lock (at most once a ``confirm_interval``):
when the lock connection broke (the source restarted), it takes the lock again, and stops if someone else took it
meanwhile.

**Expiry** (``lease_seconds``): a process that is paused (SIGSTOP, a VM frozen), hung or cut off from the source
keeps its TCP connection, and so its lock, until the server notices. The lock connection therefore sets
``wait_timeout`` (and ``net_read_timeout``/``net_write_timeout``) to the lease: the *server* drops a connection that
sent nothing for that long, which releases the lock, whatever the holder's clock or state. The holder keeps it
alive from a background task (a cheap ``IS_USED_LOCK`` query every quarter of the lease, owned by the lease between
:meth:`~ReplicaLease.acquire` and :meth:`~ReplicaLease.release`) and counts its lease from the moment it *sent* the
last successful confirmation: the server's idle timer started later than that. Without ``lease_seconds`` the lock
lives as long as its connection (the server's own ``wait_timeout``, 8 hours by default, for an idle one).

``term`` counts how often the lock was taken (the first time, and again after its connection broke): the
replicator starts a new leader epoch for every term (docs/ha.md). See also docs/replication.md, "What can go wrong".
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import random
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from ..errors import (
    ConfigurationError,
    MybinlogError,
    ReplicaLockedError,
    SourceConnectionError,
    SourceError,
)
from ._dsn import DSN
from ._session import SourceConnection

__all__ = ["ReplicaLease", "lease_name"]

logger = logging.getLogger("mybinlog.replication")

_T = TypeVar("_T")
_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def _now() -> float:
    """The lease's clock: Linux's CLOCK_BOOTTIME (it goes on while the machine is suspended, where the monotonic
    clock stops), else the monotonic clock. Never the wall clock: NTP steps and skew between hosts do not matter."""
    return time.clock_gettime(_BOOTTIME) if _BOOTTIME is not None else time.monotonic()


_WAIT_POLL = 1  # seconds one GET_LOCK of a waiting standby blocks on the server (a stop request waits this long)
_MAX_LEASE = 31_536_000  # the largest wait_timeout MySQL and MariaDB accept (one year)


def lease_name(target_identity: str, meta_database: str, replica: str) -> str:
    """The lock name for a replica: short (MySQL allows 64 characters), the same for every process that would write
    the same checkpoint row. ``target_identity`` names where the replica is (``mybinlog.clickhouse.target_identity``
    for ClickHouse, a sink's ``identity`` in general)."""
    digest = hashlib.sha256(f"{target_identity}\0{meta_database}\0{replica}".encode()).hexdigest()[:40]
    return f"mybinlog:{digest}"


def _granted(rows: list[tuple[Any, ...]]) -> bool:
    return bool(rows) and rows[0][0] in (1, "1")


class ReplicaLease:
    """The lock of one replica on its source (see the module docstring).

    ``lease_seconds``: None keeps the lock for as long as its connection lives; a number makes the server drop the
    lock of a holder that stopped confirming for that long (rounded up to whole seconds on the server), and starts
    the keep-alive task. ``confirm_interval``: how long one confirmation covers the writes that follow it (at most a
    quarter of the lease). ``retry_seconds``: how long an unreachable source is reconnected (taking the lock again,
    or waiting for it) before :class:`SourceConnectionError`.
    """

    def __init__(
        self,
        dsn: DSN,
        name: str,
        *,
        replica: str,
        confirm_interval: float = 1.0,
        retry_seconds: float = 300.0,
        lease_seconds: float | None = None,
    ) -> None:
        if lease_seconds is not None and not 1 <= lease_seconds <= _MAX_LEASE:
            raise ConfigurationError(f"lease_seconds must be between 1 and {_MAX_LEASE} (got {lease_seconds:g})")
        self.dsn = dsn
        self.name = name
        self.replica = replica
        self.lease_seconds = lease_seconds
        self.confirm_interval = confirm_interval if lease_seconds is None else min(confirm_interval, lease_seconds / 4)
        self.retry_seconds = retry_seconds
        self._conn: SourceConnection | None = None
        self._confirmed = 0.0  # _now() when the last successful confirmation was sent
        self._lock = asyncio.Lock()  # one query at a time on the lock connection (the keep-alive and the writer)
        self._keeper: asyncio.Task[None] | None = None
        self.failure: MybinlogError | None = None  # the lease is lost for good (every later confirm raises it)
        self.term = 0  # how often the lock was taken (acquire, and again after its connection broke)
        self.reacquired = 0
        self.waited = 0.0  # seconds the last acquire(wait=True) waited for the lock
        self.standby = False  # the lock was taken by acquire(wait=True): this process runs as a standby

    def __repr__(self) -> str:
        return f"<ReplicaLease {self.replica!r} {self.name} on {self.dsn.display}>"

    @property
    def held(self) -> bool:
        return self._conn is not None and self.failure is None

    def since_confirmed(self) -> float:
        """Seconds since the last successful confirmation was sent (the lease runs from then)."""
        return _now() - self._confirmed

    def maybe_expired(self) -> bool:
        """Whether the server may have released the lock by now because nothing confirmed it for a whole lease (the
        process was paused, hung or cut off): a write that finished after this may have landed after a takeover."""
        return self.lease_seconds is not None and self.since_confirmed() > self.lease_seconds

    # -- taking the lock -----------------------------------------------------------------------------------
    async def acquire(self, *, wait: bool = False, stop: asyncio.Event | None = None) -> bool:
        """Take the lock. Without ``wait``: raise :class:`ReplicaLockedError` when another process holds it. With
        ``wait`` (a standby): wait until it is free, logging who holds it; returns False when ``stop`` was set
        first (the lock is not taken then)."""
        started = _now()
        self.standby = wait
        if wait:
            got = await self._wait_for_lock(stop)
            if got is None:
                return False
            conn, sent = got
        else:
            conn = await self._connect()
            sent = _now()
            try:
                await self._take(conn, "is already being written by")
            except BaseException:
                await _close(conn)
                raise
        self.waited = _now() - started if wait else 0.0
        self._conn = conn
        self._confirmed = sent
        self.failure = None
        self.term += 1
        logger.info(
            "%s: holds the replica lock %s on %s%s",
            self.replica,
            self.name,
            self.dsn.display,
            f" (lease {self.lease_seconds:g} s)" if self.lease_seconds else "",
        )
        if self.lease_seconds is not None and self._keeper is None:
            self._keeper = asyncio.create_task(self._keep_alive(), name=f"mybinlog lease {self.replica}")
        return True

    async def _connect(self) -> SourceConnection:
        conn = await SourceConnection.connect(self.dsn)
        if self.lease_seconds is None:
            return conn
        seconds = math.ceil(self.lease_seconds)
        try:
            await conn.query(
                f"SET SESSION wait_timeout = {seconds}, net_read_timeout = {seconds}, net_write_timeout = {seconds}"
            )
        except BaseException:
            await _close(conn)
            raise
        return conn

    async def _wait_for_lock(self, stop: asyncio.Event | None) -> tuple[SourceConnection, float] | None:
        """A standby's wait: ``GET_LOCK(name, 1)`` again and again (the server hands the lock over the moment it is
        released), reconnecting when the source goes away (for up to ``retry_seconds`` per outage)."""
        conn: SourceConnection | None = None
        shown: str | None = None
        failing_since: float | None = None
        delay = 0.1
        try:
            while stop is None or not stop.is_set():
                try:
                    if conn is None:
                        conn = await self._connect()
                    sent = _now()
                    try:
                        rows = await conn.query("SELECT GET_LOCK(%s, %s)", (self.name, _WAIT_POLL))
                    except SourceError as exc:  # any error of an established connection: reconnect
                        raise SourceConnectionError(exc.message, errno=exc.errno) from exc
                    if _granted(rows):
                        got, conn = conn, None
                        return got, sent
                    holder = await self._holder(conn)
                except SourceConnectionError as exc:
                    if conn is not None:
                        await _close(conn)
                        conn = None
                    now = _now()
                    if failing_since is None:
                        failing_since, delay = now, 0.1
                        logger.warning(
                            "%s: cannot reach the source to wait for the replica lock (%s); retrying", self.replica, exc
                        )
                    if now - failing_since + delay > self.retry_seconds:
                        raise SourceConnectionError(
                            f"{self.dsn.display}: replica {self.replica!r} cannot wait for its lock: the source stayed "
                            f"unreachable for {self.retry_seconds:g} s ({exc}); run again"
                        ) from exc
                    await asyncio.sleep(delay * (0.5 + random.random() / 2))  # backoff before the next attempt
                    delay = min(delay * 2, 5.0)
                    continue
                failing_since = None
                if holder != shown:
                    logger.warning(
                        "%s: waiting for the replica lock %s on %s, held by %s (standby: takes over when it is free)",
                        self.replica,
                        self.name,
                        self.dsn.display,
                        holder,
                    )
                    shown = holder
            return None
        finally:
            if conn is not None:
                await _close(conn)

    # -- confirming it -------------------------------------------------------------------------------------
    async def confirm(self) -> None:
        """Make sure the lock is still ours before writing (at most once per ``confirm_interval``).

        A broken lock connection is reconnected (with backoff, for up to ``retry_seconds``) and the lock taken again
        (``term`` grows); raises :class:`ReplicaLockedError` when another process holds it by then, and
        :class:`SourceConnectionError` when the source stays unreachable. Both are final: every later call raises
        the same error.
        """
        if self.failure is not None:
            raise self.failure
        if _now() - self._confirmed < self.confirm_interval:
            return
        async with self._lock:
            if _now() - self._confirmed < self.confirm_interval:
                return  # confirmed (by the keep-alive) while this call waited
            await self._confirm_locked()

    async def _confirm_locked(self) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            conn = self._conn
            if conn is not None:
                sent = _now()
                try:
                    rows = await self._timed(conn.query("SELECT IS_USED_LOCK(%s) = CONNECTION_ID()", (self.name,)))
                except (SourceError, TimeoutError) as exc:  # e.g. MySQL's 4031 "disconnected ... inactivity"
                    logger.warning(
                        "%s: the replica lock's connection broke (%s); taking it again",
                        self.replica,
                        exc or "no answer",
                    )
                    await self._drop()
                else:
                    if _granted(rows):
                        self._confirmed = sent
                        return
                    await self._drop()
                    raise ReplicaLockedError(
                        f"replica {self.replica!r}: lost its lock {self.name} on {self.dsn.display} (the server "
                        "released it); stopping so that two processes never write the same replica"
                    )
            await self._retake()
        except MybinlogError as exc:
            self.failure = exc
            raise

    async def _timed(self, query: Awaitable[_T]) -> _T:
        """A confirmation that gets no answer within half a lease counts as a broken connection."""
        if self.lease_seconds is None:
            return await query
        async with asyncio.timeout(max(1.0, self.lease_seconds / 2)):
            return await query

    async def _keep_alive(self) -> None:
        """Confirm every quarter of the lease, also while the replicator has nothing to write, so that the server
        does not drop a healthy holder's lock. A lost lease is recorded in ``failure`` (the replicator stops on it)."""
        assert self.lease_seconds is not None
        period = self.lease_seconds / 4
        with contextlib.suppress(MybinlogError):  # recorded in self.failure by _confirm_locked
            while True:
                await asyncio.sleep(max(0.01, self._confirmed + period - _now()))  # the keep-alive's timer
                async with self._lock:
                    if _now() - self._confirmed >= period:
                        await self._confirm_locked()

    async def _retake(self) -> None:
        stale = _now() - self._confirmed
        deadline = _now() + self.retry_seconds
        delay = 0.1
        while True:
            conn: SourceConnection | None = None
            try:
                conn = await self._connect()
                sent = _now()
                if self.lease_seconds is not None and stale > self.lease_seconds:
                    verb = (
                        f"lost its lease: nothing confirmed it for {stale:.1f} s (longer than the lease of "
                        f"{self.lease_seconds:g} s: this process was paused, hung or cut off from the source), and it "
                        "was taken over by"
                    )
                else:
                    verb = "was taken over by"
                await self._take(conn, verb, lost=True)
            except SourceConnectionError as exc:
                # unreachable, or reachable but going away (a clean shutdown answers 1053 to the connection or to
                # GET_LOCK; a server starting up refuses for a moment): the same outage, retried within the budget
                if conn is not None:
                    await _close(conn)
                if _now() + delay > deadline:
                    raise SourceConnectionError(
                        f"{self.dsn.display}: cannot take replica {self.replica!r}'s lock again: the source stayed "
                        f"unreachable for {self.retry_seconds:g} s ({exc}); nothing was written meanwhile, run again "
                        "to resume from the checkpoint"
                    ) from exc
                await asyncio.sleep(delay * (0.5 + random.random() / 2))  # backoff before the next attempt
                delay = min(delay * 2, 10.0)
                continue
            except BaseException:
                if conn is not None:
                    await _close(conn)
                raise
            self._conn = conn
            self._confirmed = sent
            self.reacquired += 1
            self.term += 1
            logger.warning("%s: took its replica lock again on %s", self.replica, self.dsn.display)
            return

    async def _take(self, conn: SourceConnection, verb: str, *, lost: bool = False) -> None:
        """GET_LOCK on ``conn``, or :class:`ReplicaLockedError` saying who holds it."""
        rows = await conn.query("SELECT GET_LOCK(%s, 0)", (self.name,))
        if not _granted(rows):
            raise ReplicaLockedError(await self._held_message(conn, verb, lost=lost))

    async def _holder(self, conn: SourceConnection) -> str:
        holder = "another connection"
        with contextlib.suppress(MybinlogError):
            rows = await conn.query("SELECT IS_USED_LOCK(%s)", (self.name,))
            if rows and rows[0][0] is not None:
                holder = f"source connection {rows[0][0]}"
                with contextlib.suppress(MybinlogError):
                    hosts = await conn.query_processlist("SELECT HOST FROM {processlist} WHERE ID = %s", (rows[0][0],))
                    if hosts and hosts[0][0]:
                        holder += f" from {hosts[0][0]}"
        return holder

    async def _held_message(self, conn: SourceConnection, verb: str, *, lost: bool = False) -> str:
        holder = await self._holder(conn)
        if lost and self.standby:
            advice = (
                "this process stops without writing more (exit code 4); run it again as it was (it has --standby "
                "already) to make it a standby of the new leader"
            )
        elif lost:
            advice = (
                "this process stops without writing more (exit code 4); to keep it as a standby of the new leader, "
                "start it again with --standby"
            )
        else:
            advice = (
                "Stop the other process first, give this one another replica name (--replica) and target database, "
                "or run it with --standby to take over when the other one stops"
            )
        return (
            f"replica {self.replica!r} {verb} another mybinlog process ({holder} holds the lock {self.name} on "
            f"{self.dsn.display}): one process writes a replica at a time; {advice}"
        )

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await _close(conn)

    async def release(self) -> None:
        """Stop the keep-alive and give the lock back (closing its connection releases it too)."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            await asyncio.wait([keeper])
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await conn.query("SELECT RELEASE_LOCK(%s)", (self.name,))
        await self._drop()


async def _close(conn: SourceConnection) -> None:
    """Close a lock connection without waiting long on a peer that does not answer."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(5):
            await conn.aclose()
