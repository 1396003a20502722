"""Backpressure: the consumers of one dispatcher whose queues are full wait together, from the same moment.

While the dispatcher waits for room in full queues, every consumer of that dispatcher waits (documented, intended),
so the wait must cost the longest ``max_milliseconds_to_wait_in_binlog_queue`` of the stalled consumers, not their
sum: each full consumer is detached its own limit after the moment the dispatcher started waiting, unless it makes
room first.

These tests run on a virtual-time event loop (tests/unit/virtual_time.py): a wait of L jumps the clock by exactly L,
so the assertions compare virtual times, never the wall clock. The in-memory sources are those of
tests/fakes.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mybinlog import BinlogDetachedError, Event, MariadbGtidEvent, RotateEvent, RowsEvent, XidEvent
from mybinlog.sharing import Binlog, BinlogClient
from mybinlog.sharing._queue import DETACHED, _Feed
from tests.fakes import FakeLog, gtid_of, make_client, seqs
from tests.unit.virtual_time import VirtualTimeDeadlock, run_in_virtual_time

L_MS = 5_000  # a limit long enough that a sum of limits cannot pass for one (virtual time: no real waiting)
L = L_MS / 1000
EXACT = 1e-6  # virtual times are exact up to float rounding


def forwarded(log: FakeLog) -> list[int]:
    """What a consumer of every table receives of ``log`` (GTID, rows, XID events), in order (as ids)."""
    return [id(e) for e in log.events if isinstance(e, (MariadbGtidEvent, RowsEvent, XidEvent))]


def ids(got: list[Event]) -> list[int]:
    """The events received, as ids, without the ROTATE each fake connection starts with."""
    return [id(e) for e in got if not isinstance(e, RotateEvent)]


def detach_times(monkeypatch: pytest.MonkeyPatch, client: BinlogClient) -> dict[str, float]:
    """consumer name -> the loop time at which its dispatcher detached it."""
    times: dict[str, float] = {}
    finish = _Feed.finish

    def recording(self: _Feed, kind: str, error: BaseException | None = None) -> None:
        if kind == DETACHED and self.binlog.client is client:
            times[self.name] = asyncio.get_running_loop().time()
        finish(self, kind, error)

    monkeypatch.setattr(_Feed, "finish", recording)
    return times


async def read_until(binlog: Binlog, last: Any, *, arrivals: list[float] | None = None) -> list[Event]:
    """Every event up to the XID of transaction ``last``; ``arrivals`` gets the loop time each was handed out."""
    loop = asyncio.get_running_loop()
    got: list[Event] = []
    async with asyncio.timeout(1000 * L):  # virtual: only a guard against a livelock
        async for event in binlog:
            got.append(event)
            if arrivals is not None:
                arrivals.append(loop.time())
            if isinstance(event, XidEvent) and [g for g in map(gtid_of, got) if g is not None][-1] == last:
                return got
    return got


async def drain_detached(binlog: Binlog) -> list[Event]:
    """What a detached consumer still had queued; then it must raise BinlogDetachedError."""
    got: list[Event] = []
    with pytest.raises(BinlogDetachedError):  # noqa: PT012 - drain, then the error
        async for event in binlog:
            got.append(event)
    return got


async def create(client: BinlogClient, log: FakeLog, name: str, **settings: Any) -> Binlog:
    return await client.create_binlog(name=name, executed_gtid_set=log.gtids(0), **settings)


# ------------------------------------------------------------------------------------------------------------


def test_the_virtual_clock_jumps_to_the_next_timer_and_reports_deadlocks(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        seen: list[float] = []
        await asyncio.sleep(3600)
        seen.append(loop.time())
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(2.5):
                await asyncio.Event().wait()
        seen.append(loop.time())
        return seen

    assert run_in_virtual_time(monkeypatch, main, start=100.0) == [3700.0, 3702.5]

    async def stuck() -> None:
        await asyncio.Event().wait()  # nothing will ever set it, and no timer is pending

    with pytest.raises(VirtualTimeDeadlock):
        run_in_virtual_time(monkeypatch, stuck)


def test_three_stalled_consumers_cost_one_limit_not_three(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        log = FakeLog()
        client = make_client(log)  # a flush per event
        times = detach_times(monkeypatch, client)
        fast = await create(client, log, "fast")
        stalled = [
            await create(
                client,
                log,
                f"stalled-{i}",
                max_bytes_in_binlog_queue=300,
                max_milliseconds_to_wait_in_binlog_queue=L_MS,
            )
            for i in range(3)
        ]
        assert {c.dispatcher for c in stalled} == {fast.dispatcher}
        start = loop.time()
        last = log.txns(20)[-1]
        arrivals: list[float] = []
        got = await read_until(fast, last, arrivals=arrivals)

        # the fast consumer received every event, in order, the very objects of the log
        assert seqs([g for g in map(gtid_of, got) if g is not None]) == list(range(1, 21))
        assert ids(got) == forwarded(log)
        # the three stalled queues were full together; each was detached L after that moment, so all of them
        # cost the dispatcher (and the fast consumer with it) L, not 3 L
        assert sorted(times) == ["stalled-0", "stalled-1", "stalled-2"]
        assert max(times.values()) - start == pytest.approx(L, abs=EXACT)
        assert all(t - start == pytest.approx(L, abs=EXACT) for t in times.values())
        assert arrivals[-1] - start == pytest.approx(L, abs=EXACT)
        assert arrivals[0] == start  # nothing waited before the queues were full
        for c in stalled:
            assert c.detached
            drained = await drain_detached(c)
            assert drained  # what was queued is kept
            assert [id(e) for e in drained] == [id(e) for e in got[: len(drained)]]  # a prefix, in order
        assert [r["name"] for r in client.status()] == ["fast"]
        await fast.close()
        assert log.open_sources == 0

    run_in_virtual_time(monkeypatch, main)


def test_each_stalled_consumer_is_detached_at_its_own_limit_from_the_same_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits = {"three": 3_000, "one": 1_000, "two": 2_000}  # created in this order: not sorted

    async def main() -> None:
        loop = asyncio.get_running_loop()
        log = FakeLog()
        client = make_client(log)
        times = detach_times(monkeypatch, client)
        fast = await create(client, log, "fast")
        stalled = [
            await create(client, log, name, max_bytes_in_binlog_queue=300, max_milliseconds_to_wait_in_binlog_queue=ms)
            for name, ms in limits.items()
        ]
        start = loop.time()
        last = log.txns(20)[-1]
        arrivals: list[float] = []
        got = await read_until(fast, last, arrivals=arrivals)
        assert ids(got) == forwarded(log)
        assert {name: t - start for name, t in times.items()} == {
            name: pytest.approx(ms / 1000, abs=EXACT) for name, ms in limits.items()
        }
        # the others waited for the longest limit (3 s), not the sum (6 s)
        assert arrivals[-1] - start == pytest.approx(3.0, abs=EXACT)
        for c in stalled:
            assert await drain_detached(c)
        await fast.close()

    run_in_virtual_time(monkeypatch, main)


def test_queues_full_at_different_items_of_one_flush_wait_from_the_same_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        log = FakeLog()
        client = make_client(log, buffer_bytes=1 << 20)  # the 8 transactions below reach the queues as one flush
        times = detach_times(monkeypatch, client)
        fast = await create(client, log, "fast", max_bytes_in_binlog_queue=0)
        every = await create(
            client, log, "every", max_bytes_in_binlog_queue=300, max_milliseconds_to_wait_in_binlog_queue=L_MS
        )
        # no rows of t1 for this one: its queue fills at a later item of the flush than `every`'s
        other = await create(
            client,
            log,
            "other",
            tables=["t2"],
            max_bytes_in_binlog_queue=300,
            max_milliseconds_to_wait_in_binlog_queue=L_MS,
        )
        start = loop.time()
        first = log.txns(8)[-1]
        got = await read_until(fast, first)  # the whole flush fitted its unlimited queue at once
        assert loop.time() == start
        last = log.txn()  # the next flush waits until the two full queues are detached
        arrivals: list[float] = []
        got += await read_until(fast, last, arrivals=arrivals)
        assert ids(got) == forwarded(log)
        assert times == {"every": pytest.approx(start + L, abs=EXACT), "other": pytest.approx(start + L, abs=EXACT)}
        assert arrivals[0] - start == pytest.approx(L, abs=EXACT)  # L, not 2 L
        drained_every = await drain_detached(every)
        drained_other = await drain_detached(other)
        # they were full at different items: `other` (no rows events) took more transactions into its 300 bytes
        assert not any(isinstance(e, RowsEvent) for e in drained_other)
        assert len([e for e in drained_other if isinstance(e, XidEvent)]) > len(
            [e for e in drained_every if isinstance(e, XidEvent)]
        )
        await fast.close()

    run_in_virtual_time(monkeypatch, main)


def test_a_slow_consumer_that_makes_room_is_fed_and_never_detached_while_a_stalled_one_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        log = FakeLog()
        client = make_client(log)
        times = detach_times(monkeypatch, client)
        fast = await create(client, log, "fast")
        stalled = await create(
            client, log, "stalled", max_bytes_in_binlog_queue=300, max_milliseconds_to_wait_in_binlog_queue=L_MS
        )
        slow = await create(
            client, log, "slow", max_bytes_in_binlog_queue=300, max_milliseconds_to_wait_in_binlog_queue=L_MS
        )
        start = loop.time()
        last = log.txns(20)[-1]

        async def read_slowly() -> list[Event]:
            got: list[Event] = []
            async for event in slow:
                got.append(event)
                if isinstance(event, XidEvent) and [g for g in map(gtid_of, got) if g is not None][-1] == last:
                    return got
                await asyncio.sleep(0.3 * L)  # its work per event (virtual time): well within its limit
            return got

        async with asyncio.TaskGroup() as tg:
            slow_task = tg.create_task(read_slowly())
            got_fast = await read_until(fast, last)
        assert ids(got_fast) == forwarded(log)
        assert ids(slow_task.result()) == forwarded(log)  # everything, never detached
        assert not slow.detached
        assert times == {"stalled": pytest.approx(start + L, abs=EXACT)}
        assert await drain_detached(stalled)
        await fast.close()
        await slow.close()

    run_in_virtual_time(monkeypatch, main)


def test_a_full_queue_behind_a_slow_one_is_detached_at_its_own_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        log = FakeLog()
        client = make_client(log, buffer_bytes=1 << 20)  # the 12 transactions below reach the queues as one flush
        times = detach_times(monkeypatch, client)
        fast = await create(client, log, "fast", max_bytes_in_binlog_queue=0)
        # full early in the flush, reads one event per 0.45 L: the dispatcher waits for it again and again
        slow = await create(
            client, log, "slow", max_bytes_in_binlog_queue=100, max_milliseconds_to_wait_in_binlog_queue=L_MS
        )
        # full much later in the same flush (no rows events for it, a larger queue), never reads
        stalled = await create(
            client,
            log,
            "stalled",
            tables=["t2"],
            max_bytes_in_binlog_queue=600,
            max_milliseconds_to_wait_in_binlog_queue=L_MS,
        )
        start = loop.time()
        last = log.txns(12)[-1]

        async def read_slowly() -> list[Event]:
            got: list[Event] = []
            async for event in slow:
                got.append(event)
                if isinstance(event, XidEvent) and [g for g in map(gtid_of, got) if g is not None][-1] == last:
                    return got
                await asyncio.sleep(0.45 * L)  # its work per event (virtual time)
            return got

        got_slow = await read_slowly()
        assert ids(got_slow) == forwarded(log)
        assert not slow.detached
        # `stalled` was full when the dispatcher started waiting for `slow`: its wait ended L later, at the first
        # look after that (the next time `slow` had room), long before the dispatcher reached its item
        assert start + L <= times["stalled"] < start + 2 * L
        drained = await drain_detached(stalled)
        assert drained
        assert not any(isinstance(e, RowsEvent) for e in drained)
        assert ids(await read_until(fast, last)) == forwarded(log)
        await fast.close()
        await slow.close()

    run_in_virtual_time(monkeypatch, main)
