"""Source failover with real primary/replica pairs (issue: several source hosts).

A primary and a GTID replica of it (the servers' own replication); a BinlogStream whose DSN names both. The primary
is killed and the replica promoted as an orchestrator would; the stream must follow without a skip or a repeat, and
refuse a server it cannot follow safely.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mybinlog import BinlogStream, PreconditionError, SourceHistoryError, TransactionInterruptedError
from mybinlog.source._connection import BinlogConnection
from mybinlog.testing import MariaDBServer
from tests.failover import inserted_ids

pytestmark = pytest.mark.asyncio

DB = "failover"


def _pair(server_factory: Callable[..., MariaDBServer], server_kind: str) -> tuple[MariaDBServer, MariaDBServer]:
    options: dict[str, Any] = {"log_slave_updates": True} if server_kind == "mariadb" else {}
    primary = server_factory(server_id=1, **options)
    replica = server_factory(server_id=2, **options)
    primary.create_database(DB)
    primary.execute(f"CREATE TABLE `{DB}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    replica.follow(primary)
    return primary, replica


def _dsn(*servers: MariaDBServer) -> str:
    first = servers[0]
    hosts = ",".join(f"{s.host}:{s.port}" for s in servers)
    return f"mysql://{first.repl_user}:{first.repl_password}@{hosts}"


async def test_a_stream_follows_a_promoted_replica_without_skip_or_repeat(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    primary, replica = _pair(server_factory, server_kind)
    async with BinlogStream(_dsn(primary, replica), heartbeat_period=1, max_reconnect_seconds=60) as stream:
        assert stream.source == f"{primary.host}:{primary.port}"
        for i in range(1, 51):
            primary.execute(f"INSERT INTO `{DB}`.t VALUES ({i}, 'primary')")
        first = await inserted_ids(stream, 20)
        replica.wait_for_gtids(primary.gtid_position())
        primary.kill()
        replica.promote()
        for i in range(51, 101):
            replica.execute(f"INSERT INTO `{DB}`.t VALUES ({i}, 'replica')")
        rest = await inserted_ids(stream, 100 - len(first))
        assert first + rest == list(range(1, 101))
        assert stream.failovers == 1
        assert stream.source == f"{replica.host}:{replica.port}"
        assert stream.last_failover is not None
        assert "server_id 2" in stream.last_failover
        assert stream.position.server_id == 2
        # the old primary comes back: the other connections of the process (queries, the replica lock) still go
        # first to the server the stream reads
        primary.start()
        conn = await BinlogConnection.connect(stream.dsn, heartbeat_period=0)
        try:
            assert conn.info.server_id == 2
        finally:
            await conn.close()


async def test_a_replica_with_an_errant_transaction_is_refused(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    primary, replica = _pair(server_factory, server_kind)
    async with BinlogStream(_dsn(primary, replica), heartbeat_period=1, max_reconnect_seconds=30) as stream:
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (1, 'primary')")
        await inserted_ids(stream, 1)
        # written on the replica itself (MariaDB: in a domain of its own, else the replica's strict mode stops the
        # replication of the primary's next transaction in domain 0: that case is a unit test of the check)
        domain = "SET SESSION gtid_domain_id = 7; " if server_kind == "mariadb" else ""
        with replica.connect() as conn, conn.cursor() as cur:
            if domain:
                cur.execute(domain)
            cur.execute(f"INSERT INTO `{DB}`.t VALUES (1000, 'errant')")
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (2, 'primary')")  # replicated after it
        replica.wait_for_gtids(primary.gtid_position())
        await inserted_ids(stream, 1)
        primary.kill()
        replica.promote()
        with pytest.raises(SourceHistoryError, match="errant transaction") as info:
            await inserted_ids(stream, 1)
    assert "server_id 2" in str(info.value)


async def test_a_server_that_does_not_log_what_it_replicates_is_refused(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    """Its binlog lacks the replicated transactions (MySQL still counts them executed): reading it would skip them."""
    primary = server_factory(server_id=1)
    off = {"log_slave_updates": 0} if server_kind == "mariadb" else {"log_replica_updates": 0}
    replica = server_factory(server_id=2, **off)
    primary.create_database(DB)
    primary.execute(f"CREATE TABLE `{DB}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    replica.follow(primary)
    async with BinlogStream(_dsn(primary, replica), heartbeat_period=1, max_reconnect_seconds=30) as stream:
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (1, 'primary')")
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (2, 'primary')")
        assert await inserted_ids(stream, 2) == [1, 2]
        replica.wait_for_gtids(primary.gtid_position())
        primary.kill()
        with pytest.raises(PreconditionError, match=r"(replica|slave)_updates=OFF"):
            await inserted_ids(stream, 1)


async def test_a_refused_server_is_skipped_for_a_good_one_further_down_the_list(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    """primary, a replica with an errant transaction, a clean replica: after the primary dies the stream refuses
    the second (logged) and reads on from the third, exactly once."""
    primary, errant = _pair(server_factory, server_kind)
    options: dict[str, Any] = {"log_slave_updates": True} if server_kind == "mariadb" else {}
    good = server_factory(server_id=3, **options)
    good.follow(primary)
    async with BinlogStream(_dsn(primary, errant, good), heartbeat_period=1, max_reconnect_seconds=30) as stream:
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (1, 'primary')")
        assert await inserted_ids(stream, 1) == [1]
        with errant.connect() as conn, conn.cursor() as cur:
            if server_kind == "mariadb":
                cur.execute("SET SESSION gtid_domain_id = 7")
            cur.execute(f"INSERT INTO `{DB}`.t VALUES (1000, 'errant')")
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (2, 'primary')")
        assert await inserted_ids(stream, 1) == [2]
        errant.wait_for_gtids(primary.gtid_position())
        good.wait_for_gtids(primary.gtid_position())
        primary.kill()
        good.promote()
        good.execute(f"INSERT INTO `{DB}`.t VALUES (3, 'good')")
        assert await inserted_ids(stream, 1) == [3]
        assert stream.source == f"{good.host}:{good.port}"
        assert stream.failovers == 1


async def test_another_host_with_the_same_server_id_is_not_taken_for_the_same_server(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    """An unrelated server listed second whose server_id collides with the primary's, with more transactions than
    it: after the primary dies, the stream must not resume there by file and offset (nor, on MariaDB, by GTIDs
    whose numbers collide): SourceHistoryError."""
    primary = server_factory(server_id=1)
    other = server_factory(server_id=1)
    for server in (primary, other):
        server.create_database(DB)
        server.execute(f"CREATE TABLE `{DB}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
    for i in range(1, 30):
        other.execute(f"INSERT INTO `{DB}`.t VALUES ({i}, 'other')")
    async with BinlogStream(_dsn(primary, other), heartbeat_period=1, max_reconnect_seconds=30) as stream:
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (1, 'primary')")
        assert await inserted_ids(stream, 1) == [1]
        primary.kill()
        with pytest.raises(SourceHistoryError):
            await inserted_ids(stream, 1)
    assert stream.failovers == 0


async def test_a_failover_in_the_middle_of_a_transaction_says_so_and_goes_on_from_its_start(
    server_kind: str, server_factory: Callable[..., MariaDBServer]
) -> None:
    """The primary splits rows events at 1 KiB, the replica at 64 KiB: the same transaction is other events there.
    The stream is in the middle of a big transaction when the primary dies: it must raise TransactionInterruptedError
    (the part delivered is to be discarded), then deliver that transaction from its start and what follows, each
    once. (Counting delivered events off the new server's stream dropped later transactions.)"""
    options: dict[str, Any] = {"log_slave_updates": True} if server_kind == "mariadb" else {}
    primary = server_factory(server_id=1, binlog_row_event_max_size=1024, **options)
    replica = server_factory(server_id=2, binlog_row_event_max_size=65536, **options)
    primary.create_database(DB)
    primary.execute(f"CREATE TABLE `{DB}`.t (id INT PRIMARY KEY, v VARCHAR(200))")
    replica.follow(primary)
    rows = 60_000
    async with BinlogStream(_dsn(primary, replica), heartbeat_period=1, max_reconnect_seconds=30) as stream:
        primary.execute(f"INSERT INTO `{DB}`.t VALUES (0, 'start')")
        assert await inserted_ids(stream, 1) == [0]
        conn = primary.connect(database=DB, autocommit=False)
        try:
            with conn.cursor() as cur:
                for lo in range(1, rows + 1, 10_000):
                    values = ",".join(f"({i}, '{'x' * 150}')" for i in range(lo, lo + 10_000))
                    cur.execute(f"INSERT INTO t VALUES {values}")
            conn.commit()
        finally:
            conn.close()
        replica.wait_for_gtids(primary.gtid_position())
        partial = await inserted_ids(stream, 50)  # a part of the big transaction (the server is still sending it)
        assert partial[0] == 1
        assert len(partial) < rows
        primary.kill()
        replica.promote()
        replica.execute(f"INSERT INTO `{DB}`.t VALUES ({rows + 1}, 'end')")
        with pytest.raises(TransactionInterruptedError):
            await inserted_ids(stream, rows + 1)
        again = await inserted_ids(stream, rows + 1)
        assert again == list(range(1, rows + 2))
        assert stream.failovers == 1
