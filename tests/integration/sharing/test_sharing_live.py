"""The sharing layer against a real MariaDB and a real MySQL: one connection per user:password@host:port, many
consumers."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import random
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mybinlog import (
    AuthenticationError,
    BinlogDetachedError,
    BinlogPosition,
    BinlogStream,
    DecodeError,
    Event,
    EventDecoder,
    GtidEvent,
    GtidSet,
    MariadbGtidEvent,
    MariaDBGtidSet,
    RowsEvent,
    XidEvent,
    parse_gtid_set,
)
from mybinlog.cli._status import register
from mybinlog.sharing import Binlog, BinlogClient, BinlogClientFactory, EventSource
from mybinlog.sharing._source import SourcePositions
from mybinlog.testing._mariadb import MariaDBServer

COLUMNS_COUNT = 20  # ClickHouse's 19 columns of system.mysql_binlogs, then dispatcher_source_server


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


def _gtids(server: MariaDBServer, text: str | None = None) -> GtidSet:
    """A GTID text of ``server`` (its current executed set by default) parsed with the server's flavour."""
    return parse_gtid_set(server.gtid_binlog_pos() if text is None else text, server.flavor)


def _last_seq(server: MariaDBServer, gtids: GtidSet) -> int:
    """The sequence number of the server's own newest transaction in ``gtids`` (0 if none): MariaDB's seq_no of
    domain 0, MySQL's last untagged gno of the server's UUID."""
    if isinstance(gtids, MariaDBGtidSet):
        own = gtids.domains().get(0)
        return own.seq_no if own is not None else 0
    intervals = gtids.intervals(server.server_uuid)
    return intervals[-1][1] if intervals else 0


def _seq(server: MariaDBServer, event: Event) -> int | None:
    """The sequence number of a GTID event of the server's own transactions (None for any other event)."""
    if isinstance(event, MariadbGtidEvent) and event.gtid.domain_id == 0:
        return event.gtid.seq_no
    if isinstance(event, GtidEvent) and event.gtid is not None and not event.gtid.tag:
        assert event.gtid.sid == server.server_uuid
        return event.gtid.gno
    return None


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


async def test_two_consumers_end_on_one_dispatcher(server: MariaDBServer, db: str) -> None:
    start = _setup(server, db)
    client = _client(server)
    a = await client.create_binlog(name="a", executed_gtid_set=start, databases=[db])
    b = await client.create_binlog(name="b", executed_gtid_set=start, databases=[db])
    assert a.dispatcher is b.dispatcher
    await _insert(server, db, 1, 20, per_txn=4)
    async with asyncio.timeout(20):
        (ra, _), (rb, _) = await asyncio.gather(_collect(a, db, 20), _collect(b, db, 20))
    assert ra == rb == [(i, f"v{i}") for i in range(1, 21)]
    await client.aclose()


async def test_four_consumers_with_different_limits_receive_identical_data(server: MariaDBServer, db: str) -> None:
    start = _setup(server, db)
    client = _client(server)
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
    await _insert(server, db, 1, 300, per_txn=10)
    async with asyncio.timeout(40):
        results = await asyncio.gather(*(_collect(c, db, 300, reopen=True) for c in consumers))
    expected = [(i, f"v{i}") for i in range(1, 301)]
    for rows, _ in results:
        assert rows == expected
    await client.aclose()


async def test_wrong_password_fails_at_creation_without_leaking_it(server: MariaDBServer) -> None:
    secret = "definitely-not-the-password"
    dsn = server.repl_dsn.replace(server.repl_dsn.split(":")[2].split("@")[0], secret)
    assert secret in dsn
    client = BinlogClientFactory().get_client(dsn)
    with pytest.raises(AuthenticationError) as info:
        await client.create_binlog(name="x", executed_gtid_set=server.gtid_binlog_pos() or "0-1-0")
    assert secret not in str(info.value)
    assert secret not in repr(info.value)
    assert secret not in repr(client)
    assert client.status() == []
    assert not client.dispatchers


