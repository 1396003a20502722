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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import BinlogPurgedError, ReplicationError, SourceConnectionError
from ..protocol._events import RowsEvent
from ..protocol._position import BinlogPosition, position_from, position_json
from ..protocol._transaction import XaStatement
from ..source._dsn import DSN
from ..source._stream import BinlogStream
from ._batch import Entry

if TYPE_CHECKING:
    from ..protocol._transaction import Transaction
    from ..source._session import SourceConnection
    from ._sink import SinkTable

__all__ = ["Held", "XaHold", "prepared_at", "read_prepared", "reached"]

logger = logging.getLogger("mybinlog.replication")

_ROW_OVERHEAD = 64  # bytes counted per row image beyond its text (keys, tuples), for the memory budget


@dataclass
class Held:
    """A prepared XA transaction waiting for its COMMIT or ROLLBACK.

    ``before``: the boundary just before its prepared part (a stream started there reads that part first); ``end``:
    the boundary after it. ``empty``: it changed nothing in the replica's scope (nothing to read again).
    ``entries``: its rows in memory (None: read them again from the binlog at the COMMIT); ``size``: their bytes.
    """

    xid: str
    gtid: str
    before: BinlogPosition
    end: BinlogPosition
    empty: bool
    entries: list[Entry] | None = None
    size: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"gtid": self.gtid, "before": position_json(self.before), "end": position_json(self.end),
                "empty": self.empty}  # fmt: skip

    @classmethod
    def from_json(cls, xid: str, obj: dict[str, Any]) -> Held:
        before, end = position_from(obj["before"]), position_from(obj["end"])
        assert before is not None
        assert end is not None
        return cls(xid, str(obj.get("gtid") or ""), before, end, bool(obj.get("empty")))


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
                and (_file_key(before.file), before.offset) < (_file_key(needed.file), needed.offset)
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


# -- prepared before a replica's start -------------------------------------------------------------------------------
async def prepared_at(src: SourceConnection, position: BinlogPosition, database: str) -> dict[str, Held]:
    """The XA transactions that were prepared and not resolved at ``position`` (where a replica's stream starts after
    an initial load or a snapshot), as the stream would have held them had it passed their prepared parts: XID ->
    :class:`Held` (file/offset positions of the server ``src`` is connected to), in the order they were prepared.

    Their rows are invisible to the load's consistent snapshot and their prepared parts lie before ``position``,
    so without this their XA COMMIT would find nothing to apply. Which XIDs: those ``XA RECOVER`` lists now, and those
    the binlog after ``position`` resolves before preparing them (resolved between ``position`` and now), minus those
    prepared after ``position`` (the stream reads those itself). Where: the binlog is read from ``position`` to its
    end, then back from ``position`` one file at a time until each of them is found. A prepared part that is no longer
    in the binlog is a :class:`ReplicationError` naming the XID and the fix.
    """
    listed = await src.xa_recover()
    server_id = src.info.server_id
    first_after: dict[str, str] = {}
    async for txn, _before in _scan(src.dsn, position, None, server_id):
        xa = txn.xa
        if xa is not None and not xa.one_phase and xa.kind in ("prepare", "commit", "rollback"):
            first_after.setdefault(str(xa.xid), xa.kind)
    needed = {xid for xid, kind in first_after.items() if kind != "prepare"}
    if listed is None:
        logger.warning(
            "user %r may not list the prepared XA transactions of %s (XA RECOVER; MySQL needs GRANT XA_RECOVER_ADMIN "
            "ON *.* TO '%s'@'<host>'): an XA transaction prepared before %s and still prepared now would be missing "
            "from the replica when it commits (docs/replication.md, \"XA transactions\")",
            src.dsn.user, src.dsn.display, src.dsn.user, position,
        )  # fmt: skip
    else:
        needed |= {str(xid) for xid in listed if str(xid) not in first_after}
    if not needed:
        return {}
    files = await src.binlog_files()
    found: dict[str, Held] = {}
    start = files.index(position.file) if position.file in files else -1
    for name in reversed(files[: start + 1]):
        latest: dict[str, Held] = {}  # the last prepared part of each XID in this file
        limit = position if name == position.file else None
        async for txn, before in _scan(src.dsn, BinlogPosition(name, 4), limit, server_id, one_file=True):
            xa = txn.xa
            xid = str(xa.xid) if xa is not None else ""
            if xa is not None and xa.kind == "prepare" and xid in needed and xid not in found:
                empty = not any(isinstance(e, RowsEvent) and e.schema == database for e in txn.events)
                end = replace(txn.position, gtid_set=None, timestamp=0, server_id=server_id)
                latest[xid] = Held(xid, "" if txn.gtid is None else str(txn.gtid), before, end, empty)
        found.update(latest)
        if needed <= found.keys():
            break
    missing = sorted(needed - found.keys())
    if missing:
        raise ReplicationError(
            f"the XA transaction(s) {', '.join(missing)} were prepared before {position}, where the replica's stream "
            f"starts, and are not resolved yet, but their prepared parts are no longer in the binlog of "
            f"{src.dsn.display} (oldest file {files[0] if files else 'none'}): their rows could not be applied at "
            "their XA COMMIT. Commit or roll them back on the source (XA RECOVER lists them), or wait until they are "
            "resolved, then run again (the load starts over)"
        )
    ordered = sorted(found.values(), key=lambda h: (_file_key(h.end.file), h.end.offset))
    for held in ordered:
        logger.info("XA transaction %s was prepared at %s before the replica's start at %s and is not resolved: "
                    "held until its COMMIT or ROLLBACK", held.xid, held.before, position)  # fmt: skip
    return {held.xid: held for held in ordered}


async def _scan(
    dsn: DSN, start: BinlogPosition, limit: BinlogPosition | None, server_id: int, *, one_file: bool = False
) -> AsyncIterator[tuple[Transaction, BinlogPosition]]:
    """The transactions of the binlog from ``start`` (by file and offset) to ``limit`` (included) or to its end now,
    each with the boundary before it (``one_file``: those that end in ``start``'s file only)."""
    stream = BinlogStream(dsn, binlog_file=start.file, position=start.offset, blocking=False, server_id=None,
                          check_preconditions=False, require_full_row_image=False)  # fmt: skip
    before = BinlogPosition(start.file, start.offset, None, 0, server_id)
    async with stream:
        async for txn in stream.transactions():
            pos = txn.position
            if limit is not None and (_file_key(pos.file), pos.offset) > (_file_key(limit.file), limit.offset):
                return
            if one_file and pos.file != start.file:
                return
            yield txn, before
            before = replace(pos, gtid_set=None, timestamp=0, server_id=server_id)


# -- positions -------------------------------------------------------------------------------------------------------
def reached(pos: BinlogPosition, goal: BinlogPosition) -> bool:
    """Whether ``pos`` is at or after ``goal``: by GTID sets when both have one of the same flavour, else by file and
    offset."""
    if pos.gtid_set is not None and goal.gtid_set is not None and pos.gtid_set.flavor == goal.gtid_set.flavor:
        return bool(pos.gtid_set.contains(goal.gtid_set))  # type: ignore[arg-type]
    return (_file_key(pos.file), pos.offset) >= (_file_key(goal.file), goal.offset)


def _file_key(name: str) -> tuple[int, str]:
    digits = name.rsplit(".", 1)[-1]
    return (int(digits), name) if digits.isdigit() else (0, name)
