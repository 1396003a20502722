"""Whole transactions out of a sequence of events: :class:`Transaction` and the sans-IO :class:`TransactionCollector`
behind ``Binlog.transactions()`` and ``BinlogStream.transactions()``.

The collector is fed each event with the reader's position after it (``Binlog.position``/``BinlogStream.position``:
the boundary after the last transaction whose completing event was handed out). It tells the completing event by the
rule of :class:`~mybinlog.protocol._position.PositionTracker` (XID, XA PREPARE, COMMIT/ROLLBACK, or a statement
outside BEGIN), not by the position moving: a reader also moves its position between transactions (a ROTATE, the
first event after a reconnect, a transaction the consumer skips). The events between transactions (ROTATE,
FORMAT_DESCRIPTION, heartbeats, GTID lists) belong to none and are left out. Nothing here performs IO.

XA transactions reach the binlog in two parts, each a transaction of its own with its own GTID: the prepared part
(``XA START``, the rows, ``XA END``, ending with an XA_PREPARE event), and later, after any number of other
transactions and maybe a server restart, an ``XA COMMIT`` or ``XA ROLLBACK`` statement alone. ``XA COMMIT ... ONE
PHASE`` is one transaction (MySQL: its XA_PREPARE event has ``one_phase`` set; MariaDB logs it as an ordinary
transaction). :attr:`Transaction.xa` says which part a transaction is (:class:`XaStatement`): the rows of a
``"prepare"`` part take effect only when a later ``"commit"`` names the same :class:`Xid`, never after a
``"rollback"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ._events import (
    BinlogCheckpointEvent,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    StopEvent,
    TransactionPayloadEvent,
    XaPrepareEvent,
    XidEvent,
)
from ._gtid import Gtid
from ._position import BinlogPosition, _statement_kind

__all__ = ["Transaction", "TransactionCollector", "XaStatement", "Xid", "parse_xa_statement"]

# events that start, end or name no transaction (a compressed transaction's payload event is left out too: its inner
# events are handed out after it)
_BETWEEN = (
    RotateEvent,
    FormatDescriptionEvent,
    PreviousGtidsEvent,
    MariadbGtidListEvent,
    BinlogCheckpointEvent,
    HeartbeatEvent,
    StopEvent,
    TransactionPayloadEvent,
)


@dataclass(frozen=True, slots=True)
class Xid:
    """An XA transaction's identifier: ``gtrid`` and ``bqual`` (bytes, up to 64 each) and ``format_id``.

    ``str()`` gives the form the server writes in the binlog (``X'78',X'',1``), which names the same XA transaction
    whatever form the client used in its ``XA`` statements."""

    gtrid: bytes
    bqual: bytes = b""
    format_id: int = 1

    def __str__(self) -> str:
        return f"X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}"


@dataclass(frozen=True, slots=True)
class XaStatement:
    """What an XA statement or event does: ``kind`` is ``"start"``, ``"end"``, ``"prepare"``, ``"commit"`` or
    ``"rollback"``; ``one_phase`` marks ``XA COMMIT ... ONE PHASE`` (``kind`` ``"commit"``)."""

    kind: Literal["start", "end", "prepare", "commit", "rollback"]
    xid: Xid
    one_phase: bool = False


_XA_HEAD = re.compile(r"\s*XA\s+(START|BEGIN|END|PREPARE|COMMIT|ROLLBACK)\s+", re.IGNORECASE)
_XA_LITERAL = re.compile(
    r"""\s*(?:_[A-Za-z0-9]+\s*)?(?:[Xx]'([0-9A-Fa-f]*)'|0x([0-9A-Fa-f]+)|'((?:[^'\\]|\\.|'')*)'|"((?:[^"\\]|\\.|"")*)")"""
)
_XA_NUMBER = re.compile(r"\s*,\s*(-?\d+)")
_XA_KINDS: dict[str, Literal["start", "end", "prepare", "commit", "rollback"]] = {
    "START": "start",
    "BEGIN": "start",
    "END": "end",
    "PREPARE": "prepare",
    "COMMIT": "commit",
    "ROLLBACK": "rollback",
}
_XA_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "Z": "\x1a"}


