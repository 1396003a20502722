"""Consumer queues hold batches: a flush reaches a consumer as one queue entry (shared by the consumers that need no
routing of their own), and the consumer hands its events out one at a time.

The guarantees are the ones of per-event queues: the byte limit (an oversized event only into an empty queue), the
position after every event handed out, the statistics, the table filters, attaching while the dispatcher waits for
a full queue, and the sharing window of decoded rows. Driven by the in-memory sources of tests/fakes.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mybinlog import Event, MariaDBGtid, RowsEvent, XidEvent
from mybinlog.sharing import Binlog, _client
from mybinlog.sharing._items import _Batch
from mybinlog.sharing._queue import _Feed
from tests.fakes import FakeLog, gtid_of, make_client, read_txns, seqs, wait_until


def _record_puts(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[_Batch]]:
    """Every batch queued, per consumer name."""
    puts: dict[str, list[_Batch]] = {}
    put = _Feed.put

    def recording(self: _Feed, batch: _Batch) -> None:
        puts.setdefault(self.name, []).append(batch)
        put(self, batch)

    monkeypatch.setattr(_Feed, "put", recording)
    return puts


def _forwarded(log: FakeLog, first_seq: int = 1) -> int:
    """How many events of transactions ``first_seq``... a consumer of every table gets (GTID, rows, XID)."""
    return sum(
        1
        for event, txn in zip(log.events, log.txn_of, strict=True)
        if txn is not None
        and txn.seq_no >= first_seq
        and type(event).__name__ in ("MariadbGtidEvent", "WriteRowsEvent", "XidEvent")
    )


async def test_plain_consumers_share_each_flushed_batch_and_the_event_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    puts = _record_puts(monkeypatch)
    log = FakeLog()
    client = make_client(log, buffer_bytes=1 << 20)  # flushes of many events (flush_ms=0: no timer)
    consumers = [await client.create_binlog(name=f"c{i}") for i in range(3)]  # from now on: no routing state
    last = log.txns(120)[-1]
    got: list[list[Event]] = []
    for c in consumers:
        events: list[Event] = []
        assert seqs(await read_txns(c, last, collect=events)) == list(range(1, 121))
        got.append(events)
    assert all(len(g) == len(got[0]) for g in got)
    assert all(a is b is c for a, b, c in zip(*got, strict=True))  # the very same objects
    batches = [puts[c.name] for c in consumers]
    assert [id(b) for b in batches[0]] == [id(b) for b in batches[1]] == [id(b) for b in batches[2]]
    assert len(batches[0]) < len(got[0]) / 5  # a flush is one queue entry, not one per event
    assert sum(b.nevents for b in batches[0]) == len(got[0])
    for c in consumers:
        assert c.statistics().size == 0
        assert c.statistics().events_received == len(got[0])
        await c.close()


@pytest.mark.parametrize("limit", [1, 100, 300, 1000])
async def test_byte_limit_holds_for_batches_and_every_event_arrives(
    monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    puts = _record_puts(monkeypatch)
    log = FakeLog()
    client = make_client(log, buffer_bytes=1 << 20)  # flushes of many events (flush_ms=0: no timer)
    free = await client.create_binlog(name="free", max_bytes_in_binlog_queue=0)
    tight = await client.create_binlog(
        name="tight", max_bytes_in_binlog_queue=limit, max_milliseconds_to_wait_in_binlog_queue=600_000
    )
    log.txns(30)
    log.txn(rows_size=700)  # an event larger than some limits: it passes alone into an empty queue
    last = log.txns(10)[-1]
    await wait_until(lambda: tight.statistics().size > 0, "the tight queue got events")
    got: list[Any] = []
    sizes_seen: set[int] = set()
    async with asyncio.timeout(10):
        while True:
            stats = tight.statistics()
            assert stats.bytes <= limit or stats.size == 1, stats
            sizes_seen.add(stats.size)
            event = await tight.read_event()
            assert event is not None
            g = gtid_of(event)
            if g is not None:
                got.append(g)
            if isinstance(event, XidEvent) and g is None and got and got[-1] == last:
                break
    assert seqs(got) == list(range(1, 42))
    if limit >= 300:  # room for several events: the dispatcher queued the part of a flush that fits
        assert max(sizes_seen) > 1
        assert any(b.nevents > 1 for b in puts["tight"])
    assert seqs(await read_txns(free, last)) == list(range(1, 42))
    assert len(puts["free"]) < len(puts["tight"])  # the unlimited queue took whole flushes
    await free.close()
    await tight.close()


async def test_position_after_every_event_never_ahead_of_what_was_handed_out() -> None:
    log = FakeLog()
    client = make_client(log, buffer_bytes=1 << 20)
    plain = await client.create_binlog(name="plain")
    # one that executed transactions the dispatcher has not read yet: it skips them (a routed batch), then shares
    ahead = await client.create_binlog(name="ahead", executed_gtid_set=log.gtids(0).add(MariaDBGtid(0, 1, 3)))
    assert ahead.dispatcher is plain.dispatcher
    last = log.txns(40)[-1]

    async def check(c: Binlog, first: int) -> None:
        done = first - 1
        got: list[int] = []
        async with asyncio.timeout(10):
            while done < last.seq_no:
                event = await c.read_event()
                assert event is not None
                g = gtid_of(event)
                if g is not None:
                    got.append(g.seq_no)
                if isinstance(event, XidEvent):
                    done = got[-1]
                # the position moves with the XID handed out, never with what is only queued
                expected = log.gtids(done) if c is plain or done > 3 else log.gtids(0).add(MariaDBGtid(0, 1, 3))
                assert c.position.gtid_set == expected, (event, c.position)
        assert got == list(range(first, last.seq_no + 1))

    await check(plain, 1)
    await check(ahead, 4)
    assert ahead.position == plain.position
    await plain.close()
    await ahead.close()


async def test_statistics_add_up_while_a_batch_is_read_one_event_at_a_time() -> None:
    log = FakeLog()
    client = make_client(log, buffer_bytes=1 << 20)  # flushes of many events (flush_ms=0: no timer)
    c = await client.create_binlog(name="c", max_bytes_in_binlog_queue=0)
    last = log.txns(60)[-1]
    total_events = _forwarded(log) + 1  # + the ROTATE
    total_bytes = 40 + sum(
        e.size for e in log.events if type(e).__name__ in ("MariadbGtidEvent", "WriteRowsEvent", "XidEvent")
    )
    await wait_until(lambda: c.statistics().size == total_events, "everything queued")
    handed = handed_bytes = 0
    async with asyncio.timeout(10):
        while True:
            stats = c.statistics()
            assert stats.events_received == handed
            assert stats.bytes_received == handed_bytes
            assert stats.size + handed == total_events
            assert stats.bytes + handed_bytes == total_bytes
            event = await c.read_event()
            assert event is not None
            handed += 1
            handed_bytes += event.size
            if isinstance(event, XidEvent) and c.position.gtid_set == log.gtids(last.seq_no):
                break
    assert c.statistics().size == 0
    assert c.statistics().bytes == 0
    assert c.events_received == total_events
    [row] = client.status()
    assert (row["size"], row["bytes"]) == (0, 0)
    await c.close()


async def test_filtered_consumers_share_their_batch_and_still_move_their_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    puts = _record_puts(monkeypatch)
    log = FakeLog()
    client = make_client(log, buffer_bytes=1 << 20)  # flushes of many events (flush_ms=0: no timer)
    everything = await client.create_binlog(name="all")
    t2 = [await client.create_binlog(name=f"t2-{i}", tables=["t2"]) for i in range(2)]
    for i in range(40):
        log.txn("t1", "t2") if i % 2 else log.txn("t1")
    last = log.txn_of[-1]
    for c in t2:
        events: list[Event] = []
        assert seqs(await read_txns(c, last, collect=events)) == list(range(1, 41))
        rows = [e for e in events if isinstance(e, RowsEvent)]
        assert [e.table_name for e in rows] == ["t2"] * 20
        assert c.position.gtid_set == log.gtids(40)
    assert [id(b) for b in puts["t2-0"]] == [id(b) for b in puts["t2-1"]]
    assert seqs(await read_txns(everything, last)) == list(range(1, 41))
    assert everything.position == t2[0].position == t2[1].position
    assert log.tables["db.t1"].decoded == 0  # nobody read rows: nothing decoded
    for c in (everything, *t2):
        await c.close()


async def test_a_consumer_attached_while_the_dispatcher_waits_starts_after_what_it_executed() -> None:
    log = FakeLog()
    client = make_client(log, buffer_bytes=1 << 20)  # flushes of many events (flush_ms=0: no timer)
    fast = await client.create_binlog(name="fast")
    blocked = await client.create_binlog(
        name="blocked", max_bytes_in_binlog_queue=200, max_milliseconds_to_wait_in_binlog_queue=600_000
    )
    log.txns(30)
    await wait_until(lambda: fast.statistics().size > 0 and blocked.statistics().size > 0, "queued")
    seen: list[Any] = []
    while (event := await fast.read_event(timeout=0)) is not None:  # what fast got: more than blocked
        g = gtid_of(event)
        if g is not None:
            seen.append(g)
    dispatcher = fast.dispatcher
    assert dispatcher is not None
    waiting_at = dispatcher.delivered_position.gtid_set
    assert waiting_at is not None
    assert fast.position.gtid_set is not None
    assert fast.position.gtid_set.contains(waiting_at)  # the dispatcher commits no further than it waits
    assert waiting_at != log.gtids(30)  # stuck in the middle, waiting for room in blocked's queue
    done = fast.position.gtid_set
    late = await client.create_binlog(name="late", executed_gtid_set=done)
    assert late.dispatcher is dispatcher  # attached to the waiting dispatcher, skipping what it executed
    more = log.txns(3)[-1]
    drained: list[Any] = []
    async with asyncio.timeout(10):
        async for event in blocked:
            g = gtid_of(event)
            if g is not None:
                drained.append(g)
            if isinstance(event, XidEvent) and drained[-1] == more:
                break
    assert seqs(drained) == list(range(1, 34))
    first = max(g.seq_no for g in seen if g in done) + 1
    assert seqs(await read_txns(late, more)) == list(range(first, 34))
    assert seqs(seen + await read_txns(fast, more)) == list(range(1, 34))
    assert late.position == fast.position == blocked.position
    for c in (fast, blocked, late):
        await c.close()


async def test_the_window_keeps_up_inside_one_big_transaction() -> None:
    log = FakeLog()
    table = log.table("t1")
    client = make_client(log, buffer_bytes=1 << 20)  # flushes of many events (flush_ms=0: no timer)
    client.shared_decode_bytes = 600  # ten rows events of 60 bytes
    reader = await client.create_binlog(name="reader")
    stalled = await client.create_binlog(name="stalled", max_bytes_in_binlog_queue=0)
    last = log.txn(*["t1"] * 400)  # one transaction of 400 rows events: no position inside it
    step = client.shared_decode_bytes >> 3
    await wait_until(lambda: stalled.statistics().size == 402 + 1, "the whole transaction queued")

    def decoded_held_by_stalled() -> int:
        held = [item.event for item, _, _, _ in stalled._queue if item is not None]
        return sum(e.size for e in held if isinstance(e, RowsEvent) and e._rows is not None)

    read = 0
    async with asyncio.timeout(10):
        async for event in reader:
            if isinstance(event, RowsEvent):
                assert event.rows == [(event.log_pos,)]
                read += 1
                # what the stalled queue keeps of the rows the reader decoded: the window, plus at most the last
                # step read ahead of it
                assert decoded_held_by_stalled() <= client.shared_decode_bytes + step + 60
            if isinstance(event, XidEvent):
                break
    assert read == 400
    later = await read_txns(stalled, last)
    assert seqs(later) == [1]
    assert table.decoded < 2 * 400  # shared while within the window
    await reader.close()
    await stalled.close()


async def test_closing_a_consumer_releases_what_it_held(monkeypatch: pytest.MonkeyPatch) -> None:
    copies: list[Event] = []
    private_copy = _client._private_copy

    def counting(event: RowsEvent) -> RowsEvent:
        copies.append(event)
        return private_copy(event)

    monkeypatch.setattr(_client, "_private_copy", counting)
    log = FakeLog()
    client = make_client(log, buffer_bytes=1 << 20)  # flushes of many events (flush_ms=0: no timer)
    client.shared_decode_bytes = 600
    reader = await client.create_binlog(name="reader")
    kept = await client.create_binlog(name="kept", max_bytes_in_binlog_queue=0)
    last = log.txns(50)[-1]
    await read_txns(reader, last)
    assert len(copies) > 30  # held by a queue that does not read: copied when they leave the window
    await kept.close()
    copies.clear()
    gone = await client.create_binlog(name="gone", max_bytes_in_binlog_queue=0)
    last = log.txns(50)[-1]
    await wait_until(lambda: gone.statistics().size == 3 * 50, "all queued")
    await gone.close()  # before the reader reads them: nobody else holds them any more
    events: list[Event] = []
    await read_txns(reader, last, collect=events)
    assert len([e for e in events if isinstance(e, RowsEvent)]) == 50
    assert copies == []  # nothing to share, nothing copied
    await reader.close()
