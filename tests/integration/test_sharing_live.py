"""The sharing layer against a real MariaDB: one connection per user:password@host:port, many consumers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mybinlog import AuthenticationError, MariaDBGtidSet, RowsEvent, XidEvent
from mybinlog._sandbox import MariaDBServer
from mybinlog._sharing import Binlog, BinlogClient, BinlogClientFactory, BinlogDetachedError

COLUMNS_COUNT = 19


def _client(server: MariaDBServer, buffer_bytes: int = 1 << 20, flush_ms: int = 50) -> BinlogClient:
    return BinlogClientFactory().get_client(
        server.repl_dsn,
        max_bytes_in_binlog_dispatcher_buffer=buffer_bytes,
        max_flush_milliseconds_in_binlog_dispatcher=flush_ms,
    )


async def _insert(server: MariaDBServer, db: str, first: int, count: int, per_txn: int = 1) -> None:
    def run() -> None:
        conn = server.connect(database=db, autocommit=False)
        try:
            with conn.cursor() as cur:
                for i in range(first, first + count, per_txn):
                    for j in range(i, min(i + per_txn, first + count)):
                        cur.execute("INSERT INTO t (id, v) VALUES (%s, %s)", (j, f"v{j}"))
                    conn.commit()
        finally:
            conn.close()

    await asyncio.to_thread(run)


def _setup(server: MariaDBServer, db: str) -> str:
    server.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(40))")
    return server.gtid_binlog_pos()


async def _collect(binlog: Binlog, db: str, want: int, *, reopen: bool = False) -> tuple[list[Any], int]:
    """Rows of `db`.t until ``want`` rows, re-creating the consumer after a detach; returns (rows, detaches)."""
    rows: list[Any] = []
    pending: list[Any] = []
    detaches = 0
    while True:
        try:
            async for event in binlog:
                if isinstance(event, RowsEvent) and event.schema == db:
                    pending.extend(event.rows)
                if isinstance(event, XidEvent):
                    rows.extend(pending)  # count a transaction once it completed
                    pending = []
                    if len(rows) >= want:
                        await binlog.close()
                        return rows, detaches
        except BinlogDetachedError:
            if not reopen:
                raise
            detaches += 1
            pending = []  # the incomplete transaction is delivered again from the committed position
            binlog = await binlog.reopen()


async def test_two_consumers_end_on_one_dispatcher(mariadb: MariaDBServer, db: str) -> None:
    start = _setup(mariadb, db)
    client = _client(mariadb)
    a = await client.create_binlog(name="a", executed_gtid_set=start, databases=[db])
    b = await client.create_binlog(name="b", executed_gtid_set=start, databases=[db])
    assert a.dispatcher is b.dispatcher
    await _insert(mariadb, db, 1, 20, per_txn=4)
    async with asyncio.timeout(20):
        (ra, _), (rb, _) = await asyncio.gather(_collect(a, db, 20), _collect(b, db, 20))
    assert ra == rb == [(i, f"v{i}") for i in range(1, 21)]
    await client.aclose()


async def test_four_consumers_with_different_limits_receive_identical_data(mariadb: MariaDBServer, db: str) -> None:
    start = _setup(mariadb, db)
    client = _client(mariadb)
    limits = [(100_000_000, 60_000), (10, 10_000), (10, 100), (10, 10)]
    consumers = [
        await client.create_binlog(
            name=f"c{i}",
            executed_gtid_set=start,
            databases=[db],
            max_bytes_in_binlog_queue=max_bytes,
            max_milliseconds_to_wait_in_binlog_queue=wait_ms,
        )
        for i, (max_bytes, wait_ms) in enumerate(limits)
    ]
    await _insert(mariadb, db, 1, 300, per_txn=10)
    async with asyncio.timeout(40):
        results = await asyncio.gather(*(_collect(c, db, 300, reopen=True) for c in consumers))
    expected = [(i, f"v{i}") for i in range(1, 301)]
    for rows, _ in results:
        assert rows == expected
    await client.aclose()


async def test_wrong_password_fails_at_creation_without_leaking_it(mariadb: MariaDBServer) -> None:
    secret = "definitely-not-the-password"
    dsn = mariadb.repl_dsn.replace(mariadb.repl_dsn.split(":")[2].split("@")[0], secret)
    assert secret in dsn
    client = BinlogClientFactory().get_client(dsn)
    with pytest.raises(AuthenticationError) as info:
        await client.create_binlog(name="x", executed_gtid_set=mariadb.gtid_binlog_pos() or "0-1-0")
    assert secret not in str(info.value)
    assert secret not in repr(info.value)
    assert secret not in repr(client)
    assert client.status() == []
    assert not client.dispatchers


@pytest.mark.parametrize(("buffer_bytes", "flush_ms"), [(0, 0), (1000, 1000), (100_000_000, 1000)])
async def test_dispatcher_buffer_settings_deliver(
    mariadb: MariaDBServer, db: str, buffer_bytes: int, flush_ms: int
) -> None:
    start = _setup(mariadb, db)
    client = _client(mariadb, buffer_bytes, flush_ms)
    a = await client.create_binlog(name="a", executed_gtid_set=start, databases=[db])
    b = await client.create_binlog(name="b", executed_gtid_set=start, max_bytes_in_binlog_queue=10)
    await _insert(mariadb, db, 1, 50, per_txn=5)
    async with asyncio.timeout(20):
        (ra, _), (rb, _) = await asyncio.gather(_collect(a, db, 50), _collect(b, db, 50, reopen=True))
    assert ra == rb == [(i, f"v{i}") for i in range(1, 51)]
    await client.aclose()


async def test_late_consumer_catches_up_and_merges_under_steady_writes(mariadb: MariaDBServer, db: str) -> None:
    old = _setup(mariadb, db)
    await _insert(mariadb, db, 1, 200, per_txn=2)
    client = _client(mariadb, 1 << 20, 100)
    live = await client.create_binlog(name="live", executed_gtid_set=mariadb.gtid_binlog_pos(), databases=[db])
    stop = asyncio.Event()
    written = [200]

    async def writer() -> None:
        while not stop.is_set():
            await _insert(mariadb, db, written[0] + 1, 5, per_txn=1)
            written[0] += 5

    late_rows: list[Any] = []

    async def late_reader(late: Binlog) -> None:
        pending: list[Any] = []
        async for event in late:
            if isinstance(event, RowsEvent) and event.schema == db:
                pending.extend(event.rows)
            if isinstance(event, XidEvent):
                late_rows.extend(pending)
                pending = []

    async def drain(b: Binlog) -> None:
        async for _ in b:
            pass

    async with asyncio.TaskGroup() as tg:
        w = tg.create_task(writer())
        live_task = tg.create_task(drain(live))
        late = await client.create_binlog(name="late", executed_gtid_set=old, databases=[db])
        assert late.dispatcher is not live.dispatcher  # behind: its own catch-up connection
        reader = tg.create_task(late_reader(late))

        async def merged() -> None:
            while late.dispatcher is not live.dispatcher:  # noqa: ASYNC110 - state of two dispatchers
                await asyncio.sleep(0.01)

        await asyncio.wait_for(merged(), 20)  # merges while the writer keeps writing
        assert w.done() is False
        stop.set()
        await w
        final = MariaDBGtidSet.parse(mariadb.gtid_binlog_pos())

        async def caught_up() -> None:
            while late.position.gtid_set is None or not late.position.gtid_set.contains(final):  # type: ignore[arg-type]  # noqa: ASYNC110
                await asyncio.sleep(0.01)

        await asyncio.wait_for(caught_up(), 20)
        reader.cancel()
        live_task.cancel()
    assert late_rows == [(i, f"v{i}") for i in range(1, written[0] + 1)]  # nothing lost, nothing twice
    rows = client.status()
    assert len(rows) == 2
    assert len(rows[0]) == COLUMNS_COUNT
    assert {r["dispatcher_name"] for r in rows} == {live.dispatcher.name if live.dispatcher else ""}
    assert all("repl@" in r["binlog_client_name"] for r in rows)
    await client.aclose()
