"""The consumer as an anyio object receive stream: ``receive``/``receive_nowait``, the end as ``anyio.EndOfStream``
(never a sentinel), ``aclose`` (and its alias ``close``), ``statistics()``, ``read_event(timeout=seconds)``, use
inside anyio task groups and cancel scopes on the asyncio backend, and ``transactions()``: whole transactions with
the position to persist after each, and a crash-safe consumer built on it.

Driven by the in-memory sources of tests/fakes.py; timeouts run on the virtual clock of
tests/unit/virtual_time.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc
import pytest

from mybinlog import (
    BinlogClosedError,
    BinlogDetachedError,
    BinlogPosition,
    Event,
    GtidEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    Transaction,
    XidEvent,
)
from mybinlog.sharing import Binlog, BinlogClient, BinlogClientFactory, BinlogStatistics, EventSource
from mybinlog.sharing._source import SourcePositions
from tests.fakes import DSN_TEXT, FakeLog, gtid_of, make_client, read_txns, seqs, wait_until
from tests.unit.virtual_time import run_in_virtual_time

# ------------------------------------------------------------------------------------------------------------
# a non-blocking source: the events of a FakeLog as they are now, then the end


class EndingSource:
    """The events of ``log`` not in ``executed``, then the end (``next_event`` returns None: a non-blocking source)."""

    def __init__(self, log: FakeLog) -> None:
        self.events = [RotateEvent(**_fake_rotate_header(), position=4, next_file=log.file), *log.events]
        self.closed = False
        self.positions = SourcePositions(self.position)

    @property
    def position(self) -> BinlogPosition:
        return BinlogPosition("", 4, None)

    async def next_with_position(self) -> tuple[Event, BinlogPosition | None] | None:
        event = await self.next_event()
        return None if event is None else (event, self.positions.after(event))

    async def next_event(self) -> Event | None:
        return self.events.pop(0) if self.events else None

    async def close(self) -> None:
        self.closed = True


def _fake_rotate_header() -> dict[str, Any]:
    return {"timestamp": 0, "type_code": 4, "server_id": 1, "size": 40, "log_pos": 0, "flags": 0x20}


def ending_client(log: FakeLog) -> BinlogClient:
    async def open_source(_: object) -> EventSource:
        return EndingSource(log)

    return BinlogClientFactory().get_client(
        DSN_TEXT,
        max_bytes_in_binlog_dispatcher_buffer=0,
        max_flush_milliseconds_in_binlog_dispatcher=0,
        source_factory=open_source,
    )


def forwarded(log: FakeLog) -> list[Event]:
    """What a consumer of the whole log receives (after the fake ROTATE): GTID, rows and XID/QUERY events."""
    return [e for e in log.events if isinstance(e, (MariadbGtidEvent, RowsEvent, XidEvent, QueryEvent))]


# ------------------------------------------------------------------------------------------------------------
# the anyio stream interface


async def test_binlog_is_an_anyio_object_receive_stream() -> None:
    log = FakeLog()
    log.txns(3)
    client = make_client(log)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    assert isinstance(b, anyio.abc.ObjectReceiveStream)
    got: list[Event] = []
    async with asyncio.timeout(10):
        while len(got) < 1 + 3 * 3:  # the fake ROTATE, then GTID, rows, XID per transaction
            got.append(await b.receive())
    assert got[1:] == forwarded(log)
    assert b.position.gtid_set == log.gtids(3)
    with pytest.raises(anyio.WouldBlock):  # nothing queued: receive_nowait does not wait
        b.receive_nowait()
    last = log.txn()
    await wait_until(lambda: b.statistics().size == 3, "the next transaction queued")
    assert [b.receive_nowait() for _ in range(3)] == forwarded(log)[-3:]
    assert b.position.gtid_set is not None
    assert last in b.position.gtid_set
    with pytest.raises(anyio.WouldBlock):
        b.receive_nowait()
    await b.aclose()


async def test_statistics_is_a_frozen_snapshot() -> None:
    log = FakeLog()
    client = make_client(log)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0), max_bytes_in_binlog_queue=4096)
    log.txns(2)
    await wait_until(lambda: b.statistics().size == 1 + 2 * 3, "everything queued")
    before = b.statistics()
    assert isinstance(before, BinlogStatistics)
    assert (before.max_bytes, before.max_waiting_ms) == (4096, 10_000)
    assert (before.events_received, before.bytes_received, before.tasks_waiting_receive) == (0, 0, 0)
    queued_bytes = before.bytes
    first = await b.receive()
    after = b.statistics()
    assert before.size == 1 + 2 * 3  # a snapshot: reading does not change it
    assert (after.size, after.bytes) == (before.size - 1, queued_bytes - first.size)
    assert (after.events_received, after.bytes_received) == (1, first.size)
    with pytest.raises(dataclasses.FrozenInstanceError):
        after.size = 0  # type: ignore[misc]
    [row] = client.status()
    assert (row["size"], row["bytes"]) == (after.size, after.bytes)  # the status row's columns of the same names
    await b.aclose()


async def test_end_of_a_non_blocking_source_is_end_of_stream_never_none() -> None:
    log = FakeLog()
    log.txns(2)
    log.ddl()
    client = ending_client(log)
    async with client.create_binlog(name="iter") as b:
        got = [event async for event in b]  # `async for` ends at the end
        assert got[1:] == forwarded(log)
        for _ in range(2):  # and stays at the end, every time
            with pytest.raises(anyio.EndOfStream):
                await b.receive()
            with pytest.raises(anyio.EndOfStream):
                await b.read_event()
            with pytest.raises(anyio.EndOfStream):
                await b.read_event(timeout=0)  # not None: None only means "the timeout passed"
            with pytest.raises(anyio.EndOfStream):
                b.receive_nowait()
    client = ending_client(log)
    async with client.create_binlog(name="read_event") as b:

        async def events() -> AsyncIterator[Event]:
            # an async generator around read_event: a StopAsyncIteration raised in here would become RuntimeError
            while True:
                try:
                    event = await b.read_event()
                except anyio.EndOfStream:
                    return
                assert event is not None  # no timeout given: never None
                yield event

        got = [event async for event in events()]
        assert got[1:] == forwarded(log)


async def test_aclose_is_the_one_way_to_close_and_close_is_its_alias() -> None:
    assert Binlog.close is Binlog.aclose
    log = FakeLog()
    client = make_client(log)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    assert isinstance(await b.receive(), RotateEvent)  # the fake ROTATE that opens a connection
    waiter = asyncio.create_task(b.receive())
    await wait_until(lambda: b.statistics().tasks_waiting_receive == 1, "a reader waits")
    await b.aclose()
    with pytest.raises(BinlogClosedError):  # the waiting reader is woken with the error
        await waiter
    assert b.statistics().tasks_waiting_receive == 0
    await b.aclose()  # idempotent
    await b.close()
    for read in (b.receive, b.read_event):
        with pytest.raises(BinlogClosedError):
            await read()
    with pytest.raises(BinlogClosedError):
        b.receive_nowait()
    assert log.open_sources == 0
    async with client.create_binlog(name="ctx", executed_gtid_set=log.gtids(0)) as c:
        assert isinstance(c, Binlog)
    with pytest.raises(BinlogClosedError):
        await c.receive()


# ------------------------------------------------------------------------------------------------------------
# timeouts: seconds, and the deprecated milliseconds


def test_read_event_timeout_is_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        log = FakeLog()
        client = make_client(log)
        b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
        assert await b.read_event(timeout=1.0) is not None  # the fake ROTATE is queued at once
        t0 = loop.time()
        nothing = await b.read_event(timeout=2.5)
        waited = loop.time() - t0
        t1 = loop.time()
        empty = await b.read_event(timeout=0)  # only what is queued: returns at once
        at_once = loop.time() - t1
        log.txn()
        event = await b.read_event(timeout=3600)  # an event ends the wait
        await b.aclose()
        return [nothing, waited, empty, at_once, event]

    nothing, waited, empty, at_once, event = run_in_virtual_time(monkeypatch, main)
    assert nothing is None
    assert waited == pytest.approx(2.5)  # virtual seconds, not milliseconds
    assert empty is None
    assert at_once == 0
    assert isinstance(event, MariadbGtidEvent)


# ------------------------------------------------------------------------------------------------------------
# anyio task groups and cancel scopes on the asyncio backend


def test_consumer_in_an_anyio_task_group_survives_a_cancel_scope() -> None:
    async def main() -> None:
        log = FakeLog()
        client = make_client(log)
        b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
        got: list[Event] = []
        cancelled: list[int] = []
        enough = anyio.Event()

        async def reader() -> None:
            try:
                async for event in b:
                    got.append(event)
                    if len(got) == 1 + 3 * 3:
                        enough.set()
            except anyio.get_cancelled_exc_class():
                cancelled.append(b.statistics().tasks_waiting_receive)
                raise

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            log.txns(3)
            await enough.wait()
            await wait_until(lambda: b.statistics().tasks_waiting_receive == 1, "the reader waits for more")
            tg.cancel_scope.cancel()
        assert cancelled == [0]  # cancelled while waiting, and no longer counted as waiting
        assert seqs([g for g in map(gtid_of, got) if g is not None]) == [1, 2, 3]
        assert b.position.gtid_set == log.gtids(3)

        # a read with a timeout of its own, cancelled by the task group's cancel scope: cancelled, not timed out
        timed: list[str] = []

        async def read_with_timeout() -> None:
            try:
                await b.read_event(timeout=3600)
            except anyio.get_cancelled_exc_class():
                timed.append("cancelled")
                raise
            timed.append("returned")

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_with_timeout)
            await wait_until(lambda: b.statistics().tasks_waiting_receive == 1, "the timed read waits")
            tg.cancel_scope.cancel()
        assert timed == ["cancelled"]
        assert b.statistics().tasks_waiting_receive == 0

        # the consumer still works: nothing lost, nothing twice
        last = log.txns(2)[-1]
        assert seqs(await read_txns(b, last)) == [4, 5]
        assert b.position.gtid_set == log.gtids(5)
        await b.aclose()
        assert log.open_sources == 0

    anyio.run(main, backend="asyncio")


# ------------------------------------------------------------------------------------------------------------
# transactions()


@pytest.mark.parametrize("flavor", ["mariadb", "mysql"])
async def test_transactions_hold_whole_transactions_and_the_position_after_each(flavor: str) -> None:
    log = FakeLog(flavor)
    log.control()
    log.txn("db.t1", "db.t2")
    log.control()
    log.ddl("CREATE TABLE x (a INT)")
    log.txn("db.t1")
    client = make_client(log)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    txns: list[Transaction] = []
    async with asyncio.timeout(10):
        async for txn in b.transactions():
            txns.append(txn)
            assert b.position == txn.position  # the consumer stands right after it
            if len(txns) == 3:
                break
    assert [t.gtid for t in txns] == _gtids(log)
    by_gtid: dict[Any, list[Event]] = {}
    for event, gtid in zip(log.events, log.txn_of, strict=True):
        if gtid is not None and isinstance(event, (GtidEvent, MariadbGtidEvent, RowsEvent, XidEvent, QueryEvent)):
            by_gtid.setdefault(gtid, []).append(event)
    for k, txn in enumerate(txns, 1):
        assert txn.events == by_gtid[txn.gtid]  # the very same events, and only those (no ROTATE, no control events)
        assert txn.position.gtid_set == log.gtids(k)
        assert txn.position.offset == txn.events[-1].log_pos  # right after its last event
        assert txn.position.file == log.file
    assert [type(e) for e in txns[1].events] == [type(txns[0].events[0]), QueryEvent]  # a DDL on its own
    if flavor == "mysql":  # BEGIN is a QUERY too, and completes nothing
        assert [e.query for e in txns[2].events if isinstance(e, QueryEvent)] == ["BEGIN"]
    assert [e.table_name for e in txns[0].events if isinstance(e, RowsEvent)] == ["t1", "t2"]
    await b.aclose()


def _gtids(log: FakeLog) -> list[Any]:
    out: list[Any] = []
    for gtid in log.txn_of:
        if gtid is not None and gtid not in out:
            out.append(gtid)
    return out


async def test_transactions_of_a_consumer_that_skips_what_it_executed() -> None:
    log = FakeLog()
    log.txns(5)
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(0))
    await read_txns(a, log.txn_of[-1])
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(7))  # attaches ahead: skips 6 and 7
    assert b.dispatcher is a.dispatcher
    log.txns(4)
    got: list[Transaction] = []
    async with asyncio.timeout(10):
        async for txn in b.transactions():
            got.append(txn)
            if txn.position.gtid_set == log.gtids(9):
                break
    assert seqs([t.gtid for t in got]) == [8, 9]
    assert [t.position.gtid_set for t in got] == [log.gtids(8), log.gtids(9)]
    assert all(gtid_of(t.events[0]) == t.gtid and isinstance(t.events[-1], XidEvent) for t in got)
    await a.aclose()
    await b.aclose()


async def test_transactions_end_with_a_non_blocking_source() -> None:
    log = FakeLog()
    log.txns(3)
    client = ending_client(log)
    async with client.create_binlog(name="b") as b:
        txns = [txn async for txn in b.transactions()]
    assert seqs([t.gtid for t in txns]) == [1, 2, 3]
    assert txns[-1].position == b.position


async def test_a_crash_safe_consumer_gets_every_transaction_exactly_once() -> None:
    """The docs/sharing.md pattern: handle a transaction, persist ``txn.position``, and after a crash (here: the
    consumer dropped in the middle of a transaction, its partial work lost) or a detach create the consumer again from
    the persisted position. Every transaction is handled exactly once, in order."""
    log = FakeLog()
    log.txns(10)
    client = make_client(log, buffer_bytes=200, flush_ms=1)
    rnd = random.Random(12)
    saved: BinlogPosition | None = None  # the persisted checkpoint (None: start from the beginning)
    handled: list[Any] = []
    crashes = detaches = 0

    async def create(**limits: int) -> Binlog:
        if saved is None:
            return await client.create_binlog(name="durable", executed_gtid_set=log.gtids(0), **limits)
        return await client.create_binlog(name="durable", position=saved, **limits)

    # first life: a queue too small to keep up, detached as soon as it is full (0 ms)
    b = await create(max_bytes_in_binlog_queue=1, max_milliseconds_to_wait_in_binlog_queue=0)
    await wait_until(lambda: b.detached, "detached before reading anything")
    async with asyncio.timeout(20):
        while saved is None or saved.gtid_set != log.gtids(40):
            if log.seq < 40:
                log.txns(10)
            try:
                async for txn in b.transactions():
                    if rnd.random() < 0.15:  # crash before handling it: nothing of it persisted
                        crashes += 1
                        break
                    handled.append(txn.gtid)  # "handle" it, then persist the position after it
                    saved = txn.position
                    if saved.gtid_set == log.gtids(log.seq):
                        break
            except BinlogDetachedError:
                detaches += 1
            await b.aclose()
            b = await create()
    await b.aclose()
    assert detaches == 1
    assert crashes > 0
    assert seqs(handled) == list(range(1, 41))  # nothing lost, nothing twice
    assert log.open_sources == 0
