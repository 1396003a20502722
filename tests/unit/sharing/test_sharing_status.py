"""Sharing: per-table decode-error isolation, the rate columns, the status endpoint and ``mybinlog status``.

Driven by the scripted sources of tests/fakes.py (no server); rates use an injected clock, so no
assertion depends on timing.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from mybinlog import ConfigurationError, DecodeError, Event, MariadbGtidEvent, QueryEvent, RowsEvent, XidEvent
from mybinlog.cli._status import register, render_table
from mybinlog.errors import StatusReadError
from mybinlog.protocol._position import BinlogPosition
from mybinlog.sharing import Binlog, BinlogClientFactory, EventSource
from mybinlog.sharing._source import SourcePositions
from mybinlog.status import STATUS_COLUMNS, read_status, serve_status, status_document
from tests.fakes import COLUMNS, DSN_TEXT, PASSWORD, FakeLog, gtid_of, make_client, read_txns, seqs

# ------------------------------------------------------------------------------------------------------------
# decode errors that name their table


def table_error(schema: str, table: str) -> DecodeError:
    """A DecodeError for one table, as the decoder raises for a TABLE_MAP or rows event it cannot decode."""
    return DecodeError(f"TABLE_MAP of `{schema}`.`{table}` has an unknown column type 250", schema=schema, table=table)


class ScriptedSource:
    """Plays the events of a FakeLog, raising ``errors[i]`` instead of returning event ``i``.

    ``sticky``: like BinlogStream, once an error was raised every later call raises it again.
    """

    def __init__(self, log: FakeLog, errors: dict[int, BaseException], *, sticky: bool = False) -> None:
        self.log = log
        self.errors = errors
        self.sticky = sticky
        self.index = 0
        self.raised: BaseException | None = None
        self.calls_after_error = 0
        self.closed = False
        self.positions = SourcePositions(self.position)

    @property
    def position(self) -> BinlogPosition:
        return BinlogPosition(self.log.file, 4, self.log.gtids(0))

    async def next_with_position(self) -> tuple[Event, BinlogPosition | None] | None:
        event = await self.next_event()
        return None if event is None else (event, self.positions.after(event))

    async def next_event(self) -> Event | None:
        await asyncio.sleep(0)
        if self.raised is not None and self.sticky:
            self.calls_after_error += 1
            assert self.calls_after_error < 100, "the dispatcher keeps calling a source that cannot go on"
            raise self.raised
        i = self.index
        if i >= len(self.log.events):
            return None
        self.index += 1
        error = self.errors.get(i)
        if error is not None:
            self.raised = error
            raise error
        return self.log.events[i]

    async def close(self) -> None:
        self.closed = True


def scripted_client(log: FakeLog, source: ScriptedSource) -> Any:
    async def open_source(_: object) -> EventSource:
        return source

    return BinlogClientFactory().get_client(
        DSN_TEXT,
        source_factory=open_source,
        max_bytes_in_binlog_dispatcher_buffer=0,
        max_flush_milliseconds_in_binlog_dispatcher=0,
    )


async def drain(binlog: Binlog) -> tuple[list[Event], BaseException | None]:
    """Everything a consumer gets until its iteration ends (None) or raises (the error)."""
    got: list[Event] = []
    try:
        async with asyncio.timeout(10):
            async for event in binlog:
                got.append(event)
    except DecodeError as exc:
        return got, exc
    return got, None


def _bad_table_log() -> tuple[FakeLog, int]:
    log = FakeLog()
    log.txn("db.t1", "db.t2")
    log.txn("db.t1", "db.t2")
    bad_index = len(log.events)
    log.txn("db.t1", "db.t2")  # its first TABLE_MAP (of t1) fails to decode
    log.txn("db.t2")
    log.txn("db.t1", "db.t2")
    return log, bad_index + 1  # the GTID event comes first, then the TABLE_MAP of t1


async def test_decode_error_of_one_table_reaches_only_the_consumers_of_that_table() -> None:
    log, bad = _bad_table_log()
    error = table_error("db", "t1")
    source = ScriptedSource(log, {bad: error})
    client = scripted_client(log, source)
    t1 = await client.create_binlog(name="t1", tables=["t1"])
    everything = await client.create_binlog(name="all")
    t2 = await client.create_binlog(name="t2", tables=["db.t2"])
    other = await client.create_binlog(name="other", databases=["other"])
    for c in (t2, other):
        got, failure = await drain(c)
        assert failure is None
        assert seqs([g for g in map(gtid_of, got) if g is not None]) == [1, 2, 3, 4, 5]  # every transaction
        rows = [e.table_name for e in got if isinstance(e, RowsEvent)]
        assert rows == (["t2"] * 5 if c is t2 else [])
        assert c.position.gtid_set == log.gtids(5)
    for c in (t1, everything):
        got, failure = await drain(c)
        assert failure is error  # after everything before the bad event
        assert seqs([g for g in map(gtid_of, got) if g is not None]) == [1, 2, 3]
        assert isinstance(got[-1], MariadbGtidEvent)  # the failing transaction had begun
        assert c.position.gtid_set == log.gtids(2)  # the last transaction it completed
        with pytest.raises(DecodeError) as again:  # and it stays failed: nothing after the hole
            await c.read_event()
        assert again.value is error
        assert c.dispatcher is None
    assert [r["name"] for r in client.status()] == []  # the failed ones left; the others reached the end
    for c in (t1, everything, t2, other):
        await c.close()
    assert source.closed


async def test_a_source_that_cannot_go_past_a_table_error_fails_every_consumer_once() -> None:
    log, bad = _bad_table_log()
    error = table_error("db", "t1")
    source = ScriptedSource(log, {bad: error}, sticky=True)
    client = scripted_client(log, source)
    t1 = await client.create_binlog(name="t1", tables=["t1"])
    t2 = await client.create_binlog(name="t2", tables=["t2"])
    for c in (t1, t2):
        got, failure = await drain(c)
        assert failure is error
        assert seqs([g for g in map(gtid_of, got) if g is not None]) == [1, 2, 3]
    assert source.calls_after_error == 1  # asked once more, then the dispatcher gave up (no busy loop)
    assert not client.dispatchers
    for c in (t1, t2):
        await c.close()


async def test_decode_error_without_a_table_fails_every_consumer() -> None:
    log, bad = _bad_table_log()
    error = DecodeError("malformed GTID event")
    source = ScriptedSource(log, {bad: error})
    client = scripted_client(log, source)
    consumers = [await client.create_binlog(name=n, tables=[n]) for n in ("t1", "t2")]
    for c in consumers:
        got, failure = await drain(c)
        assert failure is error
        assert seqs([g for g in map(gtid_of, got) if g is not None]) == [1, 2, 3]
        await c.close()


# ------------------------------------------------------------------------------------------------------------
# rate columns


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_rate_columns_count_the_last_full_second() -> None:
    log = FakeLog()
    client = make_client(log)
    clock = FakeClock(1000.25)
    client._clock = clock
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0), tables=["t1"])
    last = log.txns(3)[-1]
    got: list[Event] = []
    await read_txns(b, last, collect=got)
    # read: the fake ROTATE (40 bytes) and 3 x (GTID 38, TABLE_MAP 50, INTVAR 28, WRITE_ROWS 60, XID 31)
    read_events, read_bytes = 1 + 3 * 5, 40 + 3 * (38 + 50 + 28 + 60 + 31)
    # flushed: what reaches the consumer queues (TABLE_MAP and INTVAR only move positions)
    flush_events, flush_bytes = 1 + 3 * 3, 40 + 3 * (38 + 60 + 31)
    assert len(got) == flush_events
    assert sum(e.size for e in got) == flush_bytes
    [row] = client.status()
    rates = [row[c] for c in COLUMNS[15:19]]  # type: ignore[literal-required]
    assert rates == [0.0, 0.0, 0.0, 0.0]  # the current second is not over yet
    clock.now = 1001.0
    [row] = client.status()
    assert row["dispatcher_events_read_per_sec"] == read_events
    assert row["dispatcher_bytes_read_per_sec"] == read_bytes
    assert row["dispatcher_events_flush_per_sec"] == flush_events
    assert row["dispatcher_bytes_flush_per_sec"] == flush_bytes
    clock.now = 1002.9  # a second with nothing read
    [row] = client.status()
    assert [row[c] for c in COLUMNS[15:19]] == [0.0, 0.0, 0.0, 0.0]  # type: ignore[literal-required]
    last = log.txn()
    await read_txns(b, last)
    clock.now = 1003.0
    [row] = client.status()
    assert row["dispatcher_events_read_per_sec"] == 5
    assert row["dispatcher_bytes_read_per_sec"] == 38 + 50 + 28 + 60 + 31
    clock.now = 1010.0  # long idle: nothing counted in the last full second
    [row] = client.status()
    assert row["dispatcher_events_read_per_sec"] == 0
    await b.close()


# ------------------------------------------------------------------------------------------------------------
# the status endpoint


async def _consumers(log: FakeLog, factory: BinlogClientFactory) -> list[Binlog]:
    client = make_client(log, factory=factory)
    a = await client.create_binlog(name="a", executed_gtid_set=log.gtids(0))
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0), max_bytes_in_binlog_queue=4096)
    await read_txns(a, log.txn_of[-1])
    return [a, b]


async def _raw_http(address: str, request: bytes) -> bytes:
    if address.startswith("unix:"):
        reader, writer = await asyncio.open_unix_connection(address[5:])
    else:
        host, _, port = address.removeprefix("http://").rpartition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    data = await reader.read()
    writer.close()
    await writer.wait_closed()
    return data


@pytest.mark.parametrize("kind", ["unix", "http", "file"])
async def test_status_endpoint_serves_the_rows_to_another_reader(tmp_path: Path, kind: str) -> None:
    log = FakeLog()
    log.txns(4)
    factory = BinlogClientFactory()
    consumers = await _consumers(log, factory)
    address = {"unix": f"unix:{tmp_path}/s.sock", "http": "http://127.0.0.1:0", "file": f"file:{tmp_path}/s.json"}
    async with serve_status(
        address[kind], source=factory.status, extra=lambda: {"replicas": [{"name": "r1"}]}
    ) as server:
        assert server.running
        if kind == "http":
            assert not server.address.endswith(":0")  # the real port
        doc = await read_status(server.address)
        raw = json.dumps(doc)
        if kind != "file":
            raw = (await _raw_http(server.address, b"GET /status HTTP/1.0\r\n\r\n")).decode()
            assert raw.startswith("HTTP/1.1 200 OK")
    assert doc["format"] == "mybinlog-status/1"
    assert doc["columns"] == COLUMNS
    assert [list(r) for r in doc["mysql_binlogs"]] == [COLUMNS, COLUMNS]
    assert [r["name"] for r in doc["mysql_binlogs"]] == ["a", "b"]
    assert doc["mysql_binlogs"][0]["mysql_binlog_executed_gtid_set"] == "0-1-4"
    assert doc["mysql_binlogs"][1]["max_bytes"] == 4096
    assert doc["replicas"] == [{"name": "r1"}]
    assert PASSWORD not in raw
    assert "repl@db.example:3306" in raw
    assert not server.running
    if kind != "http":  # the socket / file is removed when serving stops
        assert not await asyncio.to_thread(lambda: any(tmp_path.iterdir()))
    with pytest.raises(StatusReadError):
        await read_status(server.address, timeout_s=2)
    for c in consumers:
        await c.close()


async def test_status_http_errors_and_address_checks(tmp_path: Path) -> None:
    log = FakeLog()
    log.txns(1)
    factory = BinlogClientFactory()
    consumers = await _consumers(log, factory)
    sock = tmp_path / "s.sock"
    async with serve_status(f"unix:{sock}", source=factory.status) as server:
        assert (await _raw_http(server.address, b"GET /nope HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404")
        assert (await _raw_http(server.address, b"POST /status HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 405")
        head = await _raw_http(server.address, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert head.endswith(b"\r\n\r\n")
        with pytest.raises(ConfigurationError, match="another process serves"):
            await serve_status(f"unix:{sock}").start()  # never steal a live socket
        assert server.requests == 1
    # a socket left by a process that died is reused; a regular file is not replaced
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(sock))
    stale.close()
    async with serve_status(str(sock), source=factory.status) as again:
        assert again.kind == "unix"
        assert len((await read_status(again.address))["mysql_binlogs"]) == 2
    (tmp_path / "plain").write_text("x")
    with pytest.raises(ConfigurationError, match="not a socket"):
        await serve_status(f"unix:{tmp_path}/plain").start()
    for bad in ("", "ftp://x:1", "http://127.0.0.1", "unix:"):
        with pytest.raises(ConfigurationError):
            serve_status(bad)
    with pytest.raises(ConfigurationError, match="replace"):
        status_document(factory.status, extra=lambda: {"pid": 1})
    (tmp_path / "foreign.json").write_text('{"something": "else"}')
    with pytest.raises(StatusReadError, match="not a mybinlog status"):
        await read_status(str(tmp_path / "foreign.json"))
    with pytest.raises(StatusReadError, match="serve_status"):
        await read_status(f"unix:{tmp_path}/missing.sock")
    for c in consumers:
        await c.close()


async def test_status_file_is_rewritten_while_serving(tmp_path: Path) -> None:
    log = FakeLog()
    log.txns(2)
    factory = BinlogClientFactory()
    consumers = await _consumers(log, factory)
    path = tmp_path / "status.json"
    async with serve_status(str(path), source=factory.status, interval_ms=10) as server:
        first = await read_status(server.address)
        assert first["interval_ms"] == 10
        last = log.txn()
        await read_txns(consumers[0], last)

        async def rewritten() -> dict[str, Any]:
            while True:
                doc = await read_status(server.address)
                if doc["mysql_binlogs"][0]["mysql_binlog_executed_gtid_set"] == "0-1-3":
                    return doc
                await asyncio.sleep(0.005)

        doc = await asyncio.wait_for(rewritten(), 10)
        assert doc["time"] >= first["time"]
    assert not path.exists()
    for c in consumers:
        await c.close()


def test_default_status_source_is_the_default_factory() -> None:
    doc = status_document()
    assert doc["columns"] == list(STATUS_COLUMNS) == COLUMNS
    assert isinstance(doc["mysql_binlogs"], list)


# ------------------------------------------------------------------------------------------------------------
# mybinlog status


def run_cli(*argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="mybinlog")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["status", *argv])
    out = io.StringIO()
    rc = args.func(args, out)
    return rc, out.getvalue()


async def test_status_command_prints_table_vertical_and_json(tmp_path: Path) -> None:
    log = FakeLog()
    log.txns(3)
    factory = BinlogClientFactory()
    consumers = await _consumers(log, factory)
    async with serve_status(f"unix:{tmp_path}/s.sock", source=factory.status) as server:
        rc, table = await asyncio.to_thread(run_cli, "--from", server.address)
        _, vertical = await asyncio.to_thread(run_cli, "--from", server.address, "--format", "vertical")
        _, as_json = await asyncio.to_thread(run_cli, "--from", server.address, "--format", "json")
        _, narrow = await asyncio.to_thread(run_cli, "--from", server.address, "--columns", "name,dispatcher_name,size")
        with pytest.raises(ConfigurationError, match="unknown status column"):
            await asyncio.to_thread(run_cli, "--from", server.address, "--columns", "name,password")
    assert rc == 0
    lines = table.splitlines()
    assert lines[0].startswith("# process ")
    assert "2 consumer(s) on 1 dispatcher(s)" in lines[0]
    assert lines[1].split() == COLUMNS
    assert [line.split()[1] for line in lines[3:]] == ["a", "b"]
    assert vertical.count("binlog_client_name") == 2
    assert "Row 2:" in vertical
    assert "dispatcher_bytes_flush_per_sec" in vertical
    doc = json.loads(as_json)
    assert [r["name"] for r in doc["mysql_binlogs"]] == ["a", "b"]
    assert narrow.splitlines()[1].split() == ["name", "dispatcher_name", "size"]
    assert narrow.splitlines()[3].split()[:2] == ["a", "dispatcher-1"]
    assert all(PASSWORD not in text for text in (table, vertical, as_json))
    rc, _ = await asyncio.to_thread(run_cli)  # neither --from nor --dsn
    assert rc == 2
    with pytest.raises(StatusReadError):
        await asyncio.to_thread(run_cli, "--from", f"unix:{tmp_path}/s.sock")
    for c in consumers:
        await c.close()


def test_render_table_aligns_numbers_right() -> None:
    text = render_table([{"n": 5, "s": "x"}, {"n": 123, "s": "long"}], ["n", "s"])
    assert text.splitlines() == ["  n  s", "---  ----", "  5  x", "123  long"]


async def test_consumer_positions_in_status_follow_reading() -> None:
    log = FakeLog()
    factory = BinlogClientFactory()
    client = make_client(log, factory=factory)
    b = await client.create_binlog(name="b", executed_gtid_set=log.gtids(0))
    last = log.txns(2)[-1]
    got: list[Event] = []
    await read_txns(b, last, collect=got)
    [row] = factory.status()
    assert row["mysql_binlog_executed_gtid_set"] == "0-1-2"
    assert row["mysql_binlog_pos"] == b.position.offset == log.offset
    assert row["mysql_binlog_name"] == log.file
    assert row["dispatcher_mysql_binlog_executed_gtid_set"] == "0-1-2"
    assert row["size"] == 0
    assert row["bytes"] == 0
    assert isinstance(got[-1], XidEvent | QueryEvent)
    await b.close()
