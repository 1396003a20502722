"""Binlog positions and the rule that advances them: once per completed transaction.

A :class:`BinlogPosition` names a transaction boundary: the binlog file and offset just past the last completed
transaction, the executed GTID set including it, and its timestamp. Resuming from a position never replays a
completed transaction and never skips one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from ._constants import EventType
from ._events import (
    ROWS_EVENT_CLASSES,
    Event,
    GtidEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    TransactionPayloadEvent,
    XaPrepareEvent,
    XidEvent,
)
from ._gtid import GtidSet, parse_gtid_set

__all__ = ["PASSIVE_TYPES", "BinlogPosition", "PositionTracker", "binlog_file_key", "position_from", "position_json"]

logger = logging.getLogger("mybinlog.stream")

_U32 = 1 << 32
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)

PASSIVE_TYPES: frozenset[int] = frozenset(
    int(code)
    for code in (
        EventType.TABLE_MAP_EVENT,
        EventType.ROWS_QUERY_LOG_EVENT,
        EventType.ANNOTATE_ROWS_EVENT,
        EventType.INTVAR_EVENT,
        EventType.RAND_EVENT,
        EventType.USER_VAR_EVENT,
        *ROWS_EVENT_CLASSES,
        20,  # pre-GA rows events
        21,
        22,
    )
)
"""Event types that never start, end or name a transaction: they only move the offset (the fast path of
:meth:`PositionTracker.update`, and of the stream)."""


@dataclass(frozen=True, slots=True)
class BinlogPosition:
    """A transaction boundary in the binlog.

    ``file``/``offset``: where the next transaction starts (resume here in file/position mode).
    ``gtid_set``: every transaction executed up to here (resume here in GTID mode), or None when unknown.
    ``timestamp``: header timestamp of the last completed transaction's final event (0 if none yet).
    ``server_id``: the server whose binlog ``file``/``offset`` refer to (the ``server_id`` of the server that
    streamed it, from the fake ROTATE that opens every dump), 0 when unknown. A file/offset means nothing on another
    server: consumers that derive orderings from positions (the replicator's row versions) watch it change.
    """

    file: str
    offset: int
    gtid_set: GtidSet | None = None
    timestamp: int = 0
    server_id: int = 0

    def __str__(self) -> str:
        gtids = f" gtids [{self.gtid_set}]" if self.gtid_set is not None else ""
        return f"{self.file}:{self.offset}{gtids}"


def binlog_file_key(name: str) -> tuple[int, str]:
    """The order of a server's binlog file names (``mysql-bin.000010`` after ``mysql-bin.000009``): by the number
    after the last dot, then by name."""
    digits = name.rsplit(".", 1)[-1]
    return (int(digits), name) if digits.isdigit() else (0, name)


def position_json(pos: BinlogPosition | None) -> dict[str, Any] | None:
    """A position as a JSON-able dict (every field; :func:`position_from` reads it back): the form checkpoints and
    prepared XA transactions store positions in."""
    if pos is None:
        return None
    return {
        "file": pos.file,
        "offset": pos.offset,
        "gtid_set": None if pos.gtid_set is None else str(pos.gtid_set),
        "flavor": None if pos.gtid_set is None else pos.gtid_set.flavor,
        "timestamp": pos.timestamp,
        "server_id": pos.server_id,
    }


def position_from(obj: dict[str, Any] | None) -> BinlogPosition | None:
    """The position :func:`position_json` made."""
    if obj is None:
        return None
    gtids = obj.get("gtid_set")
    gtid_set = parse_gtid_set(gtids, obj.get("flavor")) if gtids is not None else None
    return BinlogPosition(
        obj["file"], int(obj["offset"]), gtid_set, int(obj.get("timestamp", 0)), int(obj.get("server_id", 0))
    )


def _statement_kind(query: str) -> str:
    q = query.lstrip()[:16].upper()
    if q.startswith(("BEGIN", "XA START", "START TRANSACTION")):
        return "begin"
    if q.startswith(("SAVEPOINT", "ROLLBACK TO", "RELEASE")):
        return "inside"
    if q.startswith(("COMMIT", "ROLLBACK")):
        return "end"
    if q.startswith("XA END"):
        return "inside"
    return "statement"


class PositionTracker:
    """Follows a stream of events and moves :attr:`position` at each completed transaction.

    A transaction completes with XID, a COMMIT/ROLLBACK query, XA_PREPARE, or a statement outside BEGIN
    (DDL, and anything MariaDB marks standalone). A GTID becomes executed only then. The 32-bit ``log_pos``
    of binlogs larger than 4 GiB wraps; the tracker corrects it from the event sizes.

    An XA transaction is two transactions here, as in the binlog: its prepared part ends at XA_PREPARE (its GTID is
    executed then, although its rows take effect only at a later ``XA COMMIT`` statement, a transaction of its
    own), and the ``XA COMMIT``/``XA ROLLBACK`` completes as a statement outside BEGIN (MariaDB marks its GTID
    standalone). A position past a prepared part says it was read, not that it took effect: ``Transaction.xa``
    (``_transaction.py``) tells the parts apart.
    """

    def __init__(self, position: BinlogPosition) -> None:
        self.position = position
        self.file = position.file
        self.offset = position.offset  # end of the last event seen
        self.gtid_set: GtidSet | None = position.gtid_set
        self.server_id = position.server_id
        self._after_rotate = False  # the last event that was not a table map or rows event was a ROTATE
        self.in_transaction = False
        self._pending: object | None = None
        self._began = False
        # A GTID start names no offset: the first transaction's GTID event fixes the boundary's offset.
        self._boundary_pending = position.gtid_set is not None

    def _advance(self, event: Event) -> None:
        log_pos = event.log_pos
        if log_pos == 0:  # artificial events (fake ROTATE, payload inner events) carry no position
            return
        expected = self.offset + event.size
        if expected >= _U32 and log_pos == expected % _U32:
            self.offset = expected  # log_pos wrapped past 4 GiB
        else:
            self.offset = log_pos

    def update(self, event: Event) -> bool:
        """Account for one event (in stream order). Returns True when it completed a transaction."""
        if event.type_code in PASSIVE_TYPES:
            # the bulk of a binlog (table maps, rows events): they only move the offset
            if event.in_payload:
                return False
            log_pos = event.log_pos
            if log_pos:
                expected = self.offset + event.size
                if expected >= _U32 and log_pos == expected % _U32:
                    self.offset = expected
                else:
                    self.offset = log_pos
            return False
        if isinstance(event, RotateEvent):
            self._after_rotate = True
            self.file = event.next_file
            self.offset = event.position
            if event.log_pos == 0:
                # A fake ROTATE opens every dump (and follows a file the server left without a ROTATE, after a
                # restart): its header names the server streaming. In GTID mode its offset (4) is not where the
                # next transaction starts (the server skips to the first transaction not executed): the boundary
                # is fixed by the next GTID event, the position keeps the last known boundary meanwhile.
                if event.server_id:
                    self.server_id = event.server_id
                if self.gtid_set is not None:
                    self._boundary_pending = True
                    return False
            if not self.in_transaction:
                self.position = replace(self.position, file=self.file, offset=self.offset, server_id=self.server_id)
            return False
        if event.in_payload:
            return False  # accounted for with its TRANSACTION_PAYLOAD event
        if event.type_code == _FDE and event.log_pos and not self._after_rotate:
            # A real FORMAT_DESCRIPTION starts a file, and the server announces every file it streams with a ROTATE
            # before it; should one ever be missing, the file is the next one (binlog files are numbered in order):
            # never count offsets of a new file against the old file's name.
            self._next_file_without_rotate(event)
        self._after_rotate = False
        self._advance(event)
        if isinstance(event, TransactionPayloadEvent):
            completed = False
            for inner in event.events:
                completed = self._transaction_logic(inner) or completed
            if completed:
                self._commit(event)
            return completed
        if self._transaction_logic(event):
            self._commit(event)
            return True
        return False

    def _next_file_without_rotate(self, event: Event) -> None:
        stem, dot, digits = self.file.rpartition(".")
        if not dot or not digits.isdigit():
            return
        following = f"{stem}.{int(digits) + 1:0{len(digits)}d}"
        logger.warning(
            "a new binlog file started (FORMAT_DESCRIPTION at %s) without a ROTATE after %s:%d; assuming %s",
            event.log_pos,
            self.file,
            self.offset,
            following,
        )
        self.file = following
        self.offset = 4
        if not self.in_transaction and not self._boundary_pending:
            self.position = replace(self.position, file=following, offset=4, server_id=self.server_id)

    def _transaction_logic(self, event: Event) -> bool:
        """Update transaction state; True when ``event`` completes a transaction."""
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            if self._boundary_pending and not self.in_transaction and event.log_pos >= event.size:
                self.position = replace(
                    self.position, file=self.file, offset=event.log_pos - event.size, server_id=self.server_id
                )
            self._boundary_pending = False
            self._pending = event.gtid
            self.in_transaction = True
            self._began = bool(isinstance(event, MariadbGtidEvent) and not event.standalone)
            return False
        if isinstance(event, QueryEvent):
            kind = _statement_kind(event.query)
            if kind == "begin":
                self.in_transaction = True
                self._began = True
                return False
            if kind == "inside":
                return False
            return kind == "end" or not self._began
        if isinstance(event, (XidEvent, XaPrepareEvent)):
            return True
        if isinstance(event, (PreviousGtidsEvent, MariadbGtidListEvent)):
            # Only when the caller gave no GTID set: what came before this file (read from its start).
            if self.gtid_set is None:
                self.gtid_set = event.gtid_set
                self.position = replace(self.position, gtid_set=event.gtid_set)
            return False
        return False

    def _commit(self, event: Event) -> None:
        pending = self._pending
        if pending is not None and self.gtid_set is not None:
            # unknown history (gtid_set None) stays unknown: a partial set would claim too little
            self.gtid_set = self.gtid_set.add(pending)  # type: ignore[arg-type]
        self._pending = None
        self.in_transaction = False
        self._began = False
        self._boundary_pending = False
        self.position = BinlogPosition(self.file, self.offset, self.gtid_set, event.timestamp, self.server_id)