@pytest.mark.parametrize(("buffer_bytes", "flush_ms"), [(0, 0), (1000, 1000), (100_000_000, 1000)])
async def test_dispatcher_buffer_settings_deliver(
    server: MariaDBServer, db: str, buffer_bytes: int, flush_ms: int
) -> None:
    start = _setup(server, db)
    client = _client(server, buffer_bytes, flush_ms)
    a = await client.create_binlog(name="a", executed_gtid_set=start, databases=[db])
    b = await client.create_binlog(name="b", executed_gtid_set=start, max_bytes_in_binlog_queue=10)
    await _insert(server, db, 1, 50, per_txn=5)
    async with asyncio.timeout(20):
        (ra, _), (rb, _) = await asyncio.gather(_collect(a, db, 50), _collect(b, db, 50, reopen=True))
    assert ra == rb == [(i, f"v{i}") for i in range(1, 51)]
    await client.aclose()


async def test_late_consumer_catches_up_and_merges_under_steady_writes(server: MariaDBServer, db: str) -> None:
    old = _setup(server, db)
    await _insert(server, db, 1, 200, per_txn=2)
    client = _client(server, 1 << 20, 100)
    live = await client.create_binlog(name="live", executed_gtid_set=server.gtid_binlog_pos(), databases=[db])
    stop = asyncio.Event()
    written = [200]

    async def writer() -> None:
        while not stop.is_set():
            await _insert(server, db, written[0] + 1, 5, per_txn=1)
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
        final = _gtids(server)

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


async def test_a_slow_consumer_is_detached_catches_up_on_its_own_and_merges_back(
    server: MariaDBServer, db: str
) -> None:
    """The shared client with a slow consumer under steady writes: it is detached, re-created behind the leader on a
    catch-up connection, merged back into the leader, and ends with every row once, as the fast consumer."""
    start = _setup(server, db)
    client = _client(server, 0, 0)
    fast = await client.create_binlog(name="fast", executed_gtid_set=start, databases=[db])
    slow = await client.create_binlog(
        name="slow",
        executed_gtid_set=start,
        databases=[db],
        max_bytes_in_binlog_queue=10,
        max_milliseconds_to_wait_in_binlog_queue=10,
    )
    leader = fast.dispatcher
    assert leader is not None
    assert slow.dispatcher is leader
    stop = asyncio.Event()
    written = [0]

    async def writer() -> None:
        while not stop.is_set():
            await _insert(server, db, written[0] + 1, 4, per_txn=2)
            written[0] += 4

    async def wait_for(what: str, condition: Any, limit_s: float = 20) -> None:
        async def loop() -> None:
            while not condition():  # noqa: ASYNC110 - sharing state, nothing to wait on
                await asyncio.sleep(0.01)

        try:
            await asyncio.wait_for(loop(), limit_s)
        except TimeoutError:
            raise AssertionError(f"timed out waiting until {what}") from None

    fast_rows: list[Any] = []
    slow_rows: list[Any] = []

    async def read(b: Binlog, into: list[Any]) -> Binlog:
        """Rows of complete transactions until the consumer is detached (returns it) or cancelled."""
        pending: list[Any] = []
        try:
            async for event in b:
                if isinstance(event, RowsEvent) and event.schema == db:
                    pending.extend(event.rows)
                if isinstance(event, XidEvent):
                    into.extend(pending)
                    pending = []
        except BinlogDetachedError:
            pass
        return b

    async with asyncio.TaskGroup() as tg:
        w = tg.create_task(writer())
        fast_task = tg.create_task(read(fast, fast_rows))
        await wait_for("the slow consumer (not reading) is detached", lambda: slow.detached)
        assert leader.detaches == 1
        assert fast.dispatcher is leader  # the others go on
        assert not fast_task.done()
        await read(slow, slow_rows)  # what was queued before the detach, then BinlogDetachedError
        slow = await slow.reopen()
        assert slow.dispatcher is not None
        assert slow.dispatcher is not leader  # behind: its own catch-up connection
        slow_task = tg.create_task(read(slow, slow_rows))
        await wait_for("the slow consumer merged back into the leader", lambda: slow.dispatcher is leader)
        assert not w.done()  # merged while the writer kept writing
        assert client.statistics().merges >= 1
        stop.set()
        await w
        final = _gtids(server)
        for b in (fast, slow):
            await wait_for(
                f"{b.name} read the last transaction",
                lambda b=b: b.position.gtid_set is not None and b.position.gtid_set.contains(final),  # type: ignore[arg-type]
            )
        fast_task.cancel()
        slow_task.cancel()
    expected = [(i, f"v{i}") for i in range(1, written[0] + 1)]
    assert written[0] > 0
    assert fast_rows == expected
    assert slow_rows == expected  # nothing lost, nothing twice across the detach and the merge
    assert client.dispatchers == [leader]
    assert {r["dispatcher_name"] for r in client.status()} == {leader.name}
    await client.aclose()


