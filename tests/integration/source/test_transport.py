"""BinlogConnection against real private servers (MariaDB 10.11 and Oracle MySQL 9.7): connect, checks, dumps,
heartbeats, failures, TLS and caching_sha2_password authentication.

Tests on the shared ``server`` server only look at the binlog range they wrote themselves (they start dumps at
a position taken just before their writes). Tests that restart, kill or reconfigure a server use their own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import uuid
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mybinlog.errors import (
    AuthenticationError,
    BinlogPurgedError,
    ConfigurationError,
    PreconditionError,
    SourceConnectionError,
    SourceError,
)
from mybinlog.protocol._gtid import MariaDBGtidSet, MySQLGtidSet
from mybinlog.source._connection import (
    BINLOG_DUMP_NON_BLOCK,
    BINLOG_THROUGH_GTID,
    SERVER_ID_RANGE,
    BinlogConnection,
    _server_info,
    encode_binlog_dump,
    encode_binlog_dump_gtid,
    missing_privileges,
    parse_error_packet,
    translate_server_error,
)
from mybinlog.source._dsn import DSN
from tests.live import make_certificate, server_readable_dir
from tests.servers import MariaDBServer

ROTATE = 4
QUERY = 2
FORMAT_DESCRIPTION = 15
XID = 16
WRITE_ROWS_V1 = 23
HEARTBEAT = 27
ROWS_QUERY = 29
WRITE_ROWS_V2 = 30
MYSQL_GTID = 33
GTID_LIST = 163
ANNOTATE_ROWS = 160
MARIADB_GTID = 162

DEADLINE = 20.0  # seconds; generous for a loaded 2-core CI machine, never reached when things work


def header(event: bytes) -> dict[str, int]:
    return {
        "timestamp": int.from_bytes(event[0:4], "little"),
        "type": event[4],
        "server_id": int.from_bytes(event[5:9], "little"),
        "size": int.from_bytes(event[9:13], "little"),
        "log_pos": int.from_bytes(event[13:17], "little"),
        "flags": int.from_bytes(event[17:19], "little"),
    }


def crc_ok(event: bytes) -> bool:
    return zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")


def gtid_of(event: bytes) -> tuple[int, int, int]:
    """(domain, server_id, seq) of a MariaDB GTID event."""
    seq = int.from_bytes(event[19:27], "little")
    domain = int.from_bytes(event[27:31], "little")
    return domain, header(event)["server_id"], seq


def write_rows_type(server: MariaDBServer) -> int:
    """The WRITE_ROWS event type the server logs: MariaDB 10.11 writes v1 events, MySQL 8+ v2."""
    return WRITE_ROWS_V1 if server.flavor == "mariadb" else WRITE_ROWS_V2


def gtid_type(server: MariaDBServer) -> int:
    """The type of the server's GTID events (the test servers write untagged GTIDs on MySQL)."""
    return MARIADB_GTID if server.flavor == "mariadb" else MYSQL_GTID


def gtid_text(event: bytes) -> str:
    """The GTID of a GTID event as its server writes it: MariaDB ``domain-server-seq``, MySQL ``uuid:gno``."""
    if event[4] == MARIADB_GTID:
        return "-".join(map(str, gtid_of(event)))
    assert event[4] == MYSQL_GTID, f"not a GTID event: type {event[4]}"
    # MySQL GTID_LOG_EVENT body: flags (1 byte), the source's UUID (16 bytes), the transaction number (8 bytes)
    return f"{uuid.UUID(bytes=event[20:36])}:{int.from_bytes(event[36:44], 'little')}"


def last_gtid(server: MariaDBServer) -> str:
    """The GTID of the server's last transaction, in the form :func:`gtid_text` gives."""
    if server.flavor == "mariadb":
        return server.gtid_binlog_pos()  # the test servers write in one domain
    intervals = MySQLGtidSet.parse(server.gtid_position()).intervals(server.server_uuid)
    return f"{server.server_uuid}:{intervals[-1][1]}"


def next_gtids(after: str, count: int) -> list[str]:
    """The ``count`` GTIDs a server writes after the GTID ``after`` (same source, numbers one up each)."""
    if ":" in after:
        source, number = after.rsplit(":", 1)
        return [f"{source}:{int(number) + n}" for n in range(1, count + 1)]
    domain, server_id, seq = (int(x) for x in after.split("-"))
    return [f"{domain}-{server_id}-{seq + n}" for n in range(1, count + 1)]


async def read_all(conn: BinlogConnection) -> list[bytes]:
    events = []
    async with asyncio.timeout(DEADLINE):
        while (event := await conn.read_event()) is not None:
            events.append(event)
    return events


async def read_forever(conn: BinlogConnection) -> None:
    """Read until the connection raises (bounded by DEADLINE: a TimeoutError means it never failed)."""
    async with asyncio.timeout(DEADLINE):
        while True:
            await conn.read_event()


async def drain_until_idle(conn: BinlogConnection, idle: float) -> int:
    """Read until no event arrives for ``idle`` seconds (each cancelled read must lose nothing)."""
    count = 0
    async with asyncio.timeout(DEADLINE):
        while True:
            try:
                await asyncio.wait_for(conn.read_event(), idle)
            except TimeoutError:
                return count
            count += 1


async def read_until(conn: BinlogConnection, predicate: Callable[[bytes], bool]) -> list[bytes]:
    """Read events until one satisfies ``predicate`` (bounded by DEADLINE); returns all read."""
    events = []
    async with asyncio.timeout(DEADLINE):
        while True:
            event = await conn.read_event()
            assert event is not None, "a blocking dump ended"
            events.append(event)
            if predicate(event):
                return events


