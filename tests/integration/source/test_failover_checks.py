"""What a stream checks before it reads on from another server (issue: source failover, deliverable 5).

Real primary/replica pairs (the servers' own GTID replication) and unrelated servers; a BinlogStream whose DSN names
several servers. A replica that lags behind the stream's position is waited for (and, if it never catches up, the
stream gives up naming the missing GTIDs); a server of another topology is refused at once; a half-open connection
(a proxy that stops forwarding without closing) is detected after ``idle_timeout`` and the next server read; without
GTIDs a move to another server is refused.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from mybinlog import BinlogStream, SourceConnectionError, SourceHistoryError
from mybinlog.testing import MariaDBServer
from tests.failover import inserted_ids
from tests.proxy import TcpProxy

pytestmark = pytest.mark.asyncio

DB = "failover_checks"  # every server here is private to its test


def _server(server_factory: Callable[..., MariaDBServer], kind: str, server_id: int, **options: Any) -> MariaDBServer:
    if kind == "mariadb":  # a MariaDB replica logs what it replicates only with log_slave_updates
        options.setdefault("log_slave_updates", True)
    server = server_factory(server_id=server_id, **options)
    server.create_database(DB)
    server.execute(f"CREATE TABLE `{DB}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    return server


def _pair(server_factory: Callable[..., MariaDBServer], kind: str) -> tuple[MariaDBServer, MariaDBServer]:
    """A primary (server_id 1) with the test table and a GTID replica of it (server_id 2) that has caught up."""
    primary = _server(server_factory, kind, 1)
    replica = server_factory(server_id=2, **({"log_slave_updates": True} if kind == "mariadb" else {}))
    replica.follow(primary)
    return primary, replica


def _dsn(*servers: MariaDBServer | tuple[str, int], options: str = "") -> str:
    """One DSN naming ``servers`` (a server or a (host, port) to reach one through), with the first server's
    replication account (the same on every test server)."""
    first = next(s for s in servers if isinstance(s, MariaDBServer))
    hosts = ",".join(f"{s.host}:{s.port}" if isinstance(s, MariaDBServer) else f"{s[0]}:{s[1]}" for s in servers)
    return f"mysql://{first.repl_user}:{first.repl_password}@{hosts}" + (f"?{options}" if options else "")


def _insert(server: MariaDBServer, ids: range, who: str) -> None:
    for i in ids:
        server.execute(f"INSERT INTO `{DB}`.t VALUES ({i}, '{who}')")


def _stop_receiving(replica: MariaDBServer) -> None:
    """Stop the replica's IO thread: what the primary writes from now on never reaches it (pause_replication stops
    only the SQL thread, and promote() applies the relay log, so such a replica still catches up)."""
    replica.execute("STOP SLAVE IO_THREAD" if replica.flavor == "mariadb" else "STOP REPLICA IO_THREAD")


def _last_number(gtid_position: str) -> int:
    """The last transaction number of a one-server position: ``0-1-7`` or ``uuid:1-7`` -> 7."""
    return int(re.split(r"[-:]", gtid_position.strip())[-1])


async def _until(condition: Callable[[], bool], what: str, limit_s: float = 60) -> None:
    try:
        async with asyncio.timeout(limit_s):
            while not condition():  # noqa: ASYNC110 - polling the captured log and a task
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"not within {limit_s:g} s: {what}") from None


def _says(message: str, *parts: str) -> None:
    """Assert that ``message`` contains every one of ``parts``."""
    missing = [part for part in parts if part not in message]
    assert not missing, f"{missing} not in: {message}"


# ------------------------------------------------------------------------------------------------------------
# a replica that lags behind the position


async def test_a_lagging_replica_is_waited_for_then_followed(
    server_kind: str, server_factory: Callable[..., MariaDBServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mybinlog")
    primary, replica = _pair(server_factory, server_kind)
    replica.pause_replication()  # receives the primary's transactions, applies none
    async with BinlogStream(
        _dsn(primary, replica),
        heartbeat_period=1,
        max_reconnect_seconds=120,
        max_reconnect_attempts=1000,
        reconnect_backoff=(0.1, 0.5),
    ) as stream:
        _insert(primary, range(1, 21), "primary")
        first = await inserted_ids(stream, 20)
        primary.kill()
        reader = asyncio.ensure_future(inserted_ids(stream, 20))
        try:
            # the stream tried the replica and found it behind its position: it must wait, not read it
            await _until(lambda: "lags behind" in caplog.text or reader.done(), "the replica is found lagging")
            await _until(lambda: caplog.text.count("lags behind") >= 2 or reader.done(), "a second lagging round")
            assert not reader.done(), reader.result() if not reader.exception() else reader.exception()
            assert stream.failovers == 0
            assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
            replica.resume_replication()
            replica.promote()
            _insert(replica, range(21, 41), "replica")
            rest = await reader
        finally:
            reader.cancel()
        assert first + rest == list(range(1, 41))  # every change once, in order
        assert stream.failovers == 1
        assert stream.source == f"{replica.host}:{replica.port}"
        assert stream.position.server_id == 2


async def test_a_replica_that_never_catches_up_ends_the_stream_naming_the_missing_gtids(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    primary, replica = _pair(server_factory, server_kind)
    had = _last_number(primary.gtid_position())
    _stop_receiving(replica)
    async with BinlogStream(
        _dsn(primary, replica),
        heartbeat_period=1,
        max_reconnect_seconds=5,
        max_reconnect_attempts=1000,
        reconnect_backoff=(0.1, 1.0),
    ) as stream:
        _insert(primary, range(1, 6), "primary")
        wrote = _last_number(primary.gtid_position())
        assert await inserted_ids(stream, 5) == [1, 2, 3, 4, 5]
        uuid = primary.server_uuid if server_kind == "mysql" else ""
        primary.kill()
        replica.promote()  # without the five transactions: they never reached it
        assert _last_number(replica.gtid_position()) == had
        with pytest.raises(SourceConnectionError) as info:
            await inserted_ids(stream, 1)
    message = str(info.value)
    _says(message, "for 5 s", "lags behind")
    if server_kind == "mysql":
        assert f"[{uuid}:{had + 1}-{wrote}]" in message, message
    else:
        assert f"0-1-{wrote} (it has 0-1-{had})" in message, message
    assert stream.failovers == 0


# ------------------------------------------------------------------------------------------------------------
# a server of another topology


async def _refused_as_other_topology(primary: MariaDBServer, other: MariaDBServer) -> str:
    """Read the primary's rows with (primary, other) as the DSN and kill the primary: the next read must raise
    SourceHistoryError naming both servers' GTID sets; its message."""
    async with BinlogStream(
        _dsn(primary, other), heartbeat_period=1, max_reconnect_seconds=120, max_reconnect_attempts=1000
    ) as stream:
        _insert(primary, range(1, 6), "primary")
        await inserted_ids(stream, 5)
        position, others = primary.gtid_position(), other.gtid_position()
        primary.kill()
        # refused at once, not retried until the budget is spent (that would end with a SourceConnectionError)
        with pytest.raises(SourceHistoryError) as info:
            async with asyncio.timeout(60):
                await inserted_ids(stream, 1)
        assert stream.failovers == 0
    message = str(info.value)
    assert "not a server of the same replication topology" in message, message
    _says(message, f"[{position}]", f"[{others}]")
    return message


