"""The source watch: how far the replica is behind the source's end in bytes, and whether the binlog it needs may be
purged before it has read it (docs/operations.md, "Binlog purge risk").

Every ``source_check_seconds`` (and once before streaming starts) the replicator reads the source's binlog files
(``SHOW BINARY LOGS``), its retention settings (``binlog_expire_logs_seconds``, ``expire_logs_days``, MySQL's
``binlog_expire_logs_auto_purge``, MariaDB's ``max_binlog_total_size``) and the GTIDs the oldest file starts at, and
compares them with its checkpoint (:func:`assess_binlogs`, pure):

* ``purged``: the checkpoint's file is gone, and (by GTIDs, where the server has them) transactions after it too:
  the replica cannot resume from its checkpoint (it goes on while its connection holds; a restart fails);
* ``warning``: the checkpoint's file is not the newest (the current file is never purged) and it is the oldest file
  left (the next ``PURGE BINARY LOGS`` or expiry removes it), or less than a quarter of the retention is left
  before the retention may purge it (counted from its transaction's commit time, so a lower bound), or it needs
  three quarters of a size limit;
* ``ok``: none of these; ``unknown``: no answer (binary logging off, the checkpoint from another server).

A change of level is logged (WARNING for warning and purged, INFO when it is ok again) and shown in the replica's
status (``binlog_purge_risk``, ``binlog_purge_reason``) and metrics. The watch never stops the replica: a failing
query is logged at DEBUG level and tried again at the next check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Final, Protocol

from ..errors import MybinlogError
from ..protocol import BinlogPosition, GtidSet, parse_gtid_set
from ..source import SourceConnection

if TYPE_CHECKING:
    from .._checkpoint import Checkpoint
    from ..source import DSN

__all__ = ["BinlogCheck", "SourceBinlogs", "SourceWatch", "Watched", "assess_binlogs", "read_source_binlogs"]

logger = logging.getLogger("mybinlog.replication")

RETENTION_WARN_FRACTION: Final = 0.25  # warn when less than this part of the retention is left
SPACE_WARN_FRACTION: Final = 0.75  # warn when the replica needs this part of a size limit


@dataclass(frozen=True, slots=True)
class SourceBinlogs:
    """What the source says about its binlogs (:func:`read_source_binlogs`)."""

    files: list[tuple[str, int]]
    """``SHOW BINARY LOGS``: (name, size), oldest first; the last one is being written (its size is its end)."""
    retention_seconds: float = 0.0
    """How old a binlog file may get before the server purges it (0: never by age)."""
    space_limit: int = 0
    """The size all binlog files may take before the oldest are purged (MariaDB 11.4+; 0: none)."""
    server_id: int = 0
    start_gtids: GtidSet | None = None
    """The GTIDs every transaction still in the binlogs follows: MariaDB's ``BINLOG_GTID_POS(oldest, 4)``, MySQL's
    ``gtid_purged`` (None: unknown, or no GTIDs)."""


@dataclass(frozen=True, slots=True)
class BinlogCheck:
    """The outcome of one check (:func:`assess_binlogs`)."""

    risk: str
    """``ok``, ``warning``, ``purged`` or ``unknown``."""
    reason: str
    lag_bytes: int | None = None
    """Binlog bytes from the checkpoint to the source's end (None: unknown)."""
    retention_seconds: float = 0.0
    retention_left_seconds: float | None = None
    """At least this long until the retention may purge the file the checkpoint needs (None: it cannot, or
    unknown)."""
    files: int = 0
    causes: tuple[str, ...] = ()
    """Why it is a warning: ``retention``, ``oldest``, ``space`` (a change of these is logged)."""


def _file_key(name: str) -> tuple[str, int]:
    base, _, digits = name.rpartition(".")
    return (base, int(digits)) if digits.isdigit() else (name, -1)


def _contains(gtids: GtidSet | None, start: GtidSet | None) -> bool:
    if gtids is None or start is None or type(gtids) is not type(start):
        return False
    return bool(gtids.contains(start))  # type: ignore[arg-type]  # (the same flavour: checked above)


def assess_binlogs(binlogs: SourceBinlogs, needed: BinlogPosition, now: float) -> BinlogCheck:
    """Compare the checkpoint ``needed`` with the source's binlogs (see the module docstring); ``now`` in unix
    seconds."""
    files = binlogs.files
    retention = binlogs.retention_seconds
    n = len(files)
    if not files:
        return BinlogCheck("unknown", "the source lists no binlog files (binary logging off?)", None, retention)
    if needed.server_id and binlogs.server_id and needed.server_id != binlogs.server_id:
        return BinlogCheck(
            "unknown",
            f"the checkpoint is a position of server_id {needed.server_id}, the source is server_id "
            f"{binlogs.server_id} (it follows it by GTIDs until its next checkpoint)",
            None,
            retention,
            files=n,
        )
    names = [name for name, _ in files]
    oldest, newest = names[0], names[-1]
    file = needed.file
    offset = needed.offset
    if file not in names:
        if not file or _file_key(file)[0] != _file_key(oldest)[0] or _file_key(file) > _file_key(newest):
            why = f"the checkpoint's file {file!r} is not one of the source's binlogs"
            return BinlogCheck("unknown", why, None, retention, files=n)
        if not _contains(needed.gtid_set, binlogs.start_gtids):
            return BinlogCheck(
                "purged",
                f"the binlog the replica needs ({file}) was purged from the source (the oldest left is {oldest}): it "
                "goes on while its connection holds, but cannot resume from its checkpoint after a restart; take a "
                "new snapshot, and keep binlogs longer than your longest outage",
                None,
                retention,
                files=n,
            )
        file, offset = oldest, 4  # resumed by GTIDs, it reads from the oldest file on
    at = names.index(file)
    lag_bytes = max(0, sum(size for _, size in files[at:]) - offset)
    if file == newest:
        return BinlogCheck("ok", f"the checkpoint is in the newest binlog file ({file})", lag_bytes, retention, files=n)
    reasons: dict[str, str] = {}
    left: float | None = None
    if retention > 0 and needed.timestamp:
        left = needed.timestamp + retention - now
        if left < retention * RETENTION_WARN_FRACTION:
            reasons["retention"] = (
                f"the source may purge {file} by age within {max(0.0, left):.0f} s (retention {retention:.0f} s, the "
                f"checkpoint's transaction is {now - needed.timestamp:.0f} s old)"
            )
    if file == oldest:
        reasons["oldest"] = f"{file} is the oldest binlog file left on the source: the next purge removes it"
    if binlogs.space_limit > 0 and lag_bytes >= binlogs.space_limit * SPACE_WARN_FRACTION:
        reasons["space"] = (
            f"the replica needs {lag_bytes} bytes of binlogs, {100 * lag_bytes / binlogs.space_limit:.0f}% of the "
            f"source's max_binlog_total_size ({binlogs.space_limit})"
        )
    if reasons:
        return BinlogCheck("warning", "; ".join(reasons.values()), lag_bytes, retention, left, n, tuple(reasons))
    return BinlogCheck("ok", f"{file} is not the oldest binlog file left ({oldest})", lag_bytes, retention, left, n)