@pytest.fixture
async def repl(server: MariaDBServer) -> AsyncIterator[BinlogConnection]:
    conn = await BinlogConnection.connect(DSN.parse(server.repl_dsn), heartbeat_period=1.0)
    try:
        yield conn
    finally:
        await conn.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- connecting -----------------------------------------------------------------------------------------------


async def test_connect_reads_server_info(server: MariaDBServer, repl: BinlogConnection) -> None:
    info = repl.info
    assert info.flavor == server.flavor
    assert info.version == server.version_tuple
    assert info.version_string == server.version
    assert info.server_id == server.server_id
    assert info.server_uuid == (None if server.flavor == "mariadb" else server.server_uuid)
    assert info.gtid_mode is True
    assert info.log_bin is True
    assert (info.binlog_format, info.binlog_row_image, info.binlog_row_metadata) == ("ROW", "FULL", "FULL")
    assert info.binlog_checksum == "CRC32"
    assert repl.checksum is True
    assert SERVER_ID_RANGE[0] <= repl.server_id <= SERVER_ID_RANGE[1]
    assert repl.dsn.password not in repr(repl)


async def test_current_position_and_binlog_files(server: MariaDBServer, repl: BinlogConnection) -> None:
    file, position, gtid = await repl.current_position()
    assert (file, position) == server.master_status()
    assert gtid == server.gtid_binlog_pos()
    files = await repl.binlog_files()
    assert files == server.binlog_files()
    assert files[-1] == (file, position)


async def test_server_id_is_sent_and_must_be_unique(server: MariaDBServer) -> None:
    # A second dump with the same server_id makes the server kill the first: the id reaches the server, and
    # this is why every reader needs its own.
    dsn = DSN.parse(server.repl_dsn)
    first = await BinlogConnection.connect(dsn, server_id=4242)
    second = await BinlogConnection.connect(dsn, server_id=4242)
    try:
        assert (first.server_id, second.server_id) == (4242, 4242)
        await first.start_dump(blocking=True)
        await second.start_dump(blocking=True)
        with pytest.raises(SourceError) as info:
            await read_forever(first)
        assert "unique server_id" in str(info.value)
        assert info.value.retriable is False
        assert second.streaming
        assert await second.read_event() is not None
    finally:
        await first.close()
        await second.close()


async def test_wrong_password_is_authentication_error(server: MariaDBServer) -> None:
    secret = "Wr0ng-Secret-Xy"
    dsn = DSN(host=server.host, port=server.port, user="repl", password=secret)
    with pytest.raises(AuthenticationError) as info:
        await BinlogConnection.connect(dsn)
    error = info.value
    assert error.errno == 1045
    assert error.retriable is False
    assert f"repl@127.0.0.1:{server.port}" in str(error)
    for text in (str(error), repr(error), str(error.__cause__), repr(error.__cause__)):
        assert secret not in text


async def test_unreachable_port_is_connection_error() -> None:
    port = free_port()
    dsn = DSN(host="127.0.0.1", port=port, user="repl", password="pw-Unreach4ble", connect_timeout=3)
    with pytest.raises(SourceConnectionError) as info:
        await BinlogConnection.connect(dsn)
    assert info.value.retriable is True
    assert f"repl@127.0.0.1:{port}" in str(info.value)
    assert "pw-Unreach4ble" not in str(info.value)


async def test_missing_privilege_is_authentication_error_naming_the_grant(server: MariaDBServer) -> None:
    # the other privilege a reader needs: MariaDB's BINLOG MONITOR, MySQL's REPLICATION CLIENT
    monitor = "BINLOG MONITOR" if server.flavor == "mariadb" else "REPLICATION CLIENT"
    server.execute("CREATE USER IF NOT EXISTS 'noslave'@'%' IDENTIFIED BY 'noslave-pw'")
    server.execute(f"GRANT {monitor} ON *.* TO 'noslave'@'%'")
    try:
        dsn = DSN(host=server.host, port=server.port, user="noslave", password="noslave-pw")
        with pytest.raises(AuthenticationError) as info:
            await BinlogConnection.connect(dsn)
        assert "lacks REPLICATION SLAVE," in str(info.value)
        assert f"GRANT REPLICATION SLAVE, {monitor} ON *.*" in str(info.value)
        assert "noslave-pw" not in str(info.value)
        # without the check, the server itself refuses the dump, and the error is translated the same way
        async with await BinlogConnection.connect(dsn, check_preconditions=False) as conn:
            with pytest.raises(AuthenticationError) as info:
                await conn.start_dump(blocking=False)
            assert info.value.errno == 1227
            assert "GRANT REPLICATION SLAVE" in str(info.value)
    finally:
        server.execute("DROP USER IF EXISTS 'noslave'@'%'")


# -- preconditions --------------------------------------------------------------------------------------------


async def test_statement_format_is_precondition_error(server_factory: Callable[..., MariaDBServer]) -> None:
    server = server_factory(binlog_format="STATEMENT")
    dsn = DSN.parse(server.repl_dsn)
    with pytest.raises(PreconditionError) as info:
        await BinlogConnection.connect(dsn)
    message = str(info.value)
    assert "binlog_format is STATEMENT" in message
    assert "SET GLOBAL binlog_format=ROW" in message
    assert "--binlog-format=ROW" in message
    # the check can be skipped (e.g. to read old binlogs): then the connection works
    async with await BinlogConnection.connect(dsn, check_preconditions=False) as conn:
        assert conn.info.binlog_format == "STATEMENT"

    server.execute("SET GLOBAL binlog_format = 'ROW'")
    server.execute("SET GLOBAL binlog_row_image = 'MINIMAL'")
    with pytest.raises(PreconditionError, match=r"binlog_row_image is MINIMAL.*--binlog-row-image=FULL"):
        await BinlogConnection.connect(dsn)