async def test_a_server_of_another_topology_is_refused_at_once(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    primary = _server(server_factory, server_kind, 1)
    other = _server(server_factory, server_kind, 3)
    _insert(other, range(1, 31), "other")  # more transactions (MariaDB: a sequence number above the primary's)
    await _refused_as_other_topology(primary, other)


@pytest.mark.servers("mariadb")  # MySQL has no sequence numbers to compare: the case above covers it
async def test_a_mariadb_server_of_another_topology_below_the_position_is_refused(
    server_factory: Callable[..., MariaDBServer],
) -> None:
    primary = _server(server_factory, "mariadb", 1)
    other = _server(server_factory, "mariadb", 3)  # its two transactions: a sequence number below the primary's
    message = await _refused_as_other_topology(primary, other)
    _says(message, "[0-3-2]", "[0-1-7]")


# ------------------------------------------------------------------------------------------------------------
# a half-open connection


async def test_a_half_open_connection_is_detected_and_the_next_server_read(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    primary, replica = _pair(server_factory, server_kind)
    idle_timeout = 3.0
    async with (
        TcpProxy(primary.host, primary.port) as proxy,
        BinlogStream(
            # connect_timeout: a new connection through the blackholed proxy is never answered either
            _dsn(("127.0.0.1", proxy.port), replica, options="connect_timeout=2"),
            heartbeat_period=1,
            idle_timeout=idle_timeout,
            max_reconnect_seconds=60,
            max_reconnect_attempts=1000,
        ) as stream,
    ):
        assert stream.source == f"127.0.0.1:{proxy.port}"
        _insert(primary, range(1, 11), "primary")
        first = await inserted_ids(stream, 10)
        proxy.blackhole()  # the primary goes on (and its replica with it); the stream hears nothing more
        _insert(primary, range(11, 21), "primary")
        replica.wait_for_gtids(primary.gtid_position())
        async with asyncio.timeout(60):
            rest = await inserted_ids(stream, 10)
        moved = time.monotonic()
        assert first + rest == list(range(1, 21))
        assert stream.failovers == 1
        assert stream.source == f"{replica.host}:{replica.port}"
        _says(stream.last_failover or "", "no data from the server")
        # not before idle_timeout of silence (since the last bytes the proxy forwarded)
        assert moved - proxy.forwarded_at >= idle_timeout
    # private servers, thrown away: a clean shutdown of this MySQL pair takes about 10 s each
    primary.kill()
    replica.kill()


# ------------------------------------------------------------------------------------------------------------
# no GTIDs


@pytest.mark.servers("mysql")  # MariaDB always logs GTIDs
async def test_without_gtids_a_move_to_another_server_is_refused(
    server_factory: Callable[..., MariaDBServer],
) -> None:
    no_gtids = {"gtid_mode": "OFF", "enforce_gtid_consistency": "OFF"}
    primary = _server(server_factory, "mysql", 1, **no_gtids)
    # only the refusal matters: a second server without GTIDs (a file and an offset mean nothing on any other)
    other = _server(server_factory, "mysql", 2, **no_gtids)
    file, offset = primary.master_status()
    async with BinlogStream(
        _dsn(primary, other),
        binlog_file=file,
        position=offset,
        heartbeat_period=1,
        max_reconnect_seconds=120,
        max_reconnect_attempts=1000,
    ) as stream:
        _insert(primary, range(1, 6), "primary")
        assert await inserted_ids(stream, 5) == [1, 2, 3, 4, 5]
        primary.kill()
        with pytest.raises(SourceHistoryError) as info:
            async with asyncio.timeout(60):
                await inserted_ids(stream, 1)
        assert stream.failovers == 0
    message = str(info.value)
    _says(message, "Turn on GTIDs", "server_id 2")
