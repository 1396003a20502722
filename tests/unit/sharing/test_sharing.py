"""The sharing layer (BinlogClient, dispatchers, consumer queues, catch-up merge) driven by in-memory sources.

A :class:`FakeLog` is a scripted server binlog of hand-built events (MariaDB or MySQL GTIDs, rows events whose
``.rows`` can be made to fail); each :class:`FakeSource` is one "connection" to it, started after an executed GTID
set like the server would. Writers append transactions while consumers read. Real corpus binlogs are replayed
through the same machinery to check positions and forwarding on real events.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mybinlog import (
    BinlogClosedError,
    BinlogDetachedError,
    BinlogPosition,
    BinlogStoppedError,
    DecodeError,
    Event,
    GtidEvent,
    MariadbGtidEvent,
    MySQLGtidSet,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    SourceConnectionError,
    XidEvent,
    read_binlog_file,
)
from mybinlog.protocol._events import (
    FormatDescriptionEvent,
)
from mybinlog.protocol._gtid import GtidSet
from mybinlog.protocol._position import PositionTracker
from mybinlog.sharing import Binlog, BinlogClientFactory, EventSource
from mybinlog.sharing._source import SourcePositions
from tests.fakes import (
    COLUMNS,
    DSN_TEXT,
    PASSWORD,
    UUID,
    FakeLog,
    FakeSource,
    gtid_of,
    make_client,
    read_txns,
    seqs,
    wait_until,
)

# ------------------------------------------------------------------------------------------------------------


async def test_two_consumers_share_one_dispatcher() -> None:
    log = FakeLog()
    log.txns(3)
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(0))
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    assert len(client.dispatchers) == 1
    assert len(log.sources) == 1
    last = log.txns(2)[-1]
    ea: list[Event] = []
    eb: list[Event] = []
    assert seqs(await read_txns(a, last, collect=ea)) == [1, 2, 3, 4, 5]
    assert seqs(await read_txns(b, last, collect=eb)) == [1, 2, 3, 4, 5]
    assert [id(e) for e in ea] == [id(e) for e in eb]  # the very same event objects: decoded once
    assert a.position == b.position
    assert a.position.gtid_set == log.gtids(5)
    assert a.position.offset == log.offset
    assert a.position.file == log.file
    rows = client.status()
    assert [list(r) for r in rows] == [COLUMNS, COLUMNS]
    assert {r["dispatcher_name"] for r in rows} == {"dispatcher-1"}
    await a.close()
    await b.close()
    assert log.open_sources == 0
    assert not client.dispatchers


async def test_create_binlog_as_async_context_manager_and_factory_sharing() -> None:
    log = FakeLog()
    factory = BinlogClientFactory()
    client = make_client(log, factory=factory)
    assert factory.get_client(DSN_TEXT.replace("db.example", "db.example")) is client
    assert factory.get_client(DSN_TEXT.replace(PASSWORD, "other")) is not client  # keyed by password too
    async with client.create_binlog(name="ctx", executed_gtid_set=log.gtids(0)) as b:
        last = log.txn()
        assert seqs(await read_txns(b, last)) == [1]
        assert [r["name"] for r in factory.status()] == ["ctx"]
    assert log.open_sources == 0
    assert client not in factory.clients  # disappears with its last consumer
    with pytest.raises(BinlogClosedError):
        await b.read_event()


async def test_attach_ahead_skips_executed_transactions() -> None:
    log = FakeLog()
    log.txns(5)
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(0))
    await read_txns(a, log.txn_of[-1])
    # the dispatcher delivered up to 0-1-5; a consumer that executed up to 0-1-8 loses nothing by attaching
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(8))
    assert b.dispatcher is a.dispatcher
    assert len(log.sources) == 1
    assert b.position.gtid_set == log.gtids(8)
    last = log.txns(5)[-1]
    assert seqs(await read_txns(a, last)) == [6, 7, 8, 9, 10]
    assert seqs(await read_txns(b, last)) == [9, 10]
    assert b.position.gtid_set == log.gtids(10) == a.position.gtid_set
    await a.close()
    await b.close()


async def test_attach_is_lossless_for_mysql_sets_with_holes() -> None:
    log = FakeLog("mysql")
    log.txns(10)
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(0))
    await read_txns(a, log.txn_of[-1])
    holes = MySQLGtidSet.parse(f"{UUID}:1-5:8-12")
    # ClickHouse's is_new would attach (and lose 6-7); the loss-free rule starts a catch-up dispatcher
    b = await client.create_binlog(name="b", executed_gtid_set=holes)
    assert b.dispatcher is not a.dispatcher
    assert len(log.sources) == 2
    last = log.txns(3)[-1]
    assert seqs(await read_txns(b, last)) == [6, 7, 13]
    await a.close()
    await b.close()


async def test_catch_up_dispatcher_merges_into_leader() -> None:
    log = FakeLog()
    log.txns(20)
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(15))
    assert seqs(await read_txns(a, log.txn_of[-1])) == [16, 17, 18, 19, 20]
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(2))
    assert b.dispatcher is not a.dispatcher
    got = await read_txns(b, log.txn_of[-1])
    await wait_until(lambda: b.dispatcher is a.dispatcher, "b merged into a's dispatcher")
    await wait_until(lambda: log.open_sources == 1, "the follower's connection is closed")
    assert len(client.dispatchers) == 1
    last = log.txns(5)[-1]
    got += await read_txns(b, last)
    assert seqs(got) == list(range(3, 26))  # nothing lost, nothing twice
    assert seqs(await read_txns(a, last)) == [21, 22, 23, 24, 25]
    assert b.position == a.position
    await a.close()
    await b.close()
    assert log.open_sources == 0


async def test_position_after_a_merge_never_runs_ahead_of_what_was_handed_out() -> None:
    log = FakeLog()
    log.txns(20)
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(15))
    await read_txns(a, log.txn_of[-1])
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(2))
    # b reads nothing until its catch-up dispatcher has delivered everything and merged: the queue still holds
    # transactions 3..20 when b moves to a's dispatcher
    await wait_until(lambda: b.dispatcher is a.dispatcher, "b merged before reading")
    assert b.statistics().size > 18
    last = log.txns(3)[-1]
    seen: list[Any] = []
    async with asyncio.timeout(10):
        async for event in b:
            position = b.position.gtid_set
            assert position is not None
            g = gtid_of(event)
            if g is not None:
                assert g not in position, f"{g} counted as executed before its transaction was handed out"
                seen.append(g)
            if isinstance(event, XidEvent):
                assert position == log.gtids(seen[-1].seq_no)  # exactly what was handed out
                if seen[-1] == last:
                    break
    assert seqs(seen) == list(range(3, 24))
    await a.close()
    await b.close()


async def test_ten_catch_up_dispatchers_merge_into_one_under_writes() -> None:
    log = FakeLog()
    log.txns(30)
    client = make_client(log, buffer_bytes=4096, flush_ms=5)
    leader = await client.create_binlog(name="leader", executed_gtid_set=log.gtids(30))
    rnd = random.Random(7)
    starts = [rnd.randrange(0, 30) for _ in range(10)]
    consumers = []
    for i, start in enumerate(starts):
        c = await client.create_binlog(name=f"c{i}", executed_gtid_set=log.gtids(start))
        consumers.append((c, start))
    # chained syncs: each catch-up dispatcher syncs to every dispatcher that existed before it
    assert len({id(c.dispatcher) for c, _ in consumers}) >= 2
    stop = asyncio.Event()

    async def writer() -> None:
        while not stop.is_set():
            log.txn()
            await asyncio.sleep(0.001)

    results: dict[str, list[Any]] = {c.name: [] for c, _ in [*consumers, (leader, 0)]}

    async def consume(c: Binlog) -> None:
        got = results[c.name]
        async for event in c:
            g = gtid_of(event)
            if g is not None:
                got.append(g)

    def all_done() -> bool:
        return all(c.position.gtid_set == log.gtids(log.seq) for c, _ in [*consumers, (leader, 0)])

    async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
        w = tg.create_task(writer())
        tasks = [tg.create_task(consume(c)) for c, _ in [*consumers, (leader, 0)]]
        await wait_until(lambda: len(client.dispatchers) == 1, "all merged into one dispatcher", limit_s=20)
        stop.set()
        await w
        await wait_until(all_done, "every consumer received every transaction")
        for t in tasks:
            t.cancel()
    for c, start in consumers:
        assert seqs(results[c.name]) == list(range(start + 1, log.seq + 1)), c.name
        assert c.dispatcher is leader.dispatcher
    await wait_until(lambda: log.open_sources == 1, "followers' connections closed")
    for c, _ in [*consumers, (leader, 0)]:
        await c.close()
    assert log.open_sources == 0


async def test_merge_target_going_away_does_not_break_the_follower() -> None:
    log = FakeLog()
    log.txns(10)
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(10))
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    b_source = log.sources[-1]
    assert isinstance(b_source, FakeSource)
    b_source.gate = asyncio.Event()  # hold the follower until its target is gone
    b_disp = b.dispatcher
    assert b_disp is not None
    assert a.dispatcher in b_disp._sync_to
    await a.close()
    b_source.gate.set()
    last = log.txns(3)[-1]
    assert seqs(await read_txns(b, last)) == list(range(1, 14))
    assert b.dispatcher is b_disp
    assert not b_disp._sync_to
    # and it can itself be a merge target later
    c = await client.create_binlog(name="c", executed_gtid_set=log.gtids(5))
    last = log.txn()
    assert seqs(await read_txns(c, last)) == list(range(6, 15))
    await wait_until(lambda: c.dispatcher is b_disp, "c merged into b's dispatcher")
    await b.close()
    await c.close()
    assert log.open_sources == 0


async def test_byte_limit_oversized_events_pass_and_one_byte_limit_gets_everything() -> None:
    log = FakeLog()
    client = make_client(log)
    tiny = await client.create_binlog(name="tiny", executed_gtid_set=log.gtids(0), max_bytes_in_binlog_queue=1)
    big = await client.create_binlog(name="big", executed_gtid_set=log.gtids(0), max_bytes_in_binlog_queue=0)
    last = log.txns(50)[-1]
    max_queued = 0
    got: list[Any] = []
    async with asyncio.timeout(10):
        async for event in tiny:
            max_queued = max(max_queued, tiny.statistics().size)
            g = gtid_of(event)
            if g is not None:
                got.append(g)
            if isinstance(event, XidEvent) and got[-1] == last:
                break
    assert seqs(got) == list(range(1, 51))
    assert max_queued <= 1  # one oversized event at a time
    assert big.statistics().size > 1  # an unlimited queue takes everything at once
    assert seqs(await read_txns(big, last)) == list(range(1, 51))
    await tiny.close()
    await big.close()


async def test_timed_detach_drains_then_raises_and_reopen_catches_up() -> None:
    log = FakeLog()
    client = make_client(log)
    fast = await client.create_binlog(name="fast", executed_gtid_set=log.gtids(0))
    slow = await client.create_binlog(
        name="slow",
        executed_gtid_set=log.gtids(0),
        max_bytes_in_binlog_queue=300,
        max_milliseconds_to_wait_in_binlog_queue=30,
    )
    last = log.txns(20)[-1]
    assert seqs(await read_txns(fast, last)) == list(range(1, 21))  # the fast one never stalls for good
    await wait_until(lambda: slow.detached, "slow consumer detached")
    assert client.status()
    assert [r["name"] for r in client.status()] == ["fast"]
    drained: list[Any] = []
    with pytest.raises(BinlogDetachedError) as info:  # noqa: PT012 - drain, then the error
        async for event in slow:
            g = gtid_of(event)
            if g is not None:
                drained.append(g)
    assert info.value.retriable
    assert "reopen" in str(info.value)
    assert str(slow.position.gtid_set) in str(info.value)
    assert slow.statistics().events_received > 0
    with pytest.raises(BinlogDetachedError):  # stays detached
        await slow.read_event()
    done = slow.position.gtid_set
    assert done is not None
    again = await slow.reopen()
    got = await read_txns(again, last)
    # nothing lost or repeated across the detach: drained transactions up to the position, then the rest
    complete = [g for g in drained if g in done]
    assert seqs(complete + got) == list(range(1, 21))
    await wait_until(lambda: again.dispatcher is fast.dispatcher, "re-created consumer merged back")
    await fast.close()
    await again.close()
    assert log.open_sources == 0


async def test_only_transaction_events_forwarded_and_positions_at_transaction_end() -> None:
    log = FakeLog()
    log.control()
    log.txn()
    log.control()
    log.ddl()
    client = make_client(log)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    kinds: list[str] = []
    positions: list[GtidSet | None] = []
    async with asyncio.timeout(5):
        async for event in b:
            kinds.append(type(event).__name__)
            positions.append(b.position.gtid_set)
            if isinstance(event, QueryEvent):
                break
    assert kinds == ["RotateEvent", "MariadbGtidEvent", "WriteRowsEvent", "XidEvent", "MariadbGtidEvent", "QueryEvent"]
    empty, one, two = log.gtids(0), log.gtids(1), log.gtids(2)
    # a GTID is executed only once its transaction completed (XID, or the standalone DDL statement)
    assert positions == [empty, empty, empty, one, one, two]
    await b.close()


async def test_filtered_tables_are_never_decoded_and_decode_errors_stay_with_their_table() -> None:
    log = FakeLog()
    log.table("bad", fail=True)
    for _ in range(5):
        log.txn("db.good", "db.bad")
    last = log.txn("db.good", "other.t")
    client = make_client(log)
    good = await client.create_binlog(name="good", executed_gtid_set=log.gtids(0), tables=["good"])
    good2 = await client.create_binlog(
        name="good2", executed_gtid_set=log.gtids(0), databases=["db"], tables=["db.good"]
    )
    bad = await client.create_binlog(name="bad", executed_gtid_set=log.gtids(0), tables=["db.bad"])
    for consumer in (good, good2):
        rows_tables = []
        got = []
        async with asyncio.timeout(5):
            async for event in consumer:
                if isinstance(event, RowsEvent):
                    rows_tables.append(event.table_name)
                    assert event.rows == [(event.log_pos,)]
                g = gtid_of(event)
                if g is not None:
                    got.append(g)
                if isinstance(event, XidEvent) and got[-1] == last:
                    break
        assert rows_tables == ["good"] * 6
        assert seqs(got) == [1, 2, 3, 4, 5, 6]  # position-advancing events of every transaction
        assert consumer.position.gtid_set == log.gtids(6)
    assert log.tables["db.good"].decoded == 6  # decoded once, shared by both consumers
    assert log.tables["db.bad"].decoded == 0  # nobody who filtered it out decoded it
    assert log.tables["other.t"].decoded == 0
    errors = 0
    async with asyncio.timeout(5):
        async for event in bad:
            if isinstance(event, RowsEvent):
                assert event.table_name == "bad"
                with pytest.raises(DecodeError, match="odd column type"):
                    _ = event.rows
                errors += 1
            if isinstance(event, XidEvent) and bad.position.gtid_set == log.gtids(6):
                break
    assert errors == 5
    for c in (good, good2, bad):
        await c.close()


async def test_a_lagging_consumer_never_holds_more_than_a_window_of_rows_decoded_by_others() -> None:
    log = FakeLog()
    table = log.table("t1")
    client = make_client(log)
    client.shared_decode_bytes = 600  # about ten rows events of 60 bytes
    reader = await client.create_binlog(name="reader", executed_gtid_set=log.gtids(0))
    stalled = await client.create_binlog(name="stalled", executed_gtid_set=log.gtids(0), max_bytes_in_binlog_queue=0)
    last = log.txns(100)[-1]
    got: list[Event] = []
    await read_txns(reader, last, collect=got)
    rows_events = [e for e in got if isinstance(e, RowsEvent)]
    # decoded after reading everything (a batching consumer): still, only the last window stays shared
    assert [e.rows for e in rows_events] == [[(e.log_pos,)] for e in rows_events]
    assert table.decoded == 100
    assert stalled.statistics().events_received == 0
    held = [item.event for item, _, _, _ in stalled._queue if item is not None and isinstance(item.event, RowsEvent)]
    assert len(held) == 100
    cached = [e for e in held if e._rows is not None]
    assert 0 < sum(e.size for e in cached) <= client.shared_decode_bytes  # not the 100 x 60 bytes decoded
    # the stalled consumer still gets the same rows: it decodes its private copies itself
    later: list[Event] = []
    await read_txns(stalled, last, collect=later)
    assert [e.rows for e in later if isinstance(e, RowsEvent)] == [[(e.log_pos,)] for e in rows_events]
    assert table.decoded == 100 + 100 - len(cached)
    await reader.close()
    await stalled.close()


async def test_consumers_reading_in_step_share_each_decoded_rows_event() -> None:
    log = FakeLog()
    table = log.table("t1")
    client = make_client(log)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(0))
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    last = log.txns(50)[-1]
    rows: list[Any] = []
    async with asyncio.timeout(10):
        while a.position.gtid_set is None or last not in a.position.gtid_set:
            ea = await a.read_event()
            eb = await b.read_event()
            assert ea is eb  # the very same object
            if isinstance(ea, RowsEvent) and isinstance(eb, RowsEvent):
                rows.append((ea.rows, eb.rows))
    assert len(rows) == 50
    assert all(ra is rb for ra, rb in rows)
    assert table.decoded == 50  # decoded once for both
    await a.close()
    await b.close()


async def test_dispatcher_decode_error_with_table_reaches_only_that_tables_consumers() -> None:
    log = FakeLog()
    log.txns(2)
    client = make_client(log)
    t1 = await client.create_binlog(name="t1", executed_gtid_set=log.gtids(0), tables=["t1"])
    t2 = await client.create_binlog(name="t2", executed_gtid_set=log.gtids(0), tables=["t2"])
    disp = t1.dispatcher
    assert disp is not None
    error = DecodeError("TABLE_MAP of `db`.`t1` is malformed", schema="db", table="t1")
    from mybinlog.sharing._items import _ERROR, _Item

    disp._buffer.append(_Item(None, _ERROR, None, False, error=error, table=("db", "t1")))
    disp._wake.set()
    last = log.txn()
    with pytest.raises(DecodeError, match="malformed"):
        await read_txns(t1, last)
    assert seqs(await read_txns(t2, last)) == [1, 2, 3]
    await t1.close()
    await t2.close()


async def test_log_pos_wrap_past_4_gib() -> None:
    log = FakeLog(start_offset=(1 << 32) - 150)
    log.txns(3)
    client = make_client(log)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    await read_txns(b, log.txn_of[-1])
    assert b.position.offset == log.offset > 1 << 32
    await b.close()


async def test_dispatcher_error_reaches_every_consumer() -> None:
    log = FakeLog()
    log.txns(3)
    log.fail_after = 3 * 5  # three whole transactions, then the connection drops
    client = make_client(log)
    consumers = [await client.create_binlog(name=f"c{i}", executed_gtid_set=log.gtids(0)) for i in range(2)]
    consumers.append(
        await client.create_binlog(name="late", executed_gtid_set=log.gtids(0), max_bytes_in_binlog_queue=1)
    )

    async def read_all(c: Binlog) -> None:
        got: list[Any] = []
        with pytest.raises(SourceConnectionError, match="scripted"):  # noqa: PT012 - drain, then the error
            async for event in c:
                g = gtid_of(event)
                if g is not None:
                    got.append(g)
        assert seqs(got) == [1, 2, 3]  # what was read before the error is delivered first
        with pytest.raises(SourceConnectionError):  # and it stays failed
            await c.read_event()

    # read concurrently: while one queue is full the dispatcher (and so every consumer) waits for it
    async with asyncio.timeout(10):
        await asyncio.gather(*(read_all(c) for c in consumers))
    assert log.open_sources == 0
    assert not client.dispatchers
    for c in consumers:
        await c.close()


async def test_consumer_used_after_dispatcher_stopped_raises() -> None:
    log = FakeLog()
    client = make_client(log)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    await client.aclose()
    with pytest.raises(BinlogStoppedError):
        await b.read_event()
    assert log.open_sources == 0
    await b.close()
    with pytest.raises(BinlogClosedError):
        await b.read_event()


async def test_dispatcher_flushes_by_bytes_and_by_time() -> None:
    log = FakeLog()
    client = make_client(log, buffer_bytes=400, flush_ms=60_000)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    first = log.txns(10)[0]  # ~2.4 kB: byte-triggered flushes deliver the first ones long before 60 s
    got = await read_txns(b, first)
    assert seqs(got) == [1]
    await b.close()
    log2 = FakeLog()
    client2 = make_client(log2, buffer_bytes=1 << 20, flush_ms=20)
    c = await client2.create_binlog(name="c", executed_gtid_set=log2.gtids(0))
    last = log2.txn()  # far below the byte limit: delivered by the timer
    assert seqs(await read_txns(c, last)) == [1]
    rows = client2.status()
    assert rows[0]["dispatcher_events_read_per_sec"] >= 0
    await c.close()


async def test_password_never_shown() -> None:
    log = FakeLog()
    client = make_client(log)
    b = await client.create_binlog(
        name="b",
        executed_gtid_set=log.gtids(0),
        max_bytes_in_binlog_queue=1,
        max_milliseconds_to_wait_in_binlog_queue=0,
    )
    log.txns(3)
    await wait_until(lambda: b.detached, "detached")
    texts = [repr(client), repr(b), repr(client.status()), client.name]
    with pytest.raises(BinlogDetachedError) as info:  # noqa: PT012 - drain, then the error
        while True:
            await b.read_event()
    texts.append(str(info.value))
    assert all(PASSWORD not in t for t in texts)
    assert client.name == "repl@db.example:3306"
    await b.close()


async def test_concurrent_create_and_drop_leaves_nothing_behind() -> None:
    log = FakeLog()
    log.txns(10)
    factory = BinlogClientFactory()
    client = make_client(log, factory=factory, buffer_bytes=1000, flush_ms=2)
    stop = asyncio.Event()

    async def writer() -> None:
        while not stop.is_set():
            log.txn()
            await asyncio.sleep(0.001)

    async def worker(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(5):
            start = rnd.randrange(0, log.seq + 1)
            b = await client.create_binlog(
                name=f"w{seed}", executed_gtid_set=log.gtids(start), max_bytes_in_binlog_queue=rnd.choice([1, 200, 0])
            )
            expected = start + 1
            for _ in range(rnd.randrange(0, 30)):
                event = await asyncio.wait_for(b.read_event(), 10)
                g = gtid_of(event) if event is not None else None
                if g is not None:
                    assert g.seq_no == expected
                    expected += 1
            await b.close()

    async with asyncio.TaskGroup() as tg:
        w = tg.create_task(writer())
        async with asyncio.TaskGroup() as workers:
            for seed in range(20):
                workers.create_task(worker(seed))
        stop.set()
        await w
    assert log.open_sources == 0
    assert not client.dispatchers
    assert not client._consumers
    assert all(t.done() for t in client._tasks)
    assert client not in factory.clients
    assert factory.status() == []


@pytest.mark.parametrize(
    "name",
    [
        "rust_mysql_common__mariadb-bin.000001",
        "rust_mysql_common__transaction_compression.000001",
        "mysql-binlog-connector-rust__mysql-bin.000057",
        "mysql-binlog-connector-java__mysql-bin.checksum-crc32",
    ],
)
async def test_real_corpus_binlog_through_a_dispatcher(corpus_dir: Path, name: str) -> None:
    path = corpus_dir / "binlogs" / name
    events = list(read_binlog_file(path))
    tracker = PositionTracker(BinlogPosition(name, 4, None))
    for event in events:
        tracker.update(event)

    class FileSource:
        def __init__(self) -> None:
            self.it = iter(events)
            self.closed = False
            self.positions = SourcePositions(self.position)

        @property
        def position(self) -> BinlogPosition:
            return BinlogPosition(name, 4, None)

        async def next_with_position(self) -> tuple[Event, BinlogPosition | None] | None:
            event = next(self.it, None)
            return None if event is None else (event, self.positions.after(event))

        async def close(self) -> None:
            self.closed = True

    sources: list[FileSource] = []

    async def open_source(_: object) -> EventSource:
        sources.append(FileSource())
        return sources[-1]

    opener: Callable[[Any], Awaitable[EventSource]] = open_source
    client = BinlogClientFactory().get_client(
        DSN_TEXT,
        source_factory=opener,
        max_bytes_in_binlog_dispatcher_buffer=1 << 20,
        max_flush_milliseconds_in_binlog_dispatcher=1000,
    )
    b = await client.create_binlog(name="b", max_bytes_in_binlog_queue=100)
    got = []
    async with asyncio.timeout(20):
        async for event in b:  # a non-blocking source: iteration ends at its end
            got.append(event)
    forwarded = (GtidEvent, MariadbGtidEvent, RotateEvent, XidEvent, QueryEvent, RowsEvent)
    assert got == [e for e in events if isinstance(e, forwarded) and not isinstance(e, FormatDescriptionEvent)]
    assert any(isinstance(e, RowsEvent) for e in got)
    assert b.position == tracker.position
    await b.close()
    assert all(s.closed for s in sources)