# ------------------------------------------------------------------------------------------------------------
# a real corrupted rows event: the decoder names its table, the dispatcher stops only that table's consumers


class RawEventsSource:
    """Real binlog bytes decoded one event per call; a bad event raises once, then reading goes on after it
    (the contract a source needs for per-table isolation)."""

    def __init__(self, raws: list[bytes], file: str) -> None:
        self.raws = raws
        self.decoder = EventDecoder(file=file)
        self.index = 0
        self.file = file
        self.closed = False
        self.errors: list[DecodeError] = []
        self.positions = SourcePositions(self.position)

    @property
    def position(self) -> BinlogPosition:
        return BinlogPosition(self.file, 4, None)

    async def next_with_position(self) -> tuple[Event, BinlogPosition | None] | None:
        event = await self.next_event()
        return None if event is None else (event, self.positions.after(event))

    async def next_event(self) -> Event | None:
        await asyncio.sleep(0)
        while self.index < len(self.raws):
            raw = self.raws[self.index]
            self.index += 1
            try:
                return self.decoder.decode(raw)
            except DecodeError as exc:
                self.errors.append(exc)
                raise
        return None

    async def close(self) -> None:
        self.closed = True


def _raw_events(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data[:4] == b"\xfebin"
    raws, pos = [], 4
    while pos < len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        raws.append(data[pos : pos + size])
        pos += size
    return raws


def _corrupt_column_count(raw: bytes) -> bytes:
    """A WRITE_ROWS event (v1 as MariaDB writes it, v2 as MySQL does) claiming one column more than its
    TABLE_MAP, with a valid CRC32."""
    # header (19), table id (6), flags (2), then v1: the column count; v2: the extra data (its 2-byte length
    # counts itself), then the column count
    if raw[4] == 23:  # WRITE_ROWS_EVENT_V1
        at = 27
    else:
        assert raw[4] == 30  # WRITE_ROWS_EVENT (v2)
        at = 27 + struct.unpack_from("<H", raw, 27)[0]
    assert raw[at] < 250  # a one-byte packed count
    body = bytearray(raw[:-4])
    body[at] += 1
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


async def test_a_corrupted_rows_event_stops_only_the_consumers_of_its_table(server: MariaDBServer, db: str) -> None:
    server.execute(f"CREATE TABLE `{db}`.good (id INT PRIMARY KEY, v VARCHAR(20))")
    server.execute(f"CREATE TABLE `{db}`.bad (id INT PRIMARY KEY, v VARCHAR(20))")
    file = server.flush_binary_logs()
    conn = server.connect(database=db, autocommit=False)
    with conn.cursor() as cur:
        for i in range(1, 4):
            cur.execute("INSERT INTO good VALUES (%s, %s)", (i, f"g{i}"))
            cur.execute("INSERT INTO bad VALUES (%s, %s)", (i, f"b{i}"))
            conn.commit()
    conn.close()
    server.flush_binary_logs()
    raws = await asyncio.to_thread(_raw_events, server.datadir / file)
    decoder = EventDecoder(file=file)
    kinds = [decoder.decode(raw) for raw in raws]
    bad_rows = [i for i, e in enumerate(kinds) if isinstance(e, RowsEvent) and e.table_name == "bad"]
    assert len(bad_rows) == 3
    raws[bad_rows[1]] = _corrupt_column_count(raws[bad_rows[1]])  # in the second transaction
    source = RawEventsSource(raws, file)

    async def open_source(_: object) -> EventSource:
        return source

    client = BinlogClientFactory().get_client(
        server.repl_dsn,
        source_factory=open_source,
        max_bytes_in_binlog_dispatcher_buffer=0,
        max_flush_milliseconds_in_binlog_dispatcher=0,
    )
    good = await client.create_binlog(name="good", tables=["good"])
    everything = await client.create_binlog(name="all", databases=[db])
    bad = await client.create_binlog(name="bad", tables=[f"{db}.bad"])

    async def drain(b: Binlog) -> tuple[list[Any], list[Any], BaseException | None]:
        rows: list[Any] = []
        gtids: list[Any] = []
        try:
            async for event in b:
                if isinstance(event, RowsEvent):
                    rows.extend(event.rows)
                if isinstance(event, (MariadbGtidEvent, GtidEvent)):
                    gtids.append(event.gtid)
        except DecodeError as exc:
            return rows, gtids, exc
        return rows, gtids, None

    async with asyncio.timeout(20):
        (good_rows, good_gtids, good_error), *failed = await asyncio.gather(drain(good), drain(everything), drain(bad))
    assert len(source.errors) == 1
    error = source.errors[0]
    assert (error.schema, error.table) == (db, "bad")  # the decoder named the table (H-perf)
    assert "columns" in str(error)
    assert good_error is None
    assert good_rows == [(1, "g1"), (2, "g2"), (3, "g3")]  # every transaction, its own table intact
    assert len(good_gtids) == 3
    for rows, gtids, exc in failed:
        assert exc is error
        assert len(gtids) == 2  # stopped inside the second transaction
        assert (1, "b1") in rows
        assert (3, "g3") not in rows
    for c in (good, everything, bad):
        await c.close()


# ------------------------------------------------------------------------------------------------------------
# `mybinlog status --dsn` and many tasks creating and dropping consumers


def _run_status_cli(*argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="mybinlog")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["status", *argv])
    out = io.StringIO()
    return args.func(args, out), out.getvalue()