async def read_source_binlogs(src: SourceConnection) -> SourceBinlogs:
    """Read the binlog files, the retention settings and the GTIDs the oldest file starts at."""
    files = await src.binlog_sizes()
    settings = await src.global_variables(
        ("binlog_expire_logs_seconds", "expire_logs_days", "binlog_expire_logs_auto_purge", "max_binlog_total_size")
    )
    retention = float(settings.get("binlog_expire_logs_seconds") or 0)
    if retention <= 0:
        retention = float(settings.get("expire_logs_days") or 0) * 86400
    if settings.get("binlog_expire_logs_auto_purge", "ON").upper() in ("OFF", "0"):
        retention = 0.0
    start: GtidSet | None = None
    with contextlib.suppress(MybinlogError, ValueError):
        if src.flavor == "mariadb" and files:
            got = await src.binlog_gtid_pos(files[0][0], 4)
            if got is not None:
                start = parse_gtid_set(got, "mariadb")
        elif src.flavor == "mysql":
            got = await src.gtid_purged()
            if got is not None:
                start = parse_gtid_set(got, "mysql")
    return SourceBinlogs(
        files,
        retention,
        int(float(settings.get("max_binlog_total_size") or 0)),
        int(src.info.server_id or 0),
        start,
    )


class _CheckedStatus(Protocol):
    binlog_check: BinlogCheck | None  # ReplicaStatus's (_settings.py, which builds on this module)


class Watched(Protocol):
    """What the watch reads of the replica it watches (the replicator), and the status it writes its outcome into."""

    @property
    def replica(self) -> str: ...
    @property
    def dsn(self) -> DSN: ...
    @property
    def checkpoint(self) -> Checkpoint | None: ...
    @property
    def status(self) -> _CheckedStatus: ...
    def oldest_needed(self, cp: Checkpoint) -> BinlogPosition: ...


class SourceWatch:
    """Checks the replica's checkpoint against the source's binlogs every ``interval`` seconds (see the module
    docstring) and writes the outcome into the replicator's status. ``async with`` runs the periodic checks in a
    task it owns; :meth:`check` runs one now."""

    def __init__(self, replicator: Watched, interval: float) -> None:
        self.replicator = replicator
        self.interval = interval
        self.last: BinlogCheck | None = None
        self._src: SourceConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self._lock = asyncio.Lock()  # one query at a time on the connection (the periodic and the startup check)

    async def check(self) -> BinlogCheck | None:
        """One check of the current checkpoint (None: no checkpoint yet, or the source did not answer)."""
        async with self._lock:
            return await self._check()

    async def _check(self) -> BinlogCheck | None:
        r = self.replicator
        cp = r.checkpoint
        if cp is None or cp.loading is not None or not cp.position.file:
            return None
        try:
            if self._src is None:
                self._src = await SourceConnection.connect(r.dsn)
            binlogs = await read_source_binlogs(self._src)
        except MybinlogError as exc:
            if not self._failing:
                logger.debug("%s: cannot read the source's binlogs (%s); trying again later", r.replica, exc)
            self._failing = True
            await self._close()
            return None
        self._failing = False
        result = assess_binlogs(binlogs, r.oldest_needed(cp), time.time())
        previous, self.last = self.last, result
        r.status.binlog_check = result
        if result.risk in ("warning", "purged"):
            if previous is None or (previous.risk, previous.causes) != (result.risk, result.causes):
                logger.warning("%s: binlog purge risk (%s): %s", r.replica, result.risk, result.reason)
        elif previous is not None and previous.risk in ("warning", "purged"):
            logger.info("%s: binlog purge risk over: %s", r.replica, result.reason)
        return result

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)  # a periodic check, not a synchronisation
            try:
                await self.check()
            except Exception:  # the watch must never stop the replica
                logger.warning("%s: the source check failed", self.replicator.replica, exc_info=True)

    async def _close(self) -> None:
        src, self._src = self._src, None
        if src is not None:
            with contextlib.suppress(MybinlogError, OSError):
                await src.aclose()

    async def __aenter__(self) -> SourceWatch:
        if self.interval > 0:
            self._task = asyncio.create_task(self._loop(), name=f"mybinlog source watch {self.replicator.replica}")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
        await asyncio.shield(self._close())