def _xa_literal(text: str, pos: int) -> tuple[bytes, int] | None:
    m = _XA_LITERAL.match(text, pos)
    if m is None:
        return None
    hex1, hex2, single, double = m.groups()
    if hex1 is not None or hex2 is not None:
        digits = hex1 if hex1 is not None else hex2
        if len(digits) % 2:
            digits = "0" + digits
        return bytes.fromhex(digits), m.end()
    quote = "'" if single is not None else '"'
    raw = single if single is not None else double
    raw = re.sub(r"\\(.)", lambda e: _XA_ESCAPES.get(e.group(1), e.group(1)), raw.replace(quote * 2, quote))
    return raw.encode("utf-8", "surrogateescape"), m.end()


def parse_xa_statement(query: str) -> XaStatement | None:
    """The XA statement in a QUERY event's text (``XA COMMIT X'78',X'',1``, as the server logs it, or any form a
    client may write: ``XA ROLLBACK 'x'``, ``XA COMMIT 'g','b',7 ONE PHASE``), or None when ``query`` is not one."""
    head = _XA_HEAD.match(query)
    if head is None:
        return None
    kind = _XA_KINDS[head.group(1).upper()]
    first = _xa_literal(query, head.end())
    if first is None:
        return None
    gtrid, pos = first
    bqual, format_id = b"", 1
    if query[pos : pos + 20].lstrip().startswith(","):
        comma = query.index(",", pos)
        second = _xa_literal(query, comma + 1)
        if second is None:
            return None
        bqual, pos = second
        number = _XA_NUMBER.match(query, pos)
        if number is not None:
            format_id, pos = int(number.group(1)), number.end()
    rest = query[pos:].split()
    one_phase = kind == "commit" and [w.upper() for w in rest[:2]] == ["ONE", "PHASE"]
    return XaStatement(kind, Xid(gtrid, bqual, format_id), one_phase)


@dataclass(frozen=True, slots=True)
class Transaction:
    """One whole transaction as a reader handed it out.

    ``events``: its events in order (GTID, BEGIN, table maps and rows events, ..., XID or COMMIT; a DDL statement is a
    transaction of its own; the inner events of a compressed transaction). ``position``: the boundary after it, the
    position to persist once it is handled and to start from again (``create_binlog(position=...)``,
    ``BinlogStream(resume_from=...)``). ``gtid``: its GTID, None where the server logs none.

    ``xa``: None for an ordinary transaction. For a part of an XA transaction (the module docstring), what it does:
    ``xa.kind == "prepare"``: the prepared part (its rows are *not* committed yet: hold them until a later
    transaction with ``xa.kind == "commit"`` and the same ``xa.xid``, drop them at ``"rollback"``); ``"commit"``
    with ``xa.one_phase``: an ``XA COMMIT ... ONE PHASE`` (its rows are committed); ``"commit"``/``"rollback"``
    without: the second phase, which holds no rows.
    """

    events: list[Event]
    position: BinlogPosition
    gtid: Gtid | None = None
    xa: XaStatement | None = None


class TransactionCollector:
    """Groups events into :class:`Transaction` objects (sans-IO: events in, transactions out).

    :meth:`add` takes each event with the reader's position right after it was handed out, and returns the
    transaction it completed, or None.
    """

    __slots__ = ("_began", "_events", "_gtid", "_xa")

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._gtid: Gtid | None = None
        self._began = False  # inside BEGIN (explicit, or implied by a MariaDB GTID that is not standalone)
        self._xa: XaStatement | None = None

    def add(self, event: Event, position: BinlogPosition) -> Transaction | None:
        if isinstance(event, _BETWEEN):
            return None
        self._events.append(event)
        if isinstance(event, XidEvent):
            return self._complete(position)
        if isinstance(event, XaPrepareEvent):
            xid = Xid(event.gtrid, event.bqual, event.format_id)
            self._xa = XaStatement("commit", xid, True) if event.one_phase else XaStatement("prepare", xid)
            return self._complete(position)
        if isinstance(event, QueryEvent):
            kind = _statement_kind(event.query)
            if kind == "begin":
                self._began = True
            elif kind == "end" or (kind == "statement" and not self._began):
                if kind == "statement" and event.query.lstrip()[:3].upper() == "XA ":
                    self._xa = parse_xa_statement(event.query)
                return self._complete(position)
        elif isinstance(event, GtidEvent):
            self._gtid = event.gtid
            self._began = False
        elif isinstance(event, MariadbGtidEvent):
            self._gtid = event.gtid
            self._began = not event.standalone
        return None

    def _complete(self, position: BinlogPosition) -> Transaction:
        txn = Transaction(self._events, position, self._gtid, self._xa)
        self._events = []
        self._gtid = None
        self._began = False
        self._xa = None
        return txn