async def test_row_metadata_minimal_is_only_a_warning(
    fresh_server: MariaDBServer, caplog: pytest.LogCaptureFixture
) -> None:
    fresh_server.execute("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    with caplog.at_level(logging.WARNING, logger="mybinlog.transport"):
        async with await BinlogConnection.connect(DSN.parse(fresh_server.repl_dsn)) as conn:
            assert conn.info.binlog_row_metadata == "MINIMAL"
    warnings = [r for r in caplog.records if r.name == "mybinlog.transport" and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "binlog_row_metadata is MINIMAL" in warnings[0].getMessage()
    assert fresh_server.repl_password not in warnings[0].getMessage()


async def test_binlog_off_is_precondition_error(server_factory: Callable[..., MariaDBServer]) -> None:
    server = server_factory(log_bin=None)
    with pytest.raises(PreconditionError, match=r"log_bin=OFF.*--log-bin"):
        await BinlogConnection.connect(DSN.parse(server.repl_dsn))


# -- dumps ----------------------------------------------------------------------------------------------------


async def test_file_position_nonblocking_dump(server: MariaDBServer, db: str, repl: BinlogConnection) -> None:
    server.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    file, start, _gtid = await repl.current_position()
    for i in range(3):
        server.execute(f"INSERT INTO `{db}`.t VALUES (%s, %s)", (i, f"value {i}"))
    end_file, end = server.master_status()
    assert end_file == file

    await repl.start_dump(file=file, position=start, blocking=False)
    assert repl.streaming
    events = await read_all(repl)
    assert await repl.read_event() is None  # stays at the end
    assert not repl.streaming

    headers = [header(e) for e in events]
    # the server starts with a fake ROTATE to the requested place, then the file's FORMAT_DESCRIPTION
    assert headers[0]["type"] == ROTATE
    assert headers[0]["timestamp"] == 0
    assert int.from_bytes(events[0][19:27], "little") == start
    assert events[0][27:-4].decode() == file
    assert headers[1]["type"] == FORMAT_DESCRIPTION
    for event, h in zip(events, headers, strict=True):
        assert h["size"] == len(event)
        assert crc_ok(event), f"bad CRC32 in event type {h['type']}"
    types = [h["type"] for h in headers]
    assert types.count(write_rows_type(server)) == 3
    assert types.count(XID) == 3
    # nothing lost at the end: the last event ends exactly at the binlog's end, and it is the last commit
    assert headers[-1]["log_pos"] == end
    assert headers[-1]["type"] == XID


async def test_read_events_returns_the_same_events_in_bulk(server: MariaDBServer, db: str) -> None:
    server.execute(f"CREATE TABLE `{db}`.m (id INT PRIMARY KEY, v MEDIUMTEXT)")
    dsn = DSN.parse(server.repl_dsn)
    async with await BinlogConnection.connect(dsn) as conn:
        file, start, _ = await conn.current_position()
    server.execute(f"INSERT INTO `{db}`.m VALUES (1, REPEAT('a', 100000))")
    for i in range(2, 200):
        server.execute(f"INSERT INTO `{db}`.m VALUES (%s, 'b')", (i,))
    async with await BinlogConnection.connect(dsn) as conn:
        await conn.start_dump(file=file, position=start, blocking=False)
        one_by_one = await read_all(conn)
    async with await BinlogConnection.connect(dsn) as conn:
        await conn.start_dump(file=file, position=start, blocking=False)
        bulk: list[bytes] = []
        batches = 0
        async with asyncio.timeout(DEADLINE):
            while (events := await conn.read_events()) is not None:
                assert events, "read_events() returned an empty batch"
                bulk.extend(events)
                batches += 1
        assert await conn.read_events() is None
    assert bulk == one_by_one
    assert len(bulk) > 4 * 199
    assert batches < len(bulk)


async def test_gtid_nonblocking_dump_delivers_exactly_the_later_transactions(
    server: MariaDBServer, db: str, repl: BinlogConnection
) -> None:
    server.execute(f"CREATE TABLE `{db}`.g (id INT PRIMARY KEY)")
    before = server.gtid_position()  # MariaDB @@gtid_binlog_pos, MySQL @@global.gtid_executed
    last = last_gtid(server)
    for i in range(5):
        server.execute(f"INSERT INTO `{db}`.g VALUES (%s)", (i,))
    end_file, end = server.master_status()

    await repl.start_dump(gtid_set=before, blocking=False)
    events = await read_all(repl)
    gtids = [gtid_text(e) for e in events if e[4] == gtid_type(server)]
    assert gtids == next_gtids(last, 5)
    headers = [header(e) for e in events]
    assert [h["type"] for h in headers].count(write_rows_type(server)) == 5
    assert all(crc_ok(e) for e in events)
    # the stream runs to the very end of the binlog: the last XID ends at the current end position
    assert headers[-1]["type"] == XID
    assert headers[-1]["log_pos"] == end
    rotate = next(e for e in events if e[4] == ROTATE)
    assert rotate[27:-4].decode() == end_file


@pytest.mark.servers("mariadb")  # ANNOTATE_ROWS and the dump flag that asks for them are MariaDB's
async def test_annotate_rows_on_request(server: MariaDBServer, db: str, repl: BinlogConnection) -> None:
    server.execute(f"CREATE TABLE `{db}`.a (id INT PRIMARY KEY)")
    file, start, _ = await repl.current_position()
    server.execute(f"INSERT INTO `{db}`.a VALUES (7)")
    await repl.start_dump(file=file, position=start, blocking=False, annotate_rows=True)
    annotated = [e for e in await read_all(repl) if e[4] == ANNOTATE_ROWS]
    assert len(annotated) == 1
    assert f"INSERT INTO `{db}`.a VALUES (7)".encode() in annotated[0]
    # without the flag MariaDB leaves them out
    async with await BinlogConnection.connect(DSN.parse(server.repl_dsn)) as conn:
        await conn.start_dump(file=file, position=start, blocking=False)
        assert ANNOTATE_ROWS not in [e[4] for e in await read_all(conn)]


@pytest.mark.servers("mysql")
async def test_rows_query_events_stream_whenever_logged(server: MariaDBServer, db: str) -> None:
    # MySQL logs the statement before its rows (ROWS_QUERY) when binlog_rows_query_log_events is on (a session
    # variable) and streams it without being asked; annotate_rows (MariaDB's flag) changes nothing there
    server.execute(f"CREATE TABLE `{db}`.a (id INT PRIMARY KEY)")
    dsn = DSN.parse(server.repl_dsn)
    async with await BinlogConnection.connect(dsn) as conn:
        file, start, _ = await conn.current_position()
    writer = server.connect()
    try:
        with writer.cursor() as cur:
            cur.execute("SET SESSION binlog_rows_query_log_events = ON")
            cur.execute(f"INSERT INTO `{db}`.a VALUES (7)")
            cur.execute("SET SESSION binlog_rows_query_log_events = OFF")
            cur.execute(f"INSERT INTO `{db}`.a VALUES (8)")
    finally:
        writer.close()
    for annotate in (False, True):
        async with await BinlogConnection.connect(dsn) as conn:
            await conn.start_dump(file=file, position=start, blocking=False, annotate_rows=annotate)
            events = await read_all(conn)
        queries = [e for e in events if e[4] == ROWS_QUERY]
        assert len(queries) == 1
        assert f"INSERT INTO `{db}`.a VALUES (7)".encode() in queries[0]
        assert [e[4] for e in events].count(WRITE_ROWS_V2) == 2


async def test_gtid_dump_accepts_a_gtid_set_object(server: MariaDBServer, db: str) -> None:
    server.execute(f"CREATE TABLE `{db}`.o (id INT PRIMARY KEY)")
    gtid_set_class = MariaDBGtidSet if server.flavor == "mariadb" else MySQLGtidSet
    before = gtid_set_class.parse(server.gtid_position())
    server.execute(f"INSERT INTO `{db}`.o VALUES (1)")
    after = last_gtid(server)
    async with await BinlogConnection.connect(DSN.parse(server.repl_dsn)) as conn:
        await conn.start_dump(gtid_set=before, blocking=False)
        events = await read_all(conn)
    assert [gtid_text(e) for e in events if e[4] == gtid_type(server)] == [after]


async def test_blocking_dump_delivers_later_writes(server: MariaDBServer, db: str, repl: BinlogConnection) -> None:
    server.execute(f"CREATE TABLE `{db}`.b (id INT PRIMARY KEY)")
    file, position, _ = await repl.current_position()
    await repl.start_dump(file=file, position=position, blocking=True)
    first = await repl.read_event()
    assert first is not None
    assert first[4] == ROTATE
    # written after the dump started: the server pushes it to us
    server.execute(f"INSERT INTO `{db}`.b VALUES (42)")
    events = await read_until(repl, lambda e: e[4] == XID)
    assert [e[4] for e in events].count(write_rows_type(server)) == 1
    assert repl.streaming


async def test_cancelled_read_loses_no_event(server: MariaDBServer, db: str, repl: BinlogConnection) -> None:
    server.execute(f"CREATE TABLE `{db}`.c (id INT PRIMARY KEY)")
    file, position, _ = await repl.current_position()
    await repl.start_dump(file=file, position=position, blocking=True)
    # drain what the server sends at the start, until a read has to wait
    assert await drain_until_idle(repl, 0.3) >= 2  # at least the fake ROTATE and FORMAT_DESCRIPTION
    server.execute(f"INSERT INTO `{db}`.c VALUES (1)")
    events = await read_until(repl, lambda e: e[4] == XID)
    types = [e[4] for e in events]
    assert gtid_type(server) in types
    assert types.count(write_rows_type(server)) == 1
    assert all(crc_ok(e) for e in events)


async def test_no_queries_while_streaming(repl: BinlogConnection) -> None:
    await repl.start_dump(blocking=True)
    with pytest.raises(ConfigurationError, match="streaming"):
        await repl.current_position()
    with pytest.raises(ConfigurationError, match="streaming"):
        await repl.start_dump(blocking=True)


async def test_stream_query_reads_in_batches_and_translates_errors(server: MariaDBServer, db: str) -> None:
    server.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(10))")
    server.execute(f"INSERT INTO {db}.t VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, 2501)))
    async with await BinlogConnection.connect(DSN.parse(server.admin_dsn), heartbeat_period=0) as conn:
        batches = [b async for b in conn.stream_query(f"SELECT id, v FROM {db}.t ORDER BY id", batch_rows=1000)]
        assert [len(b) for b in batches] == [1000, 1000, 500]
        assert [r for b in batches for r in b] == [(i, f"v{i}") for i in range(1, 2501)]
        # closed early: the rest of the result is read, and the connection serves the next query
        rows = conn.stream_query(f"SELECT id FROM {db}.t WHERE id > %s ORDER BY id", (2000,), batch_rows=10)
        first = await anext(rows)
        assert first == [(i,) for i in range(2001, 2011)]
        await rows.aclose()
        assert await conn.query("SELECT 1") == [(1,)]
        with pytest.raises(SourceError) as info:
            async for _ in conn.stream_query(f"SELECT nope FROM {db}.t"):
                pass
        assert info.value.errno == 1054
        assert DSN.parse(server.admin_dsn).password not in str(info.value)
        await conn.start_dump(blocking=False)
        with pytest.raises(ConfigurationError, match="streaming"):
            await anext(conn.stream_query("SELECT 1"))


async def test_read_before_start_dump_is_an_error(repl: BinlogConnection) -> None:
    with pytest.raises(ConfigurationError, match="start_dump"):
        await repl.read_event()


async def test_invalid_start_arguments(server: MariaDBServer, repl: BinlogConnection) -> None:
    valid = "0-1-1" if server.flavor == "mariadb" else f"{server.server_uuid}:1"
    with pytest.raises(ConfigurationError, match="not both"):
        await repl.start_dump(file="binlog.000001", gtid_set=valid)
    with pytest.raises(ConfigurationError, match="position"):
        await repl.start_dump(file="binlog.000001", position=1)
    kind = "MariaDB GTID position" if server.flavor == "mariadb" else "MySQL GTID set"
    with pytest.raises(ConfigurationError, match=kind):
        await repl.start_dump(gtid_set=f"{valid}'; DROP TABLE x; --")
    # the other flavour's GTID text names the server's own form
    other = f"{uuid.uuid4()}:1-5" if server.flavor == "mariadb" else "0-1-1"
    with pytest.raises(ConfigurationError, match=kind):
        await repl.start_dump(gtid_set=other)
    # the connection is still usable after rejected arguments
    assert (await repl.current_position())[0].startswith("binlog.")


async def test_heartbeats_arrive_when_idle(server: MariaDBServer) -> None:
    async with await BinlogConnection.connect(DSN.parse(server.repl_dsn), heartbeat_period=0.1) as conn:
        file, position, _ = await conn.current_position()
        await conn.start_dump(file=file, position=position, blocking=True)
        heartbeats: list[bytes] = []
        async with asyncio.timeout(DEADLINE):
            while len(heartbeats) < 3:
                event = await conn.read_event()
                assert event is not None
                if event[4] == HEARTBEAT:
                    heartbeats.append(event)
    for event in heartbeats:
        h = header(event)
        assert h["size"] == len(event)
        assert h["log_pos"] >= position
        assert file.encode() in event[19:]


# -- purged binlogs -------------------------------------------------------------------------------------------


async def test_purged_binlog_is_binlog_purged_error(fresh_server: MariaDBServer) -> None:
    server = fresh_server
    server.execute("CREATE DATABASE p")
    server.execute("CREATE TABLE p.t (id INT PRIMARY KEY)")
    server.execute("INSERT INTO p.t VALUES (1)")
    first_file = server.master_status()[0]
    server.flush_binary_logs()
    server.execute("INSERT INTO p.t VALUES (2)")
    newest = server.flush_binary_logs()
    # MariaDB keeps a file until InnoDB's binlog checkpoint has moved past it (asynchronously): poll.
    async with asyncio.timeout(DEADLINE):
        while True:
            server.execute(f"PURGE BINARY LOGS TO '{newest}'")
            if [name for name, _ in server.binlog_files()] == [newest]:
                break
            await asyncio.sleep(0.05)
    dsn = DSN.parse(server.repl_dsn)

    async with await BinlogConnection.connect(dsn) as conn:
        with pytest.raises(BinlogPurgedError) as info:
            await conn.start_dump(file=first_file, position=4, blocking=False)
    assert info.value.errno == 1236
    assert "purged" in str(info.value)
    assert "take a new snapshot" in str(info.value)
    assert server.repl_password not in str(info.value)

    # the first transaction only: the transactions after it were in the purged files
    first_gtid = "0-1-1" if server.flavor == "mariadb" else f"{server.server_uuid}:1"
    async with await BinlogConnection.connect(dsn) as conn:
        with pytest.raises(BinlogPurgedError, match="start from a newer position"):
            await conn.start_dump(gtid_set=first_gtid, blocking=False)

    # the newest file is still there and can be read
    async with await BinlogConnection.connect(dsn) as conn:
        await conn.start_dump(file=newest, position=4, blocking=False)
        events = await read_all(conn)
        assert events[1][4] == FORMAT_DESCRIPTION


# -- losing the server ------------------------------------------------------------------------------------------


async def test_server_shutdown_hang_and_kill_mid_stream_are_connection_errors(fresh_server: MariaDBServer) -> None:
    server = fresh_server
    dsn = DSN.parse(server.repl_dsn)

    # clean shutdown: MariaDB ends the dump (an error packet or a closed socket)
    conn = await BinlogConnection.connect(dsn, heartbeat_period=1.0)
    await conn.start_dump(blocking=True)
    assert await conn.read_event() is not None
    server.stop()
    with pytest.raises(SourceConnectionError) as info:
        await read_forever(conn)
    assert info.value.retriable
    with pytest.raises(SourceConnectionError):
        await conn.read_event()
    await conn.close()

    # a hung server (SIGSTOP): no bytes, no heartbeats; idle_timeout declares the connection dead
    server.start()
    conn = await BinlogConnection.connect(dsn, heartbeat_period=0.1, idle_timeout=1.0)
    await conn.start_dump(blocking=True)
    await read_until(conn, lambda e: e[4] == HEARTBEAT)
    pid = server.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(SourceConnectionError, match=r"no data from the server for 1 s") as info:
            await read_forever(conn)
        assert info.value.retriable
        # a hung server also cannot hang connect(): the kernel accepts, nobody answers
        hung = DSN.parse(server.repl_dsn + "?connect_timeout=1")
        with pytest.raises(SourceConnectionError, match="connect_timeout=1 s") as info:
            async with asyncio.timeout(DEADLINE):
                await BinlogConnection.connect(hung)
        assert info.value.retriable
    finally:
        os.kill(pid, signal.SIGCONT)
    await conn.close()

    # crash: SIGKILL closes the socket without a word
    conn = await BinlogConnection.connect(dsn, heartbeat_period=1.0)
    await conn.start_dump(blocking=True)
    assert await conn.read_event() is not None
    server.kill()
    with pytest.raises(SourceConnectionError) as info:
        await read_forever(conn)
    assert info.value.retriable
    assert server.repl_password not in str(info.value)
    await conn.close()
    await conn.close()  # idempotent


# -- TLS ------------------------------------------------------------------------------------------------------


@pytest.fixture
def tls_server(
    server_factory: Callable[..., MariaDBServer], server_kind: str, tmp_path: Path
) -> Iterator[tuple[MariaDBServer, Path]]:
    directory, inside = server_readable_dir(server_kind, tmp_path)
    try:
        cert, key = make_certificate(directory)
        server = server_factory(ssl_cert=inside(cert), ssl_key=inside(key))
        yield server, cert
    finally:
        if directory != tmp_path:
            shutil.rmtree(directory, ignore_errors=True)


async def test_tls_connection_and_dump(tls_server: tuple[MariaDBServer, Path]) -> None:
    server, cert = tls_server
    server.execute("CREATE DATABASE s")
    server.execute("CREATE TABLE s.t (id INT PRIMARY KEY, v LONGTEXT)")
    server.execute("INSERT INTO s.t VALUES (1, REPEAT('x', 300000))")
    base = f"mysql://repl:{server.repl_password}@127.0.0.1:{server.port}"
    for query in ("ssl=true", f"ssl=verify_identity&ssl_ca={cert}"):
        async with await BinlogConnection.connect(DSN.parse(f"{base}?{query}")) as conn:
            rows: Any = await conn.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert rows[0][1], "the session is not encrypted"
            await conn.start_dump(blocking=False)
            events = await read_all(conn)
            big = [e for e in events if e[4] == write_rows_type(server)]
            assert len(big) == 1
            assert len(big[0]) > 300000
            assert all(crc_ok(e) for e in events)


@pytest.mark.parametrize("ssl", ["false", "true"])
async def test_flow_control_bounds_the_receive_buffer(tls_server: tuple[MariaDBServer, Path], ssl: str) -> None:
    server, _cert = tls_server
    server.execute("CREATE DATABASE f")
    server.execute("CREATE TABLE f.t (id INT PRIMARY KEY AUTO_INCREMENT, v MEDIUMTEXT)")
    for _ in range(40):
        server.execute("INSERT INTO f.t (v) VALUES (REPEAT('y', 1000000))")
    async with await BinlogConnection.connect(DSN.parse(f"{server.repl_dsn}?ssl={ssl}")) as conn:
        await conn.start_dump(blocking=False)
        # nobody reads: the transport must stop reading the socket instead of buffering 40 MB
        async with asyncio.timeout(DEADLINE):
            while True:
                stats = conn.statistics()
                if stats.reading_paused:
                    break
                await asyncio.sleep(0.01)
        # over the 8 MiB mark by at most what the last socket reads brought, far from the 40 MB backlog
        assert 8 * 1024 * 1024 < stats.buffered_bytes < 28 * 1024 * 1024
        events = await read_all(conn)
        assert not conn.statistics().reading_paused
    rows = [e for e in events if e[4] == write_rows_type(server)]
    assert len(rows) == 40
    assert all(crc_ok(e) for e in rows)


async def test_tls_to_a_server_without_tls_is_a_precondition_error(
    server_factory: Callable[..., MariaDBServer], server_kind: str
) -> None:
    # MariaDB has no TLS unless given a certificate; MySQL has TLS by default: tls_version='' turns it off (as a
    # certificate mysqld cannot read does: it logs "Failed to set up SSL" and starts without TLS)
    server = server_factory(**({"tls_version": ""} if server_kind == "mysql" else {}))
    with pytest.raises(PreconditionError) as info:
        await BinlogConnection.connect(DSN.parse(f"{server.repl_dsn}?ssl=true"))
    message = str(info.value)
    assert "does not offer TLS" in message
    assert "ssl=false" in message
    assert info.value.retriable is False
    assert server.repl_password not in message
    # the server itself is fine without TLS
    async with await BinlogConnection.connect(DSN.parse(f"{server.repl_dsn}?ssl=false")) as conn:
        assert conn.info.flavor == server_kind


@pytest.mark.servers("mysql")
async def test_mysql_default_tls_and_require_secure_transport(server_factory: Callable[..., MariaDBServer]) -> None:
    # MySQL has TLS on by default, with certificates it generates at the first start; require_secure_transport=ON
    # refuses plain connections: a clear error that is not retried, and ssl=true works
    server = server_factory(require_secure_transport="ON")
    with pytest.raises(SourceError) as info:
        await BinlogConnection.connect(DSN.parse(f"{server.repl_dsn}?ssl=false"))
    assert info.value.errno == 3159
    assert "require_secure_transport" in str(info.value)
    assert info.value.retriable is False
    assert server.repl_password not in str(info.value)
    server.execute("CREATE DATABASE s")
    server.execute("CREATE TABLE s.t (id INT PRIMARY KEY)")
    server.execute("INSERT INTO s.t VALUES (1)")
    async with await BinlogConnection.connect(DSN.parse(f"{server.repl_dsn}?ssl=true")) as conn:
        rows: Any = await conn.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        assert rows[0][1], "the session is not encrypted"
        await conn.start_dump(blocking=False)
        events = await read_all(conn)
    assert [e[4] for e in events].count(WRITE_ROWS_V2) == 1
    assert all(crc_ok(e) for e in events)


class RecordingProxy:
    """A TCP relay in front of a server that keeps every byte each side sent (to see the authentication)."""

    def __init__(self, port: int) -> None:
        self.target_port = port
        self.from_client = bytearray()
        self.from_server = bytearray()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def __aenter__(self) -> RecordingProxy:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: bytearray) -> None:
            try:
                while data := await reader.read(65536):
                    record.extend(data)
                    writer.write(data)
                    await writer.drain()
            finally:
                writer.close()

        tasks = [
            asyncio.ensure_future(pump(client_r, server_w, self.from_client)),
            asyncio.ensure_future(pump(server_r, client_w, self.from_server)),
        ]
        self._tasks.update(tasks)
        await asyncio.gather(*tasks, return_exceptions=True)


# caching_sha2_password's answers after the client's scramble (a packet whose payload is 0x01 then the state)
FAST_AUTH_SUCCESS = b"\x02\x00\x00\x02\x01\x03"
PERFORM_FULL_AUTHENTICATION = b"\x02\x00\x00\x02\x01\x04"


@pytest.mark.servers("mysql")
@pytest.mark.parametrize("ssl", ["false", "true"])
async def test_caching_sha2_full_and_fast_authentication(server: MariaDBServer, db: str, ssl: str) -> None:
    # A user whose password the server has not cached (new, or after FLUSH PRIVILEGES) goes through the full
    # authentication: over plain TCP the password is sent encrypted with the server's RSA public key (which the
    # client asks for), over TLS in clear inside the encrypted channel. Later logins take the fast path.
    user, password = f"fresh_sha2_{ssl}", f"Fr3sh-{ssl}-Pw"
    server.execute(f"DROP USER IF EXISTS '{user}'@'%'")
    server.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED WITH caching_sha2_password BY %s", (password,))
    server.execute(f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%'")
    server.execute(f"CREATE TABLE `{db}`.r (id INT PRIMARY KEY)")
    try:
        for index, attempt in enumerate(("full", "fast", "full again")):
            if attempt == "full again":
                server.execute("FLUSH PRIVILEGES")  # empties the cache of verified passwords
            async with RecordingProxy(server.port) as proxy:
                dsn = DSN(host="127.0.0.1", port=proxy.port, user=user, password=password, ssl=_SSL_MODES[ssl])
                async with await BinlogConnection.connect(dsn) as conn:
                    rows: Any = await conn.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                    assert bool(rows[0][1]) is (ssl == "true"), rows
                    assert rows == await conn.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                    file, start, _ = await conn.current_position()
                    server.execute(f"INSERT INTO `{db}`.r VALUES (%s)", (index,))
                    await conn.start_dump(file=file, position=start, blocking=False)
                    events = await read_all(conn)
                    assert [e[4] for e in events].count(WRITE_ROWS_V2) == 1
                    assert all(crc_ok(e) for e in events)
            # the password never crosses the wire in clear text
            assert password.encode() not in proxy.from_client
            if ssl == "false":
                # the server's answer to the scramble says which path was taken; the RSA key came on the full one
                if attempt == "fast":
                    assert FAST_AUTH_SUCCESS in proxy.from_server
                    assert b"-----BEGIN PUBLIC KEY-----" not in proxy.from_server
                else:
                    assert PERFORM_FULL_AUTHENTICATION in proxy.from_server
                    assert b"-----BEGIN PUBLIC KEY-----" in proxy.from_server
        # a wrong password on the full path is an authentication error that does not show the password
        server.execute("FLUSH PRIVILEGES")
        wrong = DSN(host="127.0.0.1", port=server.port, user=user, password="Wr0ng-sha2-Pw", ssl=_SSL_MODES[ssl])
        with pytest.raises(AuthenticationError) as info:
            await BinlogConnection.connect(wrong)
        assert info.value.errno == 1045
        assert "Wr0ng-sha2-Pw" not in str(info.value)
    finally:
        server.execute(f"DROP USER IF EXISTS '{user}'@'%'")


_SSL_MODES: dict[str, Any] = {"false": "disabled", "true": "required"}


# -- wire formats and error mapping (pure functions; no server needed) ------------------------------------------


def test_com_binlog_dump_bytes() -> None:
    # MariaDB GTID mode: empty file name, position 4 -> exactly 11 bytes (one more breaks the end of the stream)
    payload = encode_binlog_dump(file="", position=4, server_id=0x01020304, flags=BINLOG_DUMP_NON_BLOCK)
    assert payload == b"\x12\x04\x00\x00\x00\x01\x00\x04\x03\x02\x01"
    payload = encode_binlog_dump(file="binlog.000034", position=0x0634, server_id=10101, flags=0)
    assert payload == b"\x12\x34\x06\x00\x00\x00\x00\x75\x27\x00\x00binlog.000034"


def test_com_binlog_dump_gtid_bytes() -> None:
    gtids = MySQLGtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
    data = gtids.encode()
    payload = encode_binlog_dump_gtid(file="", position=4, server_id=7, flags=BINLOG_THROUGH_GTID, gtid_data=data)
    assert payload[0] == 0x1E
    assert int.from_bytes(payload[1:3], "little") == BINLOG_THROUGH_GTID
    assert int.from_bytes(payload[3:7], "little") == 7
    assert int.from_bytes(payload[7:11], "little") == 0  # file name length
    assert int.from_bytes(payload[11:19], "little") == 4
    assert int.from_bytes(payload[19:23], "little") == len(data) == 8 + 16 + 8 + 16
    assert payload[23:] == data
    # the server reads the data length even without GTIDs
    empty = encode_binlog_dump_gtid(file="f.000001", position=1 << 33, server_id=1, flags=0, gtid_data=b"")
    assert empty[7:11] == b"\x08\x00\x00\x00"
    assert empty[11:19] == b"f.000001"
    assert int.from_bytes(empty[19:27], "little") == 1 << 33
    assert empty[27:] == b"\x00\x00\x00\x00"


def test_parse_error_packet() -> None:
    assert parse_error_packet(b"\xff\xd4\x04#HY000Could not find first log") == (
        1236,
        "HY000",
        "Could not find first log",
    )
    assert parse_error_packet(b"\xff\x15\x04no state") == (1045, None, "no state")


@pytest.mark.parametrize(
    ("errno", "message", "kind", "fragment"),
    [
        (1045, "Access denied for user 'repl'@'10.0.0.1' (using password: YES)", AuthenticationError, "password"),
        (1227, "Access denied; you need the REPLICATION SLAVE privilege", AuthenticationError, "GRANT"),
        (1142, "SELECT command denied", AuthenticationError, "GRANT"),
        (
            1236,
            "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too "
            "old and required binlog files have been purged.",
            BinlogPurgedError,
            "take a new snapshot",
        ),
        (1236, "Could not find first log file name in binary log index file", BinlogPurgedError, "newer position"),
        (
            1236,
            "Cannot replicate because the master purged required binary logs.",
            BinlogPurgedError,
            "purged",
        ),
        (1236, "Client requested master to start replication from position > file size", SourceError, "file size"),
        (4052, "A slave with the same server_uuid/server_id is already connected", SourceError, "unique server_id"),
        (2013, "Lost connection to MySQL server during query", SourceConnectionError, "Lost connection"),
        (1927, "Connection was killed", SourceConnectionError, "killed"),
        (1064, "You have an error in your SQL syntax", SourceError, "syntax"),
    ],
)
def test_translate_server_error(errno: int, message: str, kind: type[SourceError], fragment: str) -> None:
    dsn = DSN(host="db", port=3306, user="repl", password="Pw-not-Shown9")
    error = translate_server_error(dsn, errno, message, flavor="mariadb")
    assert type(error) is kind
    assert error.errno == errno
    assert fragment in str(error)
    assert "repl@db:3306" in str(error)
    assert "Pw-not-Shown9" not in str(error)
    assert error.retriable is (kind is SourceConnectionError)


@pytest.mark.parametrize(
    ("flavor", "grants", "missing"),
    [
        ("mariadb", ["GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `repl`@`%` IDENTIFIED BY PASSWORD '*AB'"], []),
        ("mariadb", ["GRANT ALL PRIVILEGES ON *.* TO `root`@`127.0.0.1` WITH GRANT OPTION"], []),
        ("mariadb", ["GRANT BINLOG MONITOR ON *.* TO `u`@`%`"], ["REPLICATION SLAVE"]),
        (
            "mariadb",
            ["GRANT USAGE ON *.* TO `u`@`%`", "GRANT ALL PRIVILEGES ON `shop`.* TO `u`@`%`"],
            ["REPLICATION SLAVE", "BINLOG MONITOR"],
        ),
        ("mysql", ["GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `repl`@`%`"], []),
        ("mysql", ["GRANT SELECT, REPLICATION SLAVE ON *.* TO `repl`@`%`"], ["REPLICATION CLIENT"]),
        ("mysql", ["GRANT USAGE ON *.* TO `u`@`%`", "GRANT `cdc_role`@`%` TO `u`@`%`"], None),
    ],
)
def test_missing_privileges(flavor: str, grants: list[str], missing: list[str] | None) -> None:
    assert missing_privileges(grants, flavor) == missing


def test_server_info_from_mysql_variables() -> None:
    info = _server_info(
        {
            "version": "8.4.3",
            "server_id": "7",
            "server_uuid": "3e11fa47-71ca-11e1-9e33-c80aa9429562",
            "gtid_mode": "ON",
            "log_bin": "ON",
            "binlog_format": "ROW",
            "binlog_row_image": "FULL",
            "binlog_row_metadata": "MINIMAL",
            "binlog_checksum": "CRC32",
        }
    )
    assert info.flavor == "mysql"
    assert info.version == (8, 4, 3)
    assert info.server_uuid == "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert info.gtid_mode is True
    assert info.binlog_row_metadata == "MINIMAL"
    old = _server_info({"version": "5.7.44-log", "gtid_mode": "OFF_PERMISSIVE", "log_bin": "1"})
    assert (old.version, old.gtid_mode, old.log_bin, old.binlog_row_metadata) == ((5, 7, 44), False, True, None)
    assert old.binlog_checksum == "NONE"
