"""XA transactions on scripted events: the XA statement parser, what ``Transaction.xa`` says about each part (what an
embedding user of ``BinlogStream.transactions()``/``Binlog.transactions()`` gets), the position tracker's
boundaries around the parts, ``mybinlog dump``'s text for them, and the replicator's store of prepared transactions
(:class:`mybinlog.replication._xa.XaHold`: its memory bound, what its checkpoint map holds)."""

from __future__ import annotations

from typing import Any

import pytest

from mybinlog.protocol._constants import EventType
from mybinlog.protocol._events import (
    Event,
    GtidEvent,
    MariadbGtidEvent,
    QueryEvent,
    XaPrepareEvent,
    XidEvent,
)
from mybinlog.protocol._gtid import MariaDBGtid, MySQLGtid, MySQLGtidSet
from mybinlog.protocol._position import BinlogPosition, PositionTracker
from mybinlog.protocol._transaction import TransactionCollector, XaStatement, Xid, parse_xa_statement
from mybinlog.replication._xa import Held, XaHold, reached

SID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
_pos = 4


def _hdr(type_code: int, size: int = 50) -> dict[str, Any]:
    global _pos
    _pos += size
    return {"timestamp": 1_700_000_000, "type_code": type_code, "server_id": 1, "size": size, "log_pos": _pos,
            "flags": 0}  # fmt: skip


def _gtid(gno: int) -> GtidEvent:
    return GtidEvent(**_hdr(int(EventType.GTID_LOG_EVENT)), gtid=MySQLGtid(SID, gno), commit_flag=True)


def _query(text: str) -> QueryEvent:
    return QueryEvent(**_hdr(int(EventType.QUERY_EVENT)), thread_id=1, exec_time=0, error_code=0, schema="d",
                      query=text)  # fmt: skip


def _prepare(gtrid: bytes, one_phase: bool = False, bqual: bytes = b"", format_id: int = 1) -> XaPrepareEvent:
    return XaPrepareEvent(**_hdr(int(EventType.XA_PREPARE_LOG_EVENT)), one_phase=one_phase, format_id=format_id,
                          gtrid=gtrid, bqual=bqual)  # fmt: skip


def _xid() -> XidEvent:
    return XidEvent(**_hdr(int(EventType.XID_EVENT)), xid=7)


def _mysql_xa_binlog() -> list[Event]:
    """The shape MySQL 8.0+ logs: prepared part (GTID, XA START, rows, XA END, XA_PREPARE), an ordinary transaction,
    the XA ROLLBACK alone, a one-phase XA COMMIT, a second prepared part and its XA COMMIT."""
    return [
        _gtid(1), _query("XA START X'78',X'',1"), _query("XA END X'78',X'',1"), _prepare(b"x"),
        _gtid(2), _query("BEGIN"), _xid(),
        _gtid(3), _query("XA ROLLBACK X'78',X'',1"),
        _gtid(4), _query("XA START X'6f',X'',1"), _query("XA END X'6f',X'',1"), _prepare(b"o", one_phase=True),
        _gtid(5), _query("XA START X'79',X'62',7"), _query("XA END X'79',X'62',7"), _prepare(b"y", bqual=b"b",
                                                                                              format_id=7),
        _gtid(6), _query("XA COMMIT X'79',X'62',7"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("XA COMMIT X'78',X'',1", XaStatement("commit", Xid(b"x"))),  # the servers' binlog form
        ("XA ROLLBACK X'79',X'62',7", XaStatement("rollback", Xid(b"y", b"b", 7))),
        ("xa commit 'x'", XaStatement("commit", Xid(b"x"))),  # forms a client may write
        ("XA COMMIT 'g','b',7 ONE PHASE", XaStatement("commit", Xid(b"g", b"b", 7), one_phase=True)),
        ("XA START 0x6162", XaStatement("start", Xid(b"ab"))),
        ("XA BEGIN \"it\"\"s\"", XaStatement("start", Xid(b'it"s'))),
        ("  XA END 'a\\'b', X'00ff', 3", XaStatement("end", Xid(b"a'b", b"\x00\xff", 3))),
        ("XA PREPARE _utf8mb4'x'", XaStatement("prepare", Xid(b"x"))),
        ("XA RECOVER", None),
        ("SELECT 'XA COMMIT'", None),
        ("COMMIT", None),
    ],
)
def test_parse_xa_statement(query: str, expected: XaStatement | None) -> None:
    assert parse_xa_statement(query) == expected


def test_xid_text_is_the_binlog_form() -> None:
    assert str(Xid(b"x")) == "X'78',X'',1"
    assert str(Xid(b"y", b"b", 7)) == "X'79',X'62',7"
    assert str(parse_xa_statement("XA COMMIT 'y','b',7").xid) == "X'79',X'62',7"  # type: ignore[union-attr]


def test_transactions_say_which_part_of_an_xa_transaction_they_are() -> None:
    collector = TransactionCollector()
    tracker = PositionTracker(BinlogPosition("binlog.000001", 4, MySQLGtidSet()))
    txns = []
    for event in _mysql_xa_binlog():
        tracker.update(event)
        txn = collector.add(event, tracker.position)
        if txn is not None:
            txns.append(txn)
    assert [t.xa for t in txns] == [
        XaStatement("prepare", Xid(b"x")),
        None,
        XaStatement("rollback", Xid(b"x")),
        XaStatement("commit", Xid(b"o"), one_phase=True),
        XaStatement("prepare", Xid(b"y", b"b", 7)),
        XaStatement("commit", Xid(b"y", b"b", 7)),
    ]
    # each part is a transaction of its own: its GTID is executed at its end, the position moves past it
    assert [t.gtid.gno for t in txns] == [1, 2, 3, 4, 5, 6]  # type: ignore[union-attr]
    assert [len(list(t.position.gtid_set)) for t in txns] == [1, 2, 3, 4, 5, 6]  # type: ignore[arg-type]


