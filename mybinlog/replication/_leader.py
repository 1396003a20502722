"""The replica's leadership: the replica lock on the source (``mybinlog.source``'s :class:`ReplicaLease`) and the
leader epoch every checkpoint carries (docs/ha.md). One :class:`Leader` per replicator; the sink calls
:meth:`Leader.confirm` before each write, :meth:`Leader.wrote` after it and :meth:`Leader.save` for each checkpoint,
so that nothing reaches the replica from a process that no longer leads it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .. import _failpoints
from ..errors import MybinlogError, ReplicaLockedError

if TYPE_CHECKING:
    from .._checkpoint import Checkpoint
    from ..source import ReplicaLease
    from ._settings import ReplicaStatus
    from ._sink import Sink

__all__ = ["Leader", "NewTerm"]

logger = logging.getLogger("mybinlog.replication")


class NewTerm(Exception):
    """The replica lock was taken again after its connection broke and another process led meanwhile (or the initial
    load was running): the replicator starts again from the newest checkpoint under a new epoch."""


class Leader:
    """The lease and the epoch of one replicator (see the module docstring).

    ``lease`` is None until the lock is taken (and in tests that write without one). ``loading`` is set while the
    initial load runs: a lock taken again then restarts the load (:class:`NewTerm`).
    """

    def __init__(self, replica: str, sink: Sink, status: ReplicaStatus, *, standby: bool = False) -> None:
        self.replica = replica
        self.sink = sink
        self.status = status
        self.standby = standby
        self.lease: ReplicaLease | None = None
        self.epoch = 0  # the leader epoch claimed (docs/ha.md); 0: none yet
        self.term = 0  # the lease term (ReplicaLease.term) the epoch was claimed in
        self.loading = False
        self.saves = 0  # checkpoints saved after a batch (progress, for the retry budget)

    async def confirm(self) -> None:
        """Before every write: the lease is still ours, and still in the term whose epoch was claimed (the lock taken
        again after its connection broke is a new term: see :meth:`_retaken`)."""
        lease = self.lease
        if lease is None:
            return
        await lease.confirm()
        if lease.term != self.term and self.term:
            await self._retaken(lease.term)

    async def _retaken(self, term: int) -> None:
        """The lock was taken again after its connection broke (the source restarted, a network cut). Nobody can have
        written the replica meanwhile unless a checkpoint of a later epoch is there now (every leader saves its epoch
        before any data): then, or in the middle of the initial load, start again from the newest checkpoint;
        otherwise go on with the next epoch, which the next save carries (it outranks a claim another process may
        have had in flight while it held the lock in between)."""
        if self.loading:
            raise NewTerm("took its replica lock again during the initial load")
        seen = await self.sink.newest_epoch()
        if seen > self.epoch:
            raise NewTerm(f"took its replica lock again, but another process led the replica meanwhile (epoch {seen})")
        self.term = term
        self.epoch = max(seen, self.epoch) + 1
        self.status.epoch = self.epoch
        logger.warning(
            "%s: took its replica lock again and no other process wrote meanwhile: going on as epoch %d",
            self.replica,
            self.epoch,
        )

    def check(self) -> None:
        """On every turn of the stream loop: stop at once when the keep-alive found the lease lost, also when there
        is nothing to write."""
        lease = self.lease
        if lease is not None and lease.failure is not None:
            raise lease.failure

    def wrote(self, what: str) -> None:
        """After a write: say so when it finished after the lease may have expired (the process was paused or hung
        while the write was in flight). Such a write may have landed after a standby took over: harmless (docs/ha.md:
        rows carry the versions the new leader writes too, a checkpoint row the lower epoch), but reported."""
        lease = self.lease
        if lease is not None and lease.maybe_expired():
            logger.warning(
                "%s: %s finished %.1f s after the last confirmation of the replica lease (lease %g s): it was in "
                "flight while this process was paused, hung or cut off, and may have landed after a takeover",
                self.replica,
                what,
                lease.since_confirmed(),
                lease.lease_seconds or 0,
            )

    async def save(self, cp: Checkpoint) -> None:
        """Save a checkpoint in this leader's epoch, after confirming the lease (every checkpoint save goes through
        here)."""
        from .._checkpoint import make_seq

        await self.confirm()
        if cp.epoch < self.epoch:
            cp.seq = make_seq(self.epoch, 0)
        if _failpoints.ACTIVE:
            _failpoints.reached("checkpoint.before_save")
        await self.sink.save_checkpoint(cp)
        self.wrote(f"the checkpoint save of epoch {cp.epoch} (seq {cp.seq})")

    async def claim(self, newest: Checkpoint | None) -> bool:
        """Claim the leader epoch above every checkpoint row of the replica, once per lease term; returns whether
        ``newest`` (a finished checkpoint) must be saved now under the new epoch before any data is written (the
        initial load's "loading" row is that save when there is none).

        ``newest`` is the replica's newest row. A later epoch than ours within our term means another process led
        meanwhile (it can only have come from a process that held the lock): stop.
        """
        from .._checkpoint import make_seq

        lease = self.lease
        term = lease.term if lease is not None else 0
        seen = newest.epoch if newest is not None else 0
        if self.epoch and term == self.term:  # a retry within the term (the target failed): the epoch stays ours
            if seen > self.epoch:
                raise ReplicaLockedError(
                    f"replica {self.replica!r}: another process saved a checkpoint of leader epoch {seen} while this "
                    f"one (epoch {self.epoch}) held the lock; stopping so that two processes never write the replica"
                )
            return False
        first = not self.epoch
        self.epoch, self.term = seen + 1, term
        self.status.epoch = self.epoch
        self.status.leader = True
        if newest is not None:
            newest.seq = make_seq(self.epoch, 0)
        waited = lease.waited if lease is not None and first else 0.0
        if self.standby and first:
            logger.info(
                "%s: took over replica %r (epoch %d) after %.1f s as a standby, at %s",
                self.replica,
                self.replica,
                self.epoch,
                waited,
                newest.position if newest is not None and newest.loading is None else "its initial load",
            )
        else:
            logger.info(
                "%s: leads replica %r (epoch %d)%s",
                self.replica,
                self.replica,
                self.epoch,
                "" if first else " in a new lease term",
            )
        return newest is not None and newest.loading is None

    async def lost(self, exc: MybinlogError) -> ReplicaLockedError | None:
        """The lost lease behind ``exc``, if that is what lies behind it (a former leader's write that failed after a
        standby took over, e.g. an ALTER the new leader had already applied): reported instead (exit code 4)."""
        lease = self.lease
        if lease is None or isinstance(exc, ReplicaLockedError):
            return None
        if isinstance(lease.failure, ReplicaLockedError):
            return lease.failure
        if lease.maybe_expired():  # stalled for longer than the lease: is the lock still ours?
            try:
                await lease.confirm()
            except ReplicaLockedError as lost:
                return lost
            except MybinlogError:
                return None
        return None
