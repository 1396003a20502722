"""Prepared XA transactions, held until their ``XA COMMIT`` or ``XA ROLLBACK`` (docs/replication.md, "XA
transactions").

The binlog holds an XA transaction in two parts, each a transaction with its own GTID and position: the prepared part
(its rows, ending with an XA_PREPARE event) and, later, an ``XA COMMIT``/``XA ROLLBACK`` statement alone, with any
number of other transactions (and server restarts) in between. The replicator must apply the rows at the COMMIT (in
the COMMIT's place in the binlog, with the COMMIT's version) and never after a ROLLBACK, and its checkpoint moves on
past the prepared part meanwhile. The rows are kept durably where they already are, in the source's binlog: the
checkpoint records, for each prepared XA transaction it has passed and not seen resolved, the position just *before*
its prepared part (:class:`Held`, ``Checkpoint.xa``). At the COMMIT the rows come from memory when this process still
holds them, else they are read again from the binlog with a short-lived stream started at that position
(:func:`read_prepared`): after a restart, after a DDL, and for transactions beyond the memory budget
(``ReplicationSettings.max_bytes_of_prepared_xa``). Nothing is written to ClickHouse before the COMMIT, so both
engines, both targets and both GTID flavours keep their exactly-once rules unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import BinlogPurgedError, ReplicationError, SourceConnectionError
from ..protocol import BinlogPosition, RowsEvent, XaStatement, binlog_file_key
from ..source import DSN, BinlogStream, PreparedXa
from ._batch import Entry

if TYPE_CHECKING:
    from ._sink import SinkTable

__all__ = ["Held", "XaHold", "read_prepared", "reached"]

logger = logging.getLogger("mybinlog.replication")

_ROW_OVERHEAD = 64  # bytes counted per row image beyond its text (keys, tuples), for the memory budget


@dataclass
class Held(PreparedXa):
    """A prepared XA transaction waiting for its COMMIT or ROLLBACK (``before``, ``end``, ``empty``: as a checkpoint
    keeps it, :class:`~mybinlog.source.PreparedXa`), with its rows when this process still holds them: ``entries``
    (None: read them again from the binlog at the COMMIT); ``size``: their bytes.
    """

    entries: list[Entry] | None = None
    size: int = 0


def _entries_size(entries: list[Entry]) -> int:
    size = 0
    for _table, _kb, b, _ka, a in entries:
        for images in (b, a):
            if images is not None:
                size += sum(map(len, images)) + _ROW_OVERHEAD * len(images)
    return size


class XaHold:
    """The prepared XA transactions a replicator has passed, by XID (``str(Xid)``), in the order they were prepared.

    Rows are kept in memory up to ``limit`` bytes in all; beyond it, the oldest prepared transactions' rows are
    dropped (they are read again from the binlog at their COMMIT), so a transaction left prepared for days costs a
    few hundred bytes of metadata, not its rows."""

    def __init__(self, limit: int, size: Callable[[Any], int] | None = None) -> None:
        self.limit = limit
        self.size = size  # what one held entry costs in memory, about (the sink's entry_bytes); None: ClickHouse's
        self.held: dict[str, Held] = {}
        self.bytes = 0

    def load(self, saved: dict[str, Any]) -> None:
        """Start again from a checkpoint's ``xa`` map (no rows in memory)."""
        self.held = {xid: Held.from_json(xid, obj) for xid, obj in saved.items()}
        self.bytes = 0

    def state(self) -> dict[str, Any]:
        """The JSON-able map the checkpoint saves (``Checkpoint.xa``)."""
        return {xid: held.to_json() for xid, held in self.held.items()}

    def prepare(self, xid: str, gtid: str, before: BinlogPosition, end: BinlogPosition, entries: list[Entry]) -> None:
        old = self.held.pop(xid, None)
        if old is not None:  # the server refuses a second XA START of a prepared XID; a binlog could still hold it
            self.bytes -= old.size
            logger.warning("XA transaction %s prepared again at %s before its COMMIT or ROLLBACK; the later wins",
                           xid, end)  # fmt: skip
        held = Held(xid, gtid, before, end, not entries)
        if not entries:
            size = 0
        elif self.size is not None:
            size = sum(map(self.size, entries))
        else:
            size = _entries_size(entries)
        if 0 < size <= self.limit:  # a transaction larger than the whole budget is read again at its COMMIT
            held.entries, held.size = entries, size
            self.bytes += size
        elif size:
            logger.info("prepared XA transaction %s has %d bytes of rows, more than max_bytes_of_prepared_xa=%d: "
                        "they are read again from the binlog at %s when it commits", xid, size, self.limit,
                        before)  # fmt: skip
        self.held[xid] = held
        if self.bytes > self.limit:
            self._evict()

    def _evict(self) -> None:
        for held in self.held.values():  # oldest first
            if self.bytes <= self.limit:
                return
            if held.entries is not None:
                logger.info(
                    "prepared XA transaction %s (%d bytes of rows) dropped from memory (max_bytes_of_prepared_xa=%d): "
                    "its rows are read again from the binlog at %s when it commits",
                    held.xid,
                    held.size,
                    self.limit,
                    held.before,
                )
                self.bytes -= held.size
                held.entries, held.size = None, 0

    def resolve(self, xid: str) -> Held | None:
        """The prepared transaction ``xid`` (None: its prepared part came before the replica's start), forgotten."""
        held = self.held.pop(xid, None)
        if held is not None:
            self.bytes -= held.size
        return held

    def forget_rows(self) -> None:
        """After a DDL: rows encoded for the old tables are read again (and encoded for the new ones) at COMMIT."""
        for held in self.held.values():
            held.entries, held.size = None, 0
        self.bytes = 0

    def oldest_needed(self, position: BinlogPosition) -> BinlogPosition:
        """The oldest binlog position the replica needs: ``position`` (its checkpoint) or the start of a prepared
        part it may have to read again (for the binlog purge risk check)."""
        needed = position
        for held in self.held.values():
            before = held.before
            if (
                not held.empty
                and before.file
                and before.server_id == position.server_id
                and (binlog_file_key(before.file), before.offset) < (binlog_file_key(needed.file), needed.offset)
            ):
                needed = before
        return needed