def test_mariadb_xa_parts() -> None:
    """MariaDB 10.5+: the prepared part's GTID event carries FL_PREPARED_XA, the XA COMMIT's is standalone with
    FL_COMPLETED_XA (as a live 10.11 logs them); dump names both."""

    def gtid(seq: int, flags: int) -> MariadbGtidEvent:
        return MariadbGtidEvent(**_hdr(int(EventType.MARIADB_GTID_EVENT)), gtid=MariaDBGtid(0, 1, seq),
                                gtid_flags=flags)  # fmt: skip

    prepared = gtid(4, MariadbGtidEvent.FL_PREPARED_XA | MariadbGtidEvent.FL_TRANSACTIONAL)
    completed = gtid(5, MariadbGtidEvent.FL_STANDALONE | MariadbGtidEvent.FL_COMPLETED_XA)
    events = [prepared, _query("XA END X'78',X'',1"), _prepare(b"x"), completed, _query("XA COMMIT X'78',X'',1")]
    collector = TransactionCollector()
    tracker = PositionTracker(BinlogPosition("binlog.000001", 4))
    done = []
    for event in events:
        completes = tracker.update(event)
        txn = collector.add(event, tracker.position)
        assert completes == (txn is not None)
        if txn is not None:
            done.append(txn.xa)
    assert done == [XaStatement("prepare", Xid(b"x")), XaStatement("commit", Xid(b"x"))]
    assert prepared.describe() == "GTID 0-1-4 xa-prepare"
    assert completed.describe() == "GTID 0-1-5 standalone xa-complete"


def test_dump_text_pairs_prepare_with_commit() -> None:
    """``mybinlog dump`` prints an XA_PREPARE with the XID in the form of the XA COMMIT/ROLLBACK statements, and a
    one-phase commit as such."""
    assert _prepare(b"x").describe() == "XA PREPARE X'78',X'',1"
    assert _prepare(b"o", one_phase=True).describe() == "XA COMMIT X'6f',X'',1 ONE PHASE"
    assert _prepare(b"y", bqual=b"b", format_id=7).describe() == "XA PREPARE X'79',X'62',7"


# -- the replicator's store ----------------------------------------------------------------------------------------


class _FakeTable:
    name = "t"


def _entries(n: int, width: int = 100) -> list[Any]:
    images = ["x" * width for _ in range(n)]
    return [(_FakeTable(), None, None, list(range(n)), images)]


def _p(offset: int) -> BinlogPosition:
    return BinlogPosition("binlog.000002", offset, None, 0, 1)


def test_xa_hold_keeps_rows_within_its_budget() -> None:
    hold = XaHold(limit=10_000)
    hold.prepare("a", "g1", _p(100), _p(200), _entries(30))  # ~4.9 kB
    hold.prepare("b", "g2", _p(300), _p(400), _entries(30))
    assert hold.held["a"].entries is not None
    assert hold.held["b"].entries is not None
    hold.prepare("c", "g3", _p(500), _p(600), _entries(30))  # over the budget: the oldest's rows go
    assert hold.held["a"].entries is None
    assert hold.held["b"].entries is not None
    assert hold.held["c"].entries is not None
    assert hold.bytes <= hold.limit
    hold.prepare("huge", "g4", _p(700), _p(800), _entries(1000))  # alone beyond the budget: kept as metadata only
    assert hold.held["huge"].entries is None
    assert not hold.held["huge"].empty
    assert hold.bytes <= hold.limit
    assert set(hold.held) == {"a", "b", "c", "huge"}  # nothing is forgotten, only its rows
    got = hold.resolve("b")
    assert got is not None
    assert got.entries is not None
    assert hold.resolve("b") is None
    hold.forget_rows()
    assert hold.bytes == 0
    assert all(h.entries is None for h in hold.held.values())


def test_xa_hold_zero_budget_and_empty_prepares() -> None:
    hold = XaHold(limit=0)
    hold.prepare("a", "g1", _p(100), _p(200), _entries(1))
    hold.prepare("other-db", "g2", _p(300), _p(400), [])  # prepared rows of other databases only
    assert hold.held["a"].entries is None
    assert hold.held["other-db"].empty
    assert hold.bytes == 0


def test_xa_hold_checkpoint_map_round_trip_and_oldest_needed() -> None:
    hold = XaHold(limit=1 << 20)
    hold.prepare("X'61',X'',1", "0-1-5", _p(100), _p(200), _entries(2))
    hold.prepare("X'62',X'',1", "0-1-6", _p(50), _p(60), [])  # empty: never read again, not needed
    state = hold.state()
    again = XaHold(limit=1 << 20)
    again.load(state)
    assert again.state() == state
    held = again.held["X'61',X'',1"]
    assert held == Held("X'61',X'',1", "0-1-5", _p(100), _p(200), False)
    assert held.entries is None  # after a restart the rows are read again from the binlog
    assert again.oldest_needed(_p(1000)) == _p(100)
    assert again.oldest_needed(BinlogPosition("binlog.000001", 9, None, 0, 1)).file == "binlog.000001"
    assert again.oldest_needed(BinlogPosition("binlog.000009", 9, None, 0, 2)).server_id == 2  # another server


def test_reached() -> None:
    assert reached(_p(200), _p(200))
    assert not reached(_p(100), _p(200))
    assert reached(BinlogPosition("binlog.000010", 4), BinlogPosition("binlog.000009", 900))

