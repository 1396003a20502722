"""The XA transactions prepared on the source and not resolved at a binlog position (docs/replication.md, "XA
transactions").

Every writer of a replica that starts its stream after a consistent read (the replicator's initial load, the
snapshot job) needs them: their rows are invisible to the read and their prepared parts lie before the stream's
start, so without them their XA COMMIT would find nothing to apply. :func:`prepared_at` finds them (``XA RECOVER``
and the binlog) and gives each as a :class:`PreparedXa`, the record a checkpoint keeps (``Checkpoint.xa``) until
the COMMIT or ROLLBACK comes; the replicator's ``XaHold`` (``mybinlog/replication/_xa.py``) holds them from there.

Here because it talks to the source (queries and binlog reads); imported as ``mybinlog.source.prepared_at``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Self

from ..errors import ReplicationError
from ..protocol import BinlogPosition, RowsEvent, binlog_file_key, position_from, position_json
from ._stream import BinlogStream

if TYPE_CHECKING:
    from ..protocol import Transaction
    from ._dsn import DSN
    from ._session import SourceConnection

__all__ = ["PreparedXa", "prepared_at"]

logger = logging.getLogger("mybinlog.replication")


@dataclass
class PreparedXa:
    """A prepared XA transaction waiting for its COMMIT or ROLLBACK, as a checkpoint keeps it.

    ``before``: the boundary just before its prepared part (a stream started there reads that part first); ``end``:
    the boundary after it. ``empty``: it changed nothing in the replica's scope (nothing to read again).
    """

    xid: str
    gtid: str
    before: BinlogPosition
    end: BinlogPosition
    empty: bool

    def to_json(self) -> dict[str, Any]:
        """The JSON-able form a checkpoint saves (``Checkpoint.xa[xid]``; :meth:`from_json` reads it back)."""
        return {"gtid": self.gtid, "before": position_json(self.before), "end": position_json(self.end),
                "empty": self.empty}  # fmt: skip

    @classmethod
    def from_json(cls, xid: str, obj: dict[str, Any]) -> Self:
        before, end = position_from(obj["before"]), position_from(obj["end"])
        assert before is not None
        assert end is not None
        return cls(xid, str(obj.get("gtid") or ""), before, end, bool(obj.get("empty")))


async def prepared_at(src: SourceConnection, position: BinlogPosition, database: str) -> dict[str, PreparedXa]:
    """The XA transactions that were prepared and not resolved at ``position`` (where a replica's stream starts after
    an initial load or a snapshot), as the stream would have held them had it passed their prepared parts: XID ->
    :class:`PreparedXa` (file/offset positions of the server ``src`` is connected to), in the order they were prepared.

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
    found: dict[str, PreparedXa] = {}
    start = files.index(position.file) if position.file in files else -1
    for name in reversed(files[: start + 1]):
        latest: dict[str, PreparedXa] = {}  # the last prepared part of each XID in this file
        limit = position if name == position.file else None
        async for txn, before in _scan(src.dsn, BinlogPosition(name, 4), limit, server_id, one_file=True):
            xa = txn.xa
            xid = str(xa.xid) if xa is not None else ""
            if xa is not None and xa.kind == "prepare" and xid in needed and xid not in found:
                empty = not any(isinstance(e, RowsEvent) and e.schema == database for e in txn.events)
                end = replace(txn.position, gtid_set=None, timestamp=0, server_id=server_id)
                latest[xid] = PreparedXa(xid, "" if txn.gtid is None else str(txn.gtid), before, end, empty)
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
    ordered = sorted(found.values(), key=lambda h: (binlog_file_key(h.end.file), h.end.offset))
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
            if limit is not None and _after(pos, limit):
                return
            if one_file and pos.file != start.file:
                return
            yield txn, before
            before = replace(pos, gtid_set=None, timestamp=0, server_id=server_id)


def _after(pos: BinlogPosition, limit: BinlogPosition) -> bool:
    return (binlog_file_key(pos.file), pos.offset) > (binlog_file_key(limit.file), limit.offset)
