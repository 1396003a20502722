"""BinlogStream against a real MariaDB: reconnects after the dump thread is killed or the server restarts."""

from __future__ import annotations

import asyncio
from typing import Any

import pymysql
import pytest

from mybinlog import (
    AuthenticationError,
    BinlogStream,
    GtidEvent,
    MariadbGtidEvent,
    PreconditionError,
    RowsEvent,
    XidEvent,
)
from tests.proxy import TcpProxy
from tests.servers import MariaDBServer

DEADLINE = 60.0


def _write(server: MariaDBServer, db: str, start: int, count: int, rows_per_txn: int = 3) -> None:
    conn = pymysql.connect(**server.connect_kwargs("admin", db), autocommit=False)
    try:
        with conn.cursor() as cur:
            for t in range(start, start + count):
                for r in range(rows_per_txn):
                    cur.execute("INSERT INTO t (txn, r, payload) VALUES (%s, %s, %s)", (t, r, "x" * (r * 50)))
                conn.commit()
    finally:
        conn.close()


def _prepare(server: MariaDBServer, db: str) -> None:
    server.execute(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    server.execute(
        f"CREATE TABLE `{db}`.t (id INT AUTO_INCREMENT PRIMARY KEY, txn INT NOT NULL, r INT NOT NULL, "
        "payload TEXT)"
    )


def _kill_dump_threads(server: MariaDBServer) -> int:
    killed = 0
    for row in server.query("SHOW PROCESSLIST"):
        if str(row[4]).startswith("Binlog Dump"):
            server.execute(f"KILL {int(row[0])}")
            killed += 1
    return killed


async def _collect_until(stream: BinlogStream, target: str, seen: list[tuple[int, int]],
                         on_rows: Any = None) -> None:
    async def run() -> None:
        async for event in stream:
            if isinstance(event, RowsEvent):
                for row in event.rows:
                    seen.append((row[1], row[2]))
                if on_rows is not None:
                    await on_rows(len(seen))
            if str(stream.position.gtid_set) == target:
                return

    await asyncio.wait_for(run(), DEADLINE)


async def test_cut_connection_resumes_without_loss_or_repeat(fresh_server: MariaDBServer) -> None:
    """A proxy cuts the TCP connection in the middle of each phase; every row arrives exactly once."""
    server = fresh_server
    _prepare(server, "k")
    start = server.gtid_binlog_pos()
    seen: list[tuple[int, int]] = []
    cuts = 0

    async with TcpProxy(server.host, server.port) as proxy:
        dsn = server.repl_dsn.replace(f":{server.port}", f":{proxy.port}")

        async def cut_midway(n: int) -> None:
            nonlocal cuts
            if n == phase_start + 10:
                cuts += proxy.cut()

        async with BinlogStream(dsn, gtid_set=start, reconnect_backoff=(0.01, 0.2)) as stream:
            for phase in range(4):
                phase_start = len(seen)
                await asyncio.to_thread(_write, server, "k", phase * 15, 15)
                await _collect_until(stream, server.gtid_binlog_pos(), seen, cut_midway)
            # a cut is noticed when the stream next reads past what it had received: phases 1-3 at the latest
            assert stream.reconnects >= 3
        assert proxy.connections == stream.reconnects + 1
    assert cuts == 4
    assert seen == [(t, r) for t in range(60) for r in range(3)]  # every row exactly once, in order


async def test_killed_dump_thread_resumes_without_loss_or_repeat(fresh_server: MariaDBServer) -> None:
    """KILL of the server's dump thread (the server acts on it lazily, when the thread next wakes up)."""
    server = fresh_server
    _prepare(server, "q")
    start = server.gtid_binlog_pos()
    seen: list[tuple[int, int]] = []
    async with BinlogStream(server.repl_dsn, gtid_set=start, reconnect_backoff=(0.01, 0.2)) as stream:
        await asyncio.to_thread(_write, server, "q", 0, 10)
        await _collect_until(stream, server.gtid_binlog_pos(), seen)
        assert await asyncio.to_thread(_kill_dump_threads, server) == 1
        for phase in range(1, 4):
            await asyncio.to_thread(_write, server, "q", phase * 10, 10)
            await _collect_until(stream, server.gtid_binlog_pos(), seen)
        assert stream.reconnects >= 1
    assert seen == [(t, r) for t in range(40) for r in range(3)]


async def test_server_restart_mid_stream(fresh_server: MariaDBServer) -> None:
    server = fresh_server
    _prepare(server, "r")
    start = server.gtid_binlog_pos()
    await asyncio.to_thread(_write, server, "r", 0, 10)
    seen: list[tuple[int, int]] = []
    async with BinlogStream(server.repl_dsn, gtid_set=start, reconnect_backoff=(0.05, 0.5)) as stream:
        first_target = server.gtid_binlog_pos()
        await _collect_until(stream, first_target, seen)
        await asyncio.to_thread(server.restart)
        await asyncio.to_thread(_write, server, "r", 10, 10)
        target = server.gtid_binlog_pos()
        await _collect_until(stream, target, seen)
        assert stream.reconnects >= 1
    assert seen == [(t, r) for t in range(20) for r in range(3)]


async def test_position_resume_after_process_restart(server: MariaDBServer, db: str) -> None:
    """Persisting stream.position at a transaction and starting a new stream there loses and repeats nothing."""
    server.execute(f"CREATE TABLE `{db}`.t (id INT AUTO_INCREMENT PRIMARY KEY, txn INT, r INT, payload TEXT)")
    start = server.gtid_binlog_pos()
    await asyncio.to_thread(_write, server, db, 0, 12)
    saved = None
    first: list[int] = []
    async with BinlogStream(server.repl_dsn, gtid_set=start, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, RowsEvent) and event.schema == db:
                first.extend(row[1] for row in event.rows)
            if isinstance(event, XidEvent) and len(set(first)) == 5:
                saved = stream.position
                break
    assert saved is not None
    rest: list[int] = []
    async with BinlogStream(server.repl_dsn, gtid_set=saved.gtid_set, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, RowsEvent) and event.schema == db:
                rest.extend(row[1] for row in event.rows)
    assert sorted(set(first)) == [0, 1, 2, 3, 4]
    assert rest == [t for t in range(5, 12) for _ in range(3)]
    # the same in file/position mode
    rest_file: list[int] = []
    async with BinlogStream(server.repl_dsn, binlog_file=saved.file, position=saved.offset, blocking=False) as s2:
        async for event in s2:
            if isinstance(event, RowsEvent) and event.schema == db:
                rest_file.extend(row[1] for row in event.rows)
    assert rest_file == rest


async def test_gtid_events_and_positions_match_server(server: MariaDBServer, db: str) -> None:
    server.execute(f"CREATE TABLE `{db}`.t (id INT AUTO_INCREMENT PRIMARY KEY, txn INT, r INT, payload TEXT)")
    start = server.gtid_binlog_pos()
    await asyncio.to_thread(_write, server, db, 0, 4)
    end = server.gtid_binlog_pos()
    checked = 0
    async with BinlogStream(server.repl_dsn, gtid_set=start, blocking=False) as stream:
        async for event in stream:
            if isinstance(event, MariadbGtidEvent | GtidEvent):
                assert event.gtid not in stream.position.gtid_set  # type: ignore[operator]
            if isinstance(event, XidEvent):
                pos = stream.position
                assert pos.offset == event.log_pos
                if server.flavor == "mariadb":
                    server_gtid = server.query_value(f"SELECT BINLOG_GTID_POS('{pos.file}', {pos.offset})")
                    # MariaDB's position covers every domain; ours follows the transactions we saw since `start`
                    assert str(pos.gtid_set) == str(server_gtid)
                checked += 1
        # MySQL: the set after the last transaction is the server's gtid_executed
        assert str(stream.position.gtid_set) == end
    assert checked >= 4


async def test_wrong_password_and_statement_format(server: MariaDBServer, server_factory: Any) -> None:
    bad = server.repl_dsn.replace(server.repl_password, "not-the-password-xyz")
    with pytest.raises(AuthenticationError) as info:
        async with BinlogStream(bad):
            pass
    assert "not-the-password-xyz" not in str(info.value)
    assert "not-the-password-xyz" not in repr(info.value)
    statement = server_factory(binlog_format="STATEMENT")
    with pytest.raises(PreconditionError) as info2:
        async with BinlogStream(statement.repl_dsn):
            pass
    assert "binlog_format" in str(info2.value)
    assert "ROW" in str(info2.value)