async def test_status_dsn_shows_the_server_side_without_the_password(
    server: MariaDBServer, db: str, caplog: pytest.LogCaptureFixture
) -> None:
    start = _setup(server, db)
    client = _client(server)
    one = await client.create_binlog(name="one", executed_gtid_set=start, databases=[db])
    assert one.dispatcher is not None
    rc, text = await asyncio.to_thread(_run_status_cli, "--dsn", server.repl_dsn)
    assert rc == 0
    assert f"binlog_executed_gtid_set  {server.gtid_binlog_pos()}" in text
    assert "binlog dump connection(s) visible" in text
    assert server.repl_password not in text
    _, as_json = await asyncio.to_thread(_run_status_cli, "--dsn", server.repl_dsn, "--format", "json")
    facts = json.loads(as_json)
    assert facts["flavor"] == server.flavor
    assert facts["binlog_name"] == server.master_status()[0]
    assert facts["server"] == f"repl@127.0.0.1:{server.port}"
    assert any(d["command"].startswith("Binlog Dump") for d in facts["binlog_dumps"])
    # MySQL deprecates information_schema.PROCESSLIST with a warning: not the user's problem (the session MySQL
    # runs without the Performance Schema, so the dumps come from that table there)
    assert [r.getMessage() for r in caplog.records if r.name == "asyncmy" and r.levelno >= logging.WARNING] == []
    await client.aclose()