async def read_prepared(
    dsn: DSN,
    held: Held,
    database: str,
    table: Callable[[str], SinkTable | None],
    *,
    retry_seconds: float,
) -> list[Entry]:
    """Read the prepared part of ``held`` again from the source's binlog and return its rows for ``database`` (encoded
    for the tables ``table`` names now; rows of other tables are left out, as the live stream leaves them)."""
    deadline = time.monotonic() + retry_seconds
    delay = 0.2
    while True:
        try:
            return await _read_once(dsn, held, database, table, retry_seconds)
        except BinlogPurgedError as exc:
            raise ReplicationError(
                f"the XA transaction {held.xid} was prepared at {held.before} and committed now, but the binlog "
                f"holding its rows was purged ({exc}): they cannot be applied. Keep binlogs longer than XA "
                "transactions stay prepared, and take a new snapshot of the replica"
            ) from exc
        except SourceConnectionError:
            if time.monotonic() + delay > deadline:
                raise
            await asyncio.sleep(delay)  # backoff between connection attempts
            delay = min(delay * 2, 10.0)


async def _read_once(
    dsn: DSN, held: Held, database: str, table: Callable[[str], SinkTable | None], retry_seconds: float
) -> list[Entry]:
    stream = BinlogStream(dsn, resume_from=held.before, blocking=False, max_reconnect_seconds=retry_seconds,
                          max_reconnect_attempts=1_000)  # fmt: skip
    async with stream:
        async for txn in stream.transactions():
            xa = txn.xa
            if _is_prepare_of(xa, held.xid):
                entries: list[Entry] = []
                for event in txn.events:
                    if isinstance(event, RowsEvent) and event.schema == database:
                        t = table(event.table_name)
                        entry = t.entry(event) if t is not None else None
                        if entry is not None:
                            entries.append(entry)
                logger.info("read the prepared XA transaction %s again from %s (%d rows events)", held.xid,
                            held.before, len(entries))  # fmt: skip
                return entries
            if reached(txn.position, held.end):
                break
    raise ReplicationError(
        f"the XA transaction {held.xid} (GTID {held.gtid or 'none'}) is committed, but its prepared part was not found "
        f"in the source's binlog between {held.before} and {held.end}: the source's history changed under the replica "
        "(RESET MASTER, a restored backup). Take a new snapshot of the replica"
    )


def _is_prepare_of(xa: XaStatement | None, xid: str) -> bool:
    return xa is not None and xa.kind == "prepare" and str(xa.xid) == xid


# -- positions -------------------------------------------------------------------------------------------------------
def reached(pos: BinlogPosition, goal: BinlogPosition) -> bool:
    """Whether ``pos`` is at or after ``goal``: by GTID sets when both have one of the same flavour, else by file and
    offset."""
    if pos.gtid_set is not None and goal.gtid_set is not None and pos.gtid_set.flavor == goal.gtid_set.flavor:
        return bool(pos.gtid_set.contains(goal.gtid_set))  # type: ignore[arg-type]
    return (binlog_file_key(pos.file), pos.offset) >= (binlog_file_key(goal.file), goal.offset)
