"""A clean shutdown of the source is an outage like any other for ``mybinlog replicate``: it reconnects (the binlog
connection and the replica lock's connection) for up to ``--source-retry-seconds``, goes on when the server is back,
and exits 75 only when the budget is spent.

MySQL's dump thread answers a clean shutdown with an EOF packet (MariaDB with error 1053), and the lock's connection
gets "Server shutdown in progress" (1053) to its next query: before, ``replicate`` took that EOF for the end of the
stream and exited 0 within seconds, which leaves replication stopped under a supervisor with Restart=on-failure.
Both flavours, each a private server that is stopped with ``server.stop()`` (SIGTERM, a clean shutdown).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.compare import assert_replica_equal
from tests.faults import STREAMING, ReplicateProcess, create_tables, source_dsn, write
from tests.servers import MariaDBServer

pytestmark = pytest.mark.integration

DB = "shop"
_CHECKPOINT = re.compile(r"checkpoint at (\S+):(\d+) ")
_RECONNECTING = "reconnecting in"  # the stream's warning for each reconnect attempt (mybinlog.stream)


def _run(server: MariaDBServer, target: str, *extra: str) -> ReplicateProcess:
    return ReplicateProcess(source_dsn(server), server.repl_password, target, DB, *extra)


def _wait_caught_up(rep: ReplicateProcess, server: MariaDBServer, *, start: int = 0) -> None:
    """Until a checkpoint logged from line ``start`` on is at or past the server's current binlog end."""
    goal = server.master_status()

    def covers(line: str) -> bool:
        m = _CHECKPOINT.search(line)
        return m is not None and (m.group(1), int(m.group(2))) >= goal

    rep.wait_for(covers, start=start)


async def test_replicate_outlives_a_clean_shutdown_of_the_source(fresh_server: MariaDBServer, tmp_path: Path) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url = f"chdb://{tmp_path / 'ch'}"
    with _run(server, url, "--source-retry-seconds", "300", "--lease-seconds", "5") as rep:
        rep.wait_for(STREAMING)
        write(server, DB, 1, 3)
        _wait_caught_up(rep, server)
        mark = len(rep.lines)
        server.stop()  # SIGTERM: a clean shutdown
        # the binlog connection reconnects (before the fix: the stream ended and replicate exited 0)
        rep.wait_for(_RECONNECTING, start=mark)
        assert rep.proc.poll() is None, rep.tail()
        server.start()
        mark = len(rep.lines)
        write(server, DB, 10, 5)
        _wait_caught_up(rep, server, start=mark)  # it goes on: the writes after the restart reach the replica
        assert rep.stop() == 0, rep.tail()
    await assert_replica_equal(server, DB, url)


async def test_a_clean_shutdown_longer_than_the_budget_exits_75(fresh_server: MariaDBServer, tmp_path: Path) -> None:
    server = fresh_server
    server.create_database(DB)
    create_tables(server, DB, filler=100)
    url = f"chdb://{tmp_path / 'ch'}"
    with _run(server, url, "--source-retry-seconds", "3") as rep:
        rep.wait_for(STREAMING)
        write(server, DB, 1, 3)
        _wait_caught_up(rep, server)
        server.stop()
        assert rep.wait_exit() == 75, rep.tail()  # before the fix: 0 (MySQL)
    assert "resume later from" in rep.log or "run again" in rep.log, rep.tail()
    server.start()
    write(server, DB, 10, 3)
    with _run(server, url, "--once") as rep:
        assert rep.wait_exit() == 0, rep.tail()
    await assert_replica_equal(server, DB, url)