async def test_status_dsn_on_mysql_reads_the_dumps_from_the_performance_schema(
    mysql_factory: Callable[..., MariaDBServer], caplog: pytest.LogCaptureFixture
) -> None:
    """With the Performance Schema on (MySQL's default), ``status --dsn`` lists the binlog dumps from
    performance_schema.processlist, without the deprecation warning of information_schema.PROCESSLIST."""
    source = mysql_factory(performance_schema="ON")
    assert source.query_value("SELECT @@global.performance_schema") == 1
    source.execute("CREATE DATABASE pfs")
    _setup(source, "pfs")
    client = _client(source)
    one = await client.create_binlog(name="one", executed_gtid_set=source.gtid_binlog_pos(), databases=["pfs"])
    assert one.dispatcher is not None
    rc, as_json = await asyncio.to_thread(_run_status_cli, "--dsn", source.repl_dsn, "--format", "json")
    assert rc == 0
    dumps = json.loads(as_json)["binlog_dumps"]
    assert [(d["user"], d["command"][: len("Binlog Dump")]) for d in dumps] == [(source.repl_user, "Binlog Dump")]
    assert [r.getMessage() for r in caplog.records if r.name == "asyncmy" and r.levelno >= logging.WARNING] == []
    await client.aclose()


async def test_many_tasks_creating_and_dropping_consumers_in_random_orders(server: MariaDBServer, db: str) -> None:
    start = _setup(server, db)
    sets = [_gtids(server, start)]
    factory = BinlogClientFactory()
    client = factory.get_client(
        server.repl_dsn, max_bytes_in_binlog_dispatcher_buffer=4096, max_flush_milliseconds_in_binlog_dispatcher=5
    )
    stop = asyncio.Event()

    async def writer() -> None:
        n = 0
        while not stop.is_set():
            await _insert(server, db, n + 1, 3, per_txn=1)
            n += 3
            sets.append(_gtids(server))

    async def worker(seed: int) -> int:
        rnd = random.Random(seed)
        checked = 0
        for _ in range(4):
            begin = rnd.choice(sets)
            b = await client.create_binlog(
                name=f"w{seed}",
                executed_gtid_set=begin,
                databases=[db],
                max_bytes_in_binlog_queue=rnd.choice([1, 500, 0]),
                max_milliseconds_to_wait_in_binlog_queue=rnd.choice([10, 10_000]),
            )
            expected = _last_seq(server, begin) + 1
            try:
                for _ in range(rnd.randrange(1, 40)):
                    event = await asyncio.wait_for(b.read_event(), 20)
                    seq = _seq(server, event)
                    if seq is not None:
                        assert seq == expected  # consecutive: nothing lost or repeated
                        expected += 1
                        checked += 1
            except BinlogDetachedError:
                pass  # a 1-byte queue with a 10 ms wait: fine, it only has to be clean
            await b.close()
        return checked

    async with asyncio.timeout(60), asyncio.TaskGroup() as tg:
        w = tg.create_task(writer())
        workers = [tg.create_task(worker(seed)) for seed in range(10)]
        checked = [await t for t in workers]
        stop.set()
        await w
    assert sum(checked) > 20
    assert not client.dispatchers
    assert not client._consumers
    assert all(t.done() for t in client._tasks)
    assert client not in factory.clients
    assert factory.status() == []


# ------------------------------------------------------------------------------------------------------------
# positions derived once (issue 25): a consumer's positions are the ones its source computed


def _moves(seen: list[tuple[str, int, BinlogPosition]]) -> list[tuple[str, int, BinlogPosition]]:
    """(event, log_pos, position after it) where the position moved, GTID events left out: at a GTID start the
    stream fixes the offset of the boundary it stands at with the first transaction's GTID event, inside that
    transaction, while a consumer keeps the boundary it was handed until the transaction ends."""
    out = []
    last: BinlogPosition | None = None
    for name, log_pos, pos in seen:
        if pos != last and name not in ("GtidEvent", "MariadbGtidEvent"):
            out.append((name, log_pos, pos))
        last = pos
    return out


async def test_consumer_positions_are_those_of_a_plain_stream(server: MariaDBServer, db: str) -> None:
    """The dispatcher runs no position tracker of its own: it passes on the boundaries its BinlogStream computed.
    Over one-row, multi-row, DDL, XA (prepared, then committed with another transaction between), compressed (MySQL)
    transactions and a ROTATE between transactions, the positions a shared-client consumer passes through are
    exactly those of a plain BinlogStream over the same binlog, and so is where each ends."""
    start = _setup(server, db)

    def write() -> None:
        conn = server.connect(database=db, autocommit=False)
        try:
            with conn.cursor() as cur:
                cur.execute("INSERT INTO t VALUES (1, 'one')")
                conn.commit()
                cur.executemany("INSERT INTO t VALUES (%s, %s)", [(2, "b"), (3, "c"), (4, "d")])
                cur.execute("UPDATE t SET v = 'B' WHERE id = 2")
                conn.commit()
                cur.execute("CREATE TABLE u (id INT PRIMARY KEY)")
                conn.autocommit(True)
                xid = f"'pos-{db}'"
                for sql in (f"XA START {xid}", "INSERT INTO t VALUES (5, 'xa')", f"XA END {xid}", f"XA PREPARE {xid}"):
                    cur.execute(sql)
                server.execute(f"INSERT INTO `{db}`.u VALUES (1)")  # another transaction between the two parts
                cur.execute(f"XA COMMIT {xid}")
                if server.flavor == "mysql":  # a TRANSACTION_PAYLOAD: the position moves at its last inner event
                    cur.execute("SET SESSION binlog_transaction_compression = ON")
                    conn.autocommit(False)
                    cur.executemany("INSERT INTO t VALUES (%s, %s)", [(6, "z"), (7, "z")])
                    conn.commit()
                    conn.autocommit(True)
                    cur.execute("SET SESSION binlog_transaction_compression = OFF")
                cur.execute("FLUSH BINARY LOGS")
                cur.execute("INSERT INTO t VALUES (8, 'after the rotate')")
        finally:
            conn.close()

    await asyncio.to_thread(write)

    plain: list[tuple[str, int, BinlogPosition]] = []
    async with asyncio.timeout(30), BinlogStream(server.repl_dsn, gtid_set=start, blocking=False) as stream:
        async for event in stream:
            plain.append((type(event).__name__, event.log_pos, stream.position))
        plain_end = stream.position

    client = BinlogClientFactory().get_client(server.repl_dsn, stream_options={"blocking": False})
    shared: list[tuple[str, int, BinlogPosition]] = []
    try:
        binlog = await client.create_binlog(name=f"positions-{server.flavor}", executed_gtid_set=start)
        async with asyncio.timeout(30):
            async for event in binlog:  # a non-blocking source: ends at the end of the binlog
                shared.append((type(event).__name__, event.log_pos, binlog.position))
        shared_end = binlog.position
    finally:
        await client.aclose()

    names = {name for name, _, _ in plain}
    assert {"XaPrepareEvent", "RotateEvent", "XidEvent", "QueryEvent"} <= names
    if server.flavor == "mysql":
        assert "TransactionPayloadEvent" in names
    forwarded = {name for name, _, _ in shared}
    assert _moves(shared) == _moves([entry for entry in plain if entry[0] in forwarded])
    assert len(_moves(shared)) >= 7  # one per transaction, and the ROTATE
    assert shared_end == plain_end
    assert plain_end.file != _moves(shared)[0][2].file  # the rotate moved both to the next file
